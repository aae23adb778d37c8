"""acceptgate gate --arm conform|hmix|off [--arm ...] --source codet:PATH|evalplus:PATH|openai
                   (--dataset NAME [--path FILE] | --suites DIR) [--warehouse PATH] [--limit N] ...

The tasks come in one way: a data set imported now (through the import pipeline and its cache,
``acceptgate.scoring.ingest``), or a suites directory written by ``acceptgate import``. ``--humanevalplus FILE``
is kept as another spelling of ``--dataset humanevalplus --path FILE`` (for existing commands).

Runs the Prefect ``gate`` flow (imported only here, so the core never imports Prefect) and prints
the per-arm table: tasks, delivered, refused, false deliveries, rate over all tasks, rate over
delivered tasks.
"""

from __future__ import annotations

import os
import sys

from acceptgate.datasets import registry as datasets

from acceptgate._util import runids
from acceptgate.store import warehouse
from acceptgate.cli import checks, flowrun
from acceptgate._util.errors import InvalidInput
from acceptgate.gates import ARMS, DEFAULT_MAX_FPR_ATTACK
from acceptgate.sandbox import backend as backends
from acceptgate.scoring.profiles import DEFAULT, PROFILES
from acceptgate.sandbox.backend import Limits
from acceptgate.pipelines.shards import DEFAULT_TASKS_PER_SHARD
from acceptgate.sources import KINDS


def add_parser(sub) -> None:
    p = sub.add_parser(
        "gate", help="run acceptance gates (CONFORM / H-MIX / OFF) over tasks, score deliveries on the hidden "
                     "GT suite, write the warehouse (a Prefect flow)",
        description="Each arm decides per task which candidate (if any) to deliver, seeing only the visible "
                    "suite; the delivered programs are then run on the hidden GT suite. Prints, per arm: tasks, "
                    "delivered, refused, false deliveries, false-delivery rate over all tasks and over "
                    "delivered tasks.")
    p.add_argument("--arm", action="append", required=True, metavar="ARM",
                   help=f"{' | '.join(ARMS)}; repeat (or comma-separate) for several arms on the same tasks "
                        "(hmix-leaky-gt is deliberately broken: a demonstration for 'acceptgate leak-audit')")
    p.add_argument("--source", required=True, metavar="SOURCE", help=f"candidate source: {' | '.join(KINDS)}")
    tasks = p.add_mutually_exclusive_group(required=True)
    tasks.add_argument("--dataset", metavar="NAME", choices=datasets.NAMES,
                       help=f"a data set to import now ({', '.join(datasets.NAMES)}; its file with --path)")
    tasks.add_argument("--suites", metavar="DIR", help="a suites directory written by 'acceptgate import'")
    tasks.add_argument("--humanevalplus", metavar="FILE",
                       help="the same as --dataset humanevalplus --path FILE (kept for existing commands)")
    p.add_argument("--path", metavar="FILE", help="the --dataset's data file (humanevalplus and mbppplus need one)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N tasks")
    p.add_argument("--per-task", type=int, default=5, metavar="N",
                   help="CONFORM draws / H-MIX calls per task (default 5)")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH})")
    p.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    p.add_argument("--no-certify", action="store_true",
                   help="gate tasks without a certification record (by default every task needs one for its exact "
                        "suites and pool in the warehouse -- acceptgate certify -- or the run is refused, exit 2, "
                        "naming the task; a task that failed certification is excluded with its reason). Stored "
                        "in gate_runs.certify and with every decision")
    p.add_argument("--max-fpr-attack", type=float, default=DEFAULT_MAX_FPR_ATTACK, metavar="PCT",
                   help="the arms that decide with V refuse a task whose V accepts more than PCT %% of the attacks "
                        "of its certified pool (FPR_h, measured by acceptgate certify; default %(default)g; 100 "
                        "refuses none on this ground)")
    p.add_argument("--run-id", metavar="ID", help="name the run (default: derived from the inputs' hashes)")
    p.add_argument("--strict", action="store_true",
                   help="refuse the whole samples file (exit 2, nothing written) if any record is invalid; "
                        "by default each invalid record is reported with its line and field, counted as "
                        "'invalid' and never drawn")
    p.add_argument("--workers", type=int, default=2, help="tasks gated in parallel (default 2)")
    p.add_argument("--wall-seconds", type=float, default=Limits().wall_seconds,
                   help="sandbox wall clock per execution (default %(default)s)")
    p.add_argument("--profile", choices=PROFILES, default=DEFAULT,
                   help="how delivered programs are scored on GT: 'default' (10 s / 128 MiB per execution) or "
                        "'evalplus' (EvalPlus 0.3.1's per-input limits, float rule and memory; needs the timing an "
                        "import records). Stored in every deliveries row (gt_profile)")
    p.add_argument("--no-gauge", action="store_true",
                   help="use suites without the gauge check (by default every visible and hidden suite needs a "
                        "passing gauge record -- its reference passes, every known wrong sample is blocked -- "
                        "computed and kept when missing; a failing one refuses the run, exit 2). Stored in "
                        "gate_runs.gauge")
    checks.add_dask(p, "tasks", DEFAULT_TASKS_PER_SHARD)
    flowrun.add_quiet(p)
    flowrun.add_verbose(p)
    chat = p.add_argument_group("openai source")
    chat.add_argument("--base-url", help="OpenAI-compatible API base URL, e.g. https://api.openai.com/v1")
    chat.add_argument("--model", help="model name sent in each request")
    chat.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    chat.add_argument("--timeout", type=float, default=120.0, help="seconds per HTTP call (default 120)")
    chat.add_argument("--max-retries", type=int, default=5, help="retries on 429/5xx/timeouts (default 5)")
    chat.add_argument("--temperature", type=float, default=0.0)
    p.set_defaults(func=run)


