"""acceptgate score --suites DIR --samples FILE.jsonl --suite visible|hidden [--out FILE] [--warehouse PATH]

EvalPlus's ``evaluate`` workflow on our sandbox: score an EvalPlus-format samples file (``task_id`` +
``solution`` or ``completion``) against the suites written by ``acceptgate import``. One JSON line per
record (to --out, else stdout), then the pass rates (stdout with --out, else stderr). An invalid record
(not a sample, an unknown task id) is reported on stderr with file, line and field and written as a
line with verdict ``invalid``; ``--strict`` refuses the whole file instead (exit 2, nothing written).
The run is recorded in the warehouse (score_runs, score_results) by ``acceptgate.pipelines.score``;
this module parses, calls it, and writes its output.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from acceptgate._util import outputs

from acceptgate.cli import checks
from acceptgate._util.errors import InvalidInput
from acceptgate.scoring.profiles import DEFAULT, PROFILES
from acceptgate.sandbox.backend import Limits
from acceptgate.datasets.task import SUITE_KINDS


def add_parser(sub) -> None:
    p = sub.add_parser(
        "score", help="score an EvalPlus-format samples file against imported suites (visible or hidden)",
        description="Runs every sample of FILE.jsonl (task_id + solution, or task_id + completion appended to "
                    "the task's prompt) against its task's suite in the sandbox and writes one JSON line per "
                    "sample: task_id, sample_index, verdict, cases_failed, ...")
    p.add_argument("--suites", required=True, metavar="DIR", help="a directory written by 'acceptgate import'")
    p.add_argument("--samples", required=True, metavar="FILE.jsonl", help="EvalPlus-format samples (.jsonl or .jsonl.gz)")
    p.add_argument("--suite", required=True, choices=SUITE_KINDS, help="which suite to score against")
    p.add_argument("--out", metavar="FILE", help="write the JSON lines here (default: stdout)")
    p.add_argument("--warehouse", metavar="PATH",
                   help="DuckDB file the run is recorded in (default data/warehouse.duckdb or $ACCEPTGATE_WAREHOUSE)")
    p.add_argument("--run-id", metavar="ID", help="name the run (default: derived from the inputs and settings)")
    p.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="samples run in parallel (default: the number of CPUs)")
    p.add_argument("--all-cases", action="store_true",
                   help="run every case (exact failed-case counts) instead of stopping at the first failure")
    p.add_argument("--wall-seconds", type=float, default=Limits().wall_seconds,
                   help="time limit per sample, in CPU seconds of its sandboxed processes where the backend counts "
                        "them (all do on a host with cgroups), with a wall-clock backstop of max(3x, +20 s) for "
                        "what uses no CPU; else in wall seconds (default %(default)s)")
    p.add_argument("--case-seconds", type=float, default=None,
                   help="also limit each case's time (CPU seconds, as --wall-seconds), like EvalPlus's per-input "
                        "limit (e.g. 1.0)")
    p.add_argument("--strict", action="store_true",
                   help="refuse the whole samples file (exit 2, nothing written) if any record is invalid or any "
                        "sample's task is excluded (its suite unusable, or left out at import); by default each "
                        "invalid record is written with verdict 'invalid', each sample of an unusable task with "
                        "verdict 'unusable' and the reason, and both are counted in the summary")
    p.add_argument("--no-gauge", action="store_true",
                   help="score against suites without the gauge check (by default each suite used needs a passing "
                        "gauge record -- its reference passes, every known wrong sample is blocked -- computed and "
                        "kept when missing; a task whose suite fails it is excluded as 'unusable', with the reason)")
    p.add_argument("--verbose", action="store_true",
                   help="also print where the time went (load, gauge, execute, write) on stderr")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr; errors and the summary still print")
    checks.add_dask(p, "samples", 400)
    p.add_argument("--profile", choices=PROFILES, default=DEFAULT,
                   help="default: the seed's limits (10 s of CPU time, 128 MiB per sample; --wall-seconds and "
                        "--case-seconds apply). evalplus: EvalPlus 0.3.1's rules -- each input gets max(1 s, 4 x "
                        "the reference's time measured at import), the sample min(120, their sum) + 2 s, float "
                        "outputs atol 1e-6, and 4 GiB of memory. The profile is in every output row.")
    p.set_defaults(func=run)


def _write_atomically(path: str, lines: list[str]) -> None:
    """All lines or nothing (the path was checked before any sample ran)."""
    try:
        outputs.write_atomic(path, "".join(line + "\n" for line in lines))
    except OSError as exc:
        raise InvalidInput(f"cannot write: {exc.strerror}", source=path, field="--out") from None


# ScoreRequest's fields -> the options they come from (a bad value is named by its option)
OPTIONS = {"suites_dir": "--suites", "samples": "--samples", "suite": "--suite", "backend": "--backend",
           "workers": "--workers", "fail_fast": "--all-cases", "limits": "--wall-seconds", "gauge": "--no-gauge",
           "profile": "--profile", "warehouse": "--warehouse", "run_id": "--run-id"}


def _check(args) -> None:
    if args.wall_seconds <= 0:
        raise InvalidInput("must be positive", field="--wall-seconds")
    if not Path(args.suites).is_dir():
        raise InvalidInput("not a directory", source=args.suites, field="--suites")
    if args.out:
        outputs.check_file(args.out, "--out")  # before any sample runs


def _limits(args) -> Limits:
    return Limits(wall_seconds=args.wall_seconds, cpu_seconds=int(args.wall_seconds) + 1,
                  case_seconds=args.case_seconds)


def run(args) -> int:
    _check(args)
    checks.dask_ready(args)
    from acceptgate.pipelines import requests, score

    request = requests.build(requests.ScoreRequest, {
        "suites_dir": args.suites, "samples": args.samples, "suite": args.suite, "backend": args.backend,
        "workers": args.workers, "fail_fast": not args.all_cases, "limits": _limits(args), "strict": args.strict,
        "gauge": not args.no_gauge, "profile": args.profile, "warehouse": args.warehouse, "run_id": args.run_id,
        "quiet": args.quiet}, options=OPTIONS, record="score")
    path = checks.warehouse_ready(args.warehouse)  # before any work: unwritable exit 2, locked exit 4
    request = request.model_copy(update={"warehouse": str(path)})
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    # a failed expectation (exit 1), a lock (4) or another warehouse error (2): cli.main
    scored = score.score(request, sharded=_sharded(args, request) if args.dask else None, say=say)
    _report(args, scored)
    if args.verbose:
        print(scored.timing.line("score"), file=sys.stderr)
    return 0


def _report(args, scored) -> None:
    """The invalid records on stderr, one JSON line per record (--out, else stdout), then the summary."""
    for problem in scored.report.problems:
        print(f"acceptgate score: invalid record: {scored.report.samples_path}: {problem}", file=sys.stderr)
    if args.out:
        _write_atomically(args.out, scored.lines)
        print(scored.summary)
    else:
        sys.stdout.write("".join(line + "\n" for line in scored.lines))
        print(scored.summary, file=sys.stderr)
    where = f"run {scored.run_id} in {scored.warehouse}"
    print(f"score: {where}" + (f" (snapshot {scored.snapshot})" if scored.snapshot else ""),
          file=sys.stdout if args.out else sys.stderr)


def _workers_temp_dir() -> str:
    """The local Dask workers' temp files (their scratch space, their staged sandboxes) in one directory of
    this run, removed when the command ends: a worker killed by a stop (Ctrl-C) cannot clean up itself."""
    import atexit
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="acceptgate-dask-")
    # Traversable, not listable: the workers stage bwrap under TMPDIR for the sandbox uid to execute (a
    # 0700 dir made that fail, and the sandbox fell back to rlimits only).
    os.chmod(path, 0o711)
    atexit.register(shutil.rmtree, path, True)
    os.environ["TMPDIR"] = path  # the worker processes inherit it
    os.environ["DASK_TEMPORARY_DIRECTORY"] = path  # the cluster's scratch space (read when dask is imported)
    return path


def _sharded(args, request):
    """The same scoring in shards on a Dask cluster (flows/score_sharded.py; Prefect imported only when it
    runs): given the unusable tasks, the report and its summary."""
    def run_sharded(unusable: dict[str, str]):
        from acceptgate.cli import flowrun

        if args.dask.workers is not None:
            _workers_temp_dir()
        say = flowrun.Say("score")
        flowrun.prepare(say)
        from acceptgate.flows import score_sharded

        say(f"scoring in shards of {args.shard_size} samples on Dask ({args.dask}); nothing is written until the end")
        sharded = score_sharded.run(request.suites_dir, request.samples, suite=request.suite, backend=request.backend,
                                    dask=args.dask, shard_size=args.shard_size, fail_fast=request.fail_fast,
                                    limits=request.limits, strict=request.strict, profile=request.profile,
                                    unusable=unusable)
        return sharded.report, sharded.summary()

    return run_sharded
