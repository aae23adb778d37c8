"""acceptgate serve [--port N] [--warehouse PATH] [--backend NAME] [--limit N] [--gate-source SRC
                 (--gate-suites DIR | --gate-humanevalplus FILE)] [--gate-base-url URL --gate-model NAME]
                 [--arm ARM ...] [--judge-records FILE --judge-cards FILE --judge-memory FILE ...] [--cron EXPR]
                 [--dask N|ADDRESS [--dask-tls-ca-file F --dask-tls-cert F --dask-tls-key F]]

Starts the scheduled service on this machine: Prefect's runner serving the nightly and backfill
deployments in this one process, against a local Prefect server it starts on loopback with
authentication (or the PREFECT_API_URL it is given). The options are the service's fixed
configuration (``flows/served.py``): a run created through the API cannot change them. Runs until
interrupted. Prefect is imported only in ``flows.serve``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from acceptgate.pipelines import requests, schedule
from acceptgate.cli import checks

from acceptgate.store import warehouse
from acceptgate._util.errors import Interrupted, InvalidInput
from acceptgate.gates import ARMS
from acceptgate.sandbox import backend as backends

EXIT_UNAVAILABLE = 3


def add_parser(sub) -> None:
    p = sub.add_parser(
        "serve", help="run the scheduled service (nightly chain + backfill) in one process (Prefect serve)",
        description="Serve the deployments nightly/nightly (on a cron, UTC: "
                    f"{', '.join(s.name for s in schedule.NIGHTLY_STAGES)}; stages whose flow is not installed "
                    "are skipped and logged) and history-backfill/backfill (on demand, parameters run_ids, "
                    "since, until, arms). Without PREFECT_API_URL a Prefect server is started on 127.0.0.1 "
                    "(database under PREFECT_HOME, default ~/.cache/acceptgate/prefect), answering only requests "
                    "with the user:password kept in PREFECT_HOME/acceptgate-api-auth (owner-only), and stopped on "
                    "exit. The options below are fixed when the service starts: a run triggered from the UI or "
                    "`prefect deployment run` may set only limit, arms, profile and judge_embedder (nightly; "
                    "--limit, --arm and --judge-embedder are their defaults) and run_ids, since, until and arms "
                    "(backfill). A run given any other parameter (a model endpoint, the Dask cluster, the "
                    "backend, the warehouse, a file) fails at once and runs nothing.")
    p.add_argument("--port", type=int, default=4200, help="port of the local Prefect server (default 4200)")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH})")
    p.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N tasks in each nightly stage")
    p.add_argument("--gate-source", metavar="SOURCE",
                   help="candidate source of the nightly gates stage (codet:PATH | evalplus:PATH | openai, a live "
                        "model: --gate-base-url and --gate-model); without it the gates stage is skipped")
    tasks = p.add_mutually_exclusive_group()
    tasks.add_argument("--gate-suites", metavar="DIR", help="suites directory the gates stage runs on")
    tasks.add_argument("--gate-humanevalplus", metavar="FILE", help="HumanEval+ jsonl(.gz) the gates stage imports")
    p.add_argument("--arm", action="append", metavar="ARM", help=f"gate arms ({' | '.join(ARMS)}); default conform, off")
    p.add_argument("--certify-dataset", metavar="FILE",
                   help="HumanEval+ jsonl(.gz) of the --gate-suites tasks: the nightly certify stage's gold programs "
                        "(default: the --gate-humanevalplus file; with --gate-suites and neither, certify is skipped)")
    p.add_argument("--certify-samples", metavar="FILE",
                   help="real samples for the certify pools (CodeT jsonl.gz; default: the codet: gate source)")
    chat = p.add_argument_group("the gates stage's live model (--gate-source openai)")
    chat.add_argument("--gate-base-url", metavar="URL", help="OpenAI-compatible API base URL")
    chat.add_argument("--gate-model", metavar="NAME", help="model name sent in each request")
    chat.add_argument("--gate-api-key-env", metavar="VAR", default="OPENAI_API_KEY",
                      help="environment variable holding the key, read by the flow run (default %(default)s)")
    judge = p.add_argument_group("the judge stage (skipped without --judge-records)")
    judge.add_argument("--judge-records", metavar="FILE", help="trajectory records (jsonl)")
    judge.add_argument("--judge-cards", metavar="FILE", help="E+ answer cards (jsonl)")
    judge.add_argument("--judge-memory", metavar="FILE", help="memory bank of labelled exemplars (jsonl)")
    judge.add_argument("--judge-replay", metavar="FILE",
                       help="recorded judge outputs (jsonl): the replay backend (default: the rules backend)")
    judge.add_argument("--judge-human-labels", metavar="FILE", help="human labels (jsonl), for agreement")
    judge.add_argument("--judge-embedder", choices=("minilm", "minilm-torch", "hashing"), default="minilm",
                       help="retrieval encoder (default %(default)s)")
    p.add_argument("--cron", default=schedule.NIGHTLY_CRON, help="nightly schedule, UTC (default %(default)r)")
    checks.add_dask(p, "tasks", 0, shard_size=False)
    p.set_defaults(func=run)


def _abs(value: str | None) -> str | None:
    return str(Path(value).resolve()) if value else None


def _source(value: str | None) -> str | None:
    """codet:PATH -> codet:/absolute/PATH (the flow runs may start in another directory)."""
    if not value or ":" not in value:
        return value
    kind, rest = value.split(":", 1)
    return f"{kind}:{_abs(rest)}" if kind in ("codet", "evalplus") else value


def parameters(args) -> tuple[dict, dict, dict]:
    """(the nightly's fixed configuration, the nightly's per-run defaults, the backfill's fixed
    configuration): what ``flows/served.py`` binds the served flows to."""
    if not 1 <= args.port <= 65535:
        raise InvalidInput("must be a port number", field="--port")
    if args.limit is not None and args.limit < 1:
        raise InvalidInput("must be a positive number of tasks", field="--limit")
    if args.backend not in backends.names():
        raise InvalidInput(f"unknown backend {args.backend!r}; valid backends: {', '.join(backends.names())}",
                           field="--backend")
    arms = [a.strip() for v in (args.arm or []) for a in v.split(",") if a.strip()]
    bad = [a for a in arms if a not in ARMS]
    if bad:
        raise InvalidInput(f"unknown arm(s) {bad}; valid arms: {', '.join(ARMS)}", field="--arm")
    if args.gate_source and not (args.gate_suites or args.gate_humanevalplus):
        raise InvalidInput("the gates stage needs --gate-suites or --gate-humanevalplus", field="--gate-source")
    if (args.gate_source or "").startswith("openai") and not (args.gate_base_url and args.gate_model):
        raise InvalidInput("the openai gate source needs --gate-base-url and --gate-model", field="--gate-source")
    if args.judge_records and not (args.judge_cards and args.judge_memory):
        raise InvalidInput("the judge stage needs --judge-cards and --judge-memory too", field="--judge-records")
    for value, name in ((args.gate_suites, "--gate-suites"), (args.gate_humanevalplus, "--gate-humanevalplus"),
                        (args.certify_dataset, "--certify-dataset"), (args.certify_samples, "--certify-samples"),
                        (args.judge_records, "--judge-records"), (args.judge_cards, "--judge-cards"),
                        (args.judge_memory, "--judge-memory"), (args.judge_replay, "--judge-replay"),
                        (args.judge_human_labels, "--judge-human-labels")):
        if value and not Path(value).exists():
            raise InvalidInput("not found", source=value, field=name)
    checks.dask_ready(args)
    path = warehouse.check_path(warehouse.resolve_path(args.warehouse)).resolve()
    common = {"warehouse": str(path), "backend": args.backend}
    nightly = {**common, "gate_source": _source(args.gate_source),
               "gate_suites": _abs(args.gate_suites), "gate_humanevalplus": _abs(args.gate_humanevalplus),
               "certify_dataset": _abs(args.certify_dataset),
               "certify_samples": _abs(args.certify_samples), "gate_base_url": args.gate_base_url,
               "gate_model": args.gate_model, "gate_api_key_env": args.gate_api_key_env,
               "judge_records": _abs(args.judge_records), "judge_cards": _abs(args.judge_cards),
               "judge_memory": _abs(args.judge_memory), "judge_replay": _abs(args.judge_replay),
               "judge_human_labels": _abs(args.judge_human_labels), "dask": args.dask}
    per_run = {"limit": args.limit, "arms": arms or None, "judge_embedder": args.judge_embedder}
    backfill = {**common, "gate_suites": _abs(args.gate_suites), "gate_humanevalplus": _abs(args.gate_humanevalplus)}
    nightly = {k: v for k, v in nightly.items() if v is not None}
    # the nightly request the service will run, checked now (a bad one: exit 2 before anything starts)
    options = {name: "--arm" if name == "arms" else "--" + name.replace("_", "-") for name in (*nightly, *per_run)}
    requests.build(requests.NightlyRequest, {**nightly, **{k: v for k, v in per_run.items() if v is not None}},
                   options=options, record="serve")
    return nightly, per_run, {k: v for k, v in backfill.items() if v is not None}


_received: list[int] = []


def _terminate(signum, frame):  # before and after serving: SIGTERM ends the command like Ctrl-C
    if _received:  # a repeated signal must not cut the server's stop short
        return
    _received.append(signum)
    raise KeyboardInterrupt


def run(args) -> int:
    nightly, per_run, backfill = parameters(args)
    from acceptgate.tasks import _prefect_env

    _prefect_env.apply()  # offline Prefect settings, before Prefect is imported
    # Prefect's own console lines (a stopped flow run's "Crash detected!", its final state) stay in the runs'
    # logs (the UI): the terminal gets serve's and the stages' own lines. Inherited by the flow-run processes.
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    from acceptgate.flows import serve  # Prefect is imported here, and only here

    # While serving, flows.serve takes both signals in its event loop (it stops the flow runs, then the runner,
    # and returns the signal); before (imports, the server's start) and after (the server's stop) they unwind as here.
    # Either way the command exits 130 / 143 with its one line, like every other.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _terminate)
    try:
        received = serve.serve(nightly, per_run, backfill, cron=args.cron, port=args.port)
    except serve.ServeError as exc:
        print(f"acceptgate serve: Prefect unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        received = None
    raise Interrupted(received or (_received[0] if _received else signal.SIGTERM))