def _arms(values: list[str]) -> list[str]:
    from acceptgate.gates import run as core  # pandas: loaded only when the command runs

    return core.check_arms([a.strip() for v in values for a in v.split(",") if a.strip()])


def _chat_config(args):
    if not args.source.startswith("openai"):
        return None
    from acceptgate.sources.openai_chat import ChatConfig

    if not args.base_url or not args.model:
        raise InvalidInput("the openai source needs --base-url and --model", field="--source")
    return ChatConfig(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
                      timeout_seconds=args.timeout, max_retries=args.max_retries, temperature=args.temperature)


def _check(args) -> None:
    if args.limit is not None and args.limit < 1:
        raise InvalidInput("must be at least 1", field="--limit")
    if not 1 <= args.per_task <= 5:
        raise InvalidInput("must be between 1 and 5 (SYSTEM.md section 3 caps a gate at 5)", field="--per-task")
    if args.workers < 1:
        raise InvalidInput("must be at least 1", field="--workers")
    if args.wall_seconds <= 0:
        raise InvalidInput("must be positive", field="--wall-seconds")
    checks.dask_ready(args)
    if args.backend not in backends.names():
        raise InvalidInput(f"unknown backend {args.backend!r}; valid backends: {', '.join(backends.names())}",
                           field="--backend")
    for path, flag in ((args.humanevalplus, "--humanevalplus"), (args.suites, "--suites"), (args.path, "--path")):
        if path is not None and not os.path.exists(path):
            raise InvalidInput("not found", source=path, field=flag)
    from acceptgate.gates import run as core

    dataset, path, _ = core.tasks_input(humanevalplus=args.humanevalplus, suites_dir=args.suites,
                                        dataset=args.dataset, path=args.path)
    if dataset is not None:
        datasets.get(dataset).source(path)  # humanevalplus and mbppplus need --path
    if args.run_id is not None:
        runids.check_run_id(args.run_id)
    if not 0 <= args.max_fpr_attack <= 100:
        raise InvalidInput("a share of the attacks, in percent: between 0 and 100", field="--max-fpr-attack")


def _require_certified(args, src, path) -> None:
    """The flow's certification precondition, checked early for a suites directory (reading it costs
    nothing): every task the source covers needs a certification record for its suites and pool."""
    from acceptgate.gates import run as core
    from acceptgate.pipelines import certify as certified

    loaded = core.load_task_set(backend=None, suites_dir=args.suites, limit=args.limit)
    coverage = core.source_coverage(src, args.source, loaded.tasks, loaded.known)
    certified.require_tasks(path, core.covered(loaded.tasks, coverage))


OPTIONS = {"arms": "--arm", "suites_dir": "--suites", "dataset_path": "--path", "chat_config": "--source",
           "limits": "--wall-seconds", "gauge": "--no-gauge", "certify": "--no-certify"}  # field -> its option


def request_of(args, arms: list[str], chat_config):
    """The gate request the options ask for (InvalidInput naming the option otherwise)."""
    from acceptgate.pipelines import requests

    values = {"arms": arms, "source": args.source, "humanevalplus": args.humanevalplus, "dataset": args.dataset,
              "dataset_path": args.path, "suites_dir": args.suites, "warehouse": args.warehouse,
              "backend": args.backend, "run_id": args.run_id, "per_task": args.per_task, "limit": args.limit,
              "workers": args.workers, "chat_config": chat_config,
              "limits": Limits(wall_seconds=args.wall_seconds, cpu_seconds=int(args.wall_seconds) + 1),
              "strict": args.strict, "profile": args.profile, "gauge": not args.no_gauge, "dask": args.dask,
              "shard_size": args.shard_size, "certify": not args.no_certify, "max_fpr_attack": args.max_fpr_attack}
    options = {name: OPTIONS.get(name, "--" + name.replace("_", "-")) for name in values}
    return requests.build(requests.GateRequest, values, options=options, record="gate")


def run(args) -> int:
    arms = _arms(args.arm)
    _check(args)
    from acceptgate.sources import open_source

    chat_config = _chat_config(args)
    request = request_of(args, arms, chat_config)  # every option checked before the source is read
    # Before any work: the source and its file (--strict: exit 2 at the first invalid record), the
    # warehouse (writable, not locked, no file created yet) and the sandbox backend. Invalid records
    # are named on stderr after the run, with those the flow finds (task ids the tasks do not know).
    with open_source(args.source, per_task=args.per_task, chat_config=chat_config, strict=args.strict) as src:
        checks.backend_ready(args.backend)
        path = checks.warehouse_ready(args.warehouse)  # last: it may wait for another process's lock
        if args.suites and not args.no_certify:  # uncertified tasks: exit 2 here, before Prefect starts
            _require_certified(args, src, path)
    request = request.model_copy(update={"warehouse": str(path)})
    say = flowrun.Say("gate", args.quiet)
    flowrun.prepare(say)
    from acceptgate.flows import gate as gate_flow  # Prefect is imported here, and only here

    # A failed expectation (exit 1), a lock (4) or another warehouse error (2): cli.main
    summary = gate_flow.gate(request, progress=None if args.quiet else say)
    for record in summary.coverage.invalid if summary.coverage else ():
        print(f"acceptgate gate: invalid record: {record}", file=sys.stderr)
    print("\n".join(summary.lines()))
    if args.verbose:
        print(summary.timing, file=sys.stderr)
    return 0
