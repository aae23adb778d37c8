"""acceptgate certify --suites DIR --dataset FILE [--samples FILE] [--verifier NAME ...]
                  [--verifier-command CMD ...] [--verifier-mount PATH ...] [--evalplus-venv DIR]

V4V the seed-002 way: certifies each task first -- its candidate pool, labelled by construction (with
a held-out part made from a secret seed), through the six gates with its source verifier GT -- then
measures every other verifier (V, the baselines, external programs) on the certified tasks: TPR, TNR,
BA_norm, FPR on attacks (FPR_h), held-out BA_norm, diagnoses. Everything goes to the DuckDB warehouse
(tables ``v4v_*``; the gates read ``v4v_task_certificates``). A Prefect flow, imported only here; a
progress bar on stderr while it runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import contextlib
import re
import sys

from acceptgate.cli import checks, flowrun
from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import backend as backends
from acceptgate.pipelines.shards import DEFAULT_TASKS_PER_SHARD
from acceptgate.sandbox.backend import Limits
from acceptgate.v4v import external, verifiers
from acceptgate.v4v.certify import Settings
from acceptgate.v4v.external import COMMAND_LIMITS, ExternalOptions
from acceptgate.v4v.pools import PoolSettings


def add_parser(sub) -> None:
    p = sub.add_parser(
        "certify", help="certify tasks (their pools with GT, six gates) and measure verifiers (V, baselines, external "
                        "programs) on them",
        description="V4V: per task a pool of gold, legal variants, ordinary wrong and attack candidates labelled by "
                    "construction (part of it held out, from a secret seed); the six gates with receipts on GT "
                    "certify the task; every other verifier is measured on the certified tasks (TPR, TNR, BA_norm, "
                    "FPR_h, held-out BA_norm, diagnoses). Writes tables v4v_* of the warehouse; gate, the nightly "
                    "chain and serve-api need a task's certificate.")
    p.add_argument("--suites", required=True, metavar="DIR", help="a directory written by 'acceptgate import humanevalplus'")
    p.add_argument("--dataset", required=True, metavar="FILE",
                   help="the HumanEval+ jsonl(.gz) the suites came from (the gold programs)")
    p.add_argument("--samples", metavar="FILE",
                   help="CodeT-format model samples (legal different implementations when they pass GT)")
    p.add_argument("--verifier", action="append", metavar="NAME",
                   help=f"a verifier to certify (repeat; default all built-ins: {', '.join(verifiers.BUILTIN)}); "
                        "ext:FILE.py is a program defining verify(candidate) -> 'PASS'|'FAIL', run in the sandbox; "
                        "see also --verifier-command and --evalplus-venv")
    p.add_argument("--verifier-command", action="append", metavar="CMD", default=[],
                   help="certify a command as a verifier (repeat): it reads the candidate on stdin, or as the file "
                        "{file}; {task} and {entry_point} name the task; it prints PASS or FAIL as its last line. "
                        "Runs in a fresh sandbox per decision (no network, empty environment, limits below); "
                        "'python3' is the sandbox's interpreter; arguments naming host files are bound read-only")
    p.add_argument("--verifier-mount", action="append", metavar="PATH", default=[],
                   help="a host file or dir the command verifiers may read, bound read-only at the same path "
                        "(repeat); its contents are hashed into the verifier's version")
    p.add_argument("--evalplus-venv", metavar="DIR",
                   help="also certify EvalPlus 0.3.1 itself (verifier 'evalplus'), from this venv "
                        "(python3 -m venv DIR && DIR/bin/pip install evalplus==0.3.1; same Python minor version)")
    p.add_argument("--verifier-wall-seconds", type=float, default=COMMAND_LIMITS.wall_seconds,
                   help="wall clock per command-verifier decision (default %(default)s; evalplus: at least 130)")
    p.add_argument("--verifier-memory-mb", type=int, default=COMMAND_LIMITS.memory_bytes // (1024 * 1024),
                   help="address space per command-verifier decision, MiB (default %(default)s; evalplus: at least 2048)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N tasks")
    p.add_argument("--task", action="append", metavar="ID", help="only these tasks (repeat)")
    p.add_argument("--k", type=int, default=3, help="runs from reset per re-run candidate (default 3; the gate needs >= 3)")
    p.add_argument("--repeat-sample", type=int, default=3, metavar="N",
                   help="per task and suite, re-run the gold, every attack and N seeded others; -1 = all (default 3). "
                        "Candidates not re-run keep their round-0 decision, marked as copied and left out of the "
                        "median-BA round choice")
    p.add_argument("--repeat-all", action="store_true",
                   help="full repeatability: re-run every candidate k times from reset (= --repeat-sample -1)")
    p.add_argument("--samples-per-task", type=int, default=PoolSettings().samples_per_task, metavar="N",
                   help="model samples tried per task (default %(default)s)")
    p.add_argument("--no-gauge", action="store_true",
                   help="certify without the gauge check (by default both suites of every task are gauged with the "
                        "gold as reference, records computed and kept when missing; a failing hidden suite fails "
                        "that task's certification, a failing visible one is noted on it). Recorded in "
                        "v4v_runs.settings")
    p.add_argument("--heldout-seed", metavar="HEX",
                   help="the held-out candidates' seed (32 hex digits): by default a fresh secret one per run, "
                        "published in v4v_heldout when the run ends; give a published one to rebuild that run's "
                        "held-out part")
    p.add_argument("--warehouse", metavar="PATH", help="DuckDB file (default data/warehouse.duckdb or $ACCEPTGATE_WAREHOUSE)")
    p.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    p.add_argument("--run-id", metavar="ID", help="name the run (default: derived from the inputs and settings)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="executions in parallel (default: CPUs)")
    p.add_argument("--wall-seconds", type=float, default=Limits().wall_seconds,
                   help="sandbox wall clock per execution (default %(default)s)")
    checks.add_dask(p, "tasks", DEFAULT_TASKS_PER_SHARD)
    flowrun.add_quiet(p)
    flowrun.add_verbose(p)
    p.set_defaults(func=run)


class LineProgress:
    """Without a terminal (a log file, a scheduler): about ten lines per stage."""

    def __init__(self, say) -> None:
        self.say = say
        self.shown: dict[str, int] = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.shown or done == total or done - self.shown[stage] >= max(1, total // 10):
            self.shown[stage] = done
            self.say(f"{BarProgress.LABELS.get(stage, stage)}: {done}/{total}")


class BarProgress:
    """A rich progress bar per stage on stderr (rich comes with Prefect)."""

    LABELS = {"execute": "run each candidate once per suite", "repeat": "re-run from reset",
              "shards": "Dask shards (pools, runs, decisions)",
              "decide": "decide, gates, mutants"}

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self.ids: dict[str, int] = {}

    def __enter__(self):
        self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.stop()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.ids:
            self.ids[stage] = self.bar.add_task(self.LABELS.get(stage, stage), total=total)
        self.bar.update(self.ids[stage], completed=done, total=total)


def _settings(args) -> Settings:
    for name, value, low in (("--k", args.k, 1), ("--workers", args.workers, 1),
                             ("--samples-per-task", args.samples_per_task, 0), ("--repeat-sample", args.repeat_sample, -1)):
        if value < low:
            raise InvalidInput(f"must be at least {low}", field=name)
    if args.wall_seconds <= 0:
        raise InvalidInput("must be positive", field="--wall-seconds")
    if args.verifier_wall_seconds <= 0:
        raise InvalidInput("must be positive", field="--verifier-wall-seconds")
    if args.verifier_memory_mb < 64:
        raise InvalidInput("must be at least 64", field="--verifier-memory-mb")
    names = list(args.verifier or verifiers.BUILTIN)
    names += [f"cmd:{c}" for c in args.verifier_command]
    if args.evalplus_venv:
        names.append("evalplus")
    names = tuple(dict.fromkeys(names))
    command_limits = Limits(wall_seconds=args.verifier_wall_seconds, cpu_seconds=int(args.verifier_wall_seconds) + 1,
                            memory_bytes=args.verifier_memory_mb * 1024 * 1024, processes=COMMAND_LIMITS.processes)
    options = ExternalOptions(mounts=tuple(args.verifier_mount), evalplus_venv=args.evalplus_venv,
                              dataset=args.dataset, limits=command_limits)
    for name in names:
        try:  # an unknown name lists the valid ones; an unreadable ext: file, a missing mount or venv is named
            external.make(name, options) or verifiers.get(name)
        except ValueError as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(str(exc), field="--verifier") from None
    limits = Limits(wall_seconds=args.wall_seconds, cpu_seconds=int(args.wall_seconds) + 1)
    if args.heldout_seed is not None and not re.fullmatch(r"[0-9a-f]{32}", args.heldout_seed):
        raise InvalidInput("32 lowercase hex digits (v4v_heldout.heldout_seed of the run to rebuild)",
                           field="--heldout-seed")
    return Settings(verifiers=names, k=args.k, repeat_sample=-1 if args.repeat_all else args.repeat_sample,
                    pool=PoolSettings(samples_per_task=args.samples_per_task), workers=args.workers, limits=limits,
                    external=options, heldout_seed=args.heldout_seed or "")


OPTIONS = {"suites_dir": "--suites", "dataset": "--dataset", "samples": "--samples", "warehouse": "--warehouse",
           "backend": "--backend", "run_id": "--run-id", "limit": "--limit", "task_ids": "--task",
           "gauge": "--no-gauge", "dask": "--dask", "shard_size": "--shard-size"}  # field -> its option


def run(args) -> int:
    settings = _settings(args)
    if args.limit is not None and args.limit < 1:
        raise InvalidInput("must be at least 1", field="--limit")
    checks.dask_ready(args)
    for flag, path in (("--suites", args.suites), ("--dataset", args.dataset), ("--samples", args.samples)):
        if path is not None and not Path(path).exists():
            raise InvalidInput("not found", source=path, field=flag)
    if args.task:  # every id checked before any flow starts: a bad one is exit 2 in seconds
        from acceptgate.datasets import suitefiles
        known = set(suitefiles.manifest_task_ids(args.suites))
        unknown = [t for t in args.task if t not in known]
        if unknown:
            raise InvalidInput(f"no such task in the suites directory: {', '.join(unknown[:5])} "
                               f"(it has {len(known)}, e.g. {min(known) if known else 'none'})",
                               source=args.suites, field="--task")
    path = checks.warehouse_ready(args.warehouse)  # before any work: unwritable exit 2, locked exit 4
    if args.backend not in backends.names():
        raise InvalidInput(f"unknown backend {args.backend!r}; valid backends: {', '.join(backends.names())}",
                           field="--backend")
    if any(n.startswith("cmd:") or n == "evalplus" for n in settings.verifiers) and not args.backend.startswith("local"):
        raise backends.BackendUnavailable(f"command verifiers run on the local backends only, not {args.backend!r}")
    from acceptgate.pipelines import requests

    request = requests.build(requests.CertifyRequest, {
        "suites_dir": args.suites, "dataset": args.dataset, "samples": args.samples, "warehouse": str(path),
        "backend": args.backend, "run_id": args.run_id, "limit": args.limit, "task_ids": args.task,
        "settings": settings, "gauge": not args.no_gauge, "dask": args.dask, "shard_size": args.shard_size},
        options=OPTIONS, record="certify")
    say = flowrun.Say("certify", args.quiet)
    flowrun.prepare(say)
    from acceptgate.flows import certify as certify_flow  # Prefect is imported here, and only here

    say("loading the tasks and building the candidate pools")
    progress = (contextlib.nullcontext(None) if args.quiet else
                BarProgress() if sys.stderr.isatty() else LineProgress(say))
    # a failed expectation (exit 1), a lock (4) or another warehouse error (2): cli.main
    with progress as bar:
        summary = certify_flow.run(request.model_copy(update={"warehouse": str(path)}), bar)
    print("\n".join(summary.lines()))
    if args.verbose:
        print(summary.timing, file=sys.stderr)
    return 0
