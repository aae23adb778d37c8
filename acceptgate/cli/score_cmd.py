"""acceptgate score --suites DIR --samples FILE.jsonl --suite visible|hidden [--out FILE]

EvalPlus's ``evaluate`` workflow on our sandbox: score an EvalPlus-format samples file (``task_id`` +
``solution`` or ``completion``) against the suites written by ``acceptgate import``. One JSON line per
record (to --out, else stdout), then the pass rates (stdout with --out, else stderr). An invalid record
(not a sample, an unknown task id) is reported on stderr with file, line and field and written as a
line with verdict ``invalid``; ``--strict`` refuses the whole file instead (exit 2, nothing written).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from acceptgate import outputs
from acceptgate.cli import checks
from acceptgate.errors import InvalidInput
from acceptgate.profiles import DEFAULT, EVALPLUS, PROFILES
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.score import load_suites, load_timing, score_samples
from acceptgate.sources.replay import read_samples
from acceptgate.task import SUITE_KINDS


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
                   help="refuse the whole samples file (exit 2, nothing written) if any record is invalid; by "
                        "default each invalid record is reported and written with verdict 'invalid'")
    p.add_argument("--no-gauge", action="store_true",
                   help="score against suites without the gauge check (by default each suite used needs a passing "
                        "gauge record -- its reference passes, every known wrong sample is blocked -- computed and "
                        "kept when missing; a failing one refuses the run, exit 2)")
    checks.add_dask(p, "samples", 400)
    p.add_argument("--profile", choices=PROFILES, default=DEFAULT,
                   help="default: the seed's limits (10 s of CPU time, 128 MiB per sample; --wall-seconds and "
                        "--case-seconds apply). evalplus: EvalPlus 0.3.1's rules -- each input gets max(1 s, 4 x "
                        "the reference's time measured at import), the sample min(120, their sum) + 2 s, and "
                        "float outputs atol 1e-6. The profile is in every output row.")
    p.set_defaults(func=run)


def _write_atomically(path: str, lines: list[str]) -> None:
    """All lines or nothing (the path was checked before any sample ran)."""
    try:
        outputs.write_atomic(path, "".join(line + "\n" for line in lines))
    except OSError as exc:
        raise InvalidInput(f"cannot write: {exc.strerror}", source=path, field="--out") from None


def _require_gauge(args, sandbox, task_ids: set[str]) -> None:
    """The suite asked for, of every task a sample names, needs a passing gauge record (exit 2 otherwise)."""
    if args.no_gauge:
        return
    from acceptgate import gauge, suitefiles

    check = gauge.require_dir(suitefiles.read_suites(args.suites), sandbox, kinds=(args.suite,), task_ids=task_ids)
    print(check.line(), file=sys.stderr)


def run(args) -> int:
    if args.workers < 1:
        raise InvalidInput("must be at least 1", field="--workers")
    if args.wall_seconds <= 0:
        raise InvalidInput("must be positive", field="--wall-seconds")
    if not Path(args.suites).is_dir():
        raise InvalidInput("not a directory", source=args.suites, field="--suites")
    if args.out:
        outputs.check_file(args.out, "--out")  # before any sample runs
    checks.dask_ready(args)
    if args.dask:
        return _run_dask(args)
    sample_file = read_samples(args.samples)
    suites, prompts, excluded = load_suites(args.suites, args.suite)
    timing = load_timing(args.suites, args.suite) if args.profile == EVALPLUS else None
    if timing is not None and (missing := sorted(set(suites) - set(timing))):
        raise InvalidInput(f"the evalplus profile needs the reference's time per case, and {len(missing)} suites "
                           f"have no timing sidecar (e.g. {missing[0]}); re-import them", source=args.suites,
                           field="--profile")
    try:
        sandbox = backends.create(args.backend)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None
    with sandbox:
        _require_gauge(args, sandbox, {s.task_id for s in sample_file.samples})
        report = score_samples(sample_file, suites, prompts, sandbox, suite=args.suite, excluded=excluded,
                               fail_fast=not args.all_cases, workers=args.workers, strict=args.strict,
                               limits=Limits(wall_seconds=args.wall_seconds,
                                             cpu_seconds=int(args.wall_seconds) + 1,
                                             case_seconds=args.case_seconds),
                               profile=args.profile, reference_seconds=timing)
    for problem in report.problems:
        print(f"acceptgate score: invalid record: {report.samples_path}: {problem}", file=sys.stderr)
    lines = report.output_rows()
    if args.out:
        _write_atomically(args.out, lines)
        print(report.summary())
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
        print(report.summary(), file=sys.stderr)
    return 0


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


def _run_dask(args) -> int:
    """The same scoring in shards on a Dask cluster (flows/score_sharded.py; Prefect imported only here)."""
    cluster = args.dask
    if not args.no_gauge:
        try:
            sandbox = backends.create(args.backend)
        except ValueError as exc:
            raise InvalidInput(str(exc), field="--backend") from None
        with sandbox:
            _require_gauge(args, sandbox, {s.task_id for s in read_samples(args.samples).samples})
    from acceptgate.cli import flowrun

    if cluster.workers is not None:
        _workers_temp_dir()
    say = flowrun.Say("score")
    flowrun.prepare(say)
    from acceptgate.flows import score_sharded

    say(f"scoring in shards of {args.shard_size} samples on Dask ({cluster}); nothing is written until the end")

    limits = Limits(wall_seconds=args.wall_seconds, cpu_seconds=int(args.wall_seconds) + 1,
                    case_seconds=args.case_seconds)
    sharded = score_sharded.run(args.suites, args.samples, suite=args.suite, backend=args.backend,
                                dask=cluster, shard_size=args.shard_size,
                                fail_fast=not args.all_cases, limits=limits, strict=args.strict,
                                profile=args.profile)
    for problem in sharded.report.problems:
        print(f"acceptgate score: invalid record: {sharded.report.samples_path}: {problem}", file=sys.stderr)
    lines = sharded.report.output_rows()
    if args.out:
        _write_atomically(args.out, lines)
        print(sharded.summary())
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
        print(sharded.summary(), file=sys.stderr)
    return 0
