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

from acceptgate._util import outputs

from acceptgate.scoring import score
from acceptgate._util.phases import Phases, ProgressLine
from acceptgate.cli import checks
from acceptgate._util.errors import InvalidInput
from acceptgate.scoring.profiles import DEFAULT, EVALPLUS, PROFILES
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.datasets.samples import read_samples
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


def _gauge(args, sandbox, sd, task_ids: set[str]) -> dict[str, str]:
    """task_id -> why its suite is unusable (its gauge record failed), of the tasks a sample names;
    ``--strict``: any such task is exit 2. Each suite used needs a gauge record (gauge.assess)."""
    if args.no_gauge:
        return {}
    from acceptgate.scoring import gauge
    check = gauge.assess_dir(sd, sandbox, kinds=(args.suite,), task_ids=task_ids,
                             progress=ProgressLine("score", "gauge checks", quiet=args.quiet))
    if args.strict:
        gauge.refuse_failed(check)
    if not args.quiet:
        print(f"score: {check.line()}", file=sys.stderr)
    return check.failed_tasks()


def _refuse_excluded(args, sample_file, inputs: score.SuiteInputs) -> None:
    """``--strict``: a sample of a task the import excluded is exit 2 (by default it is counted, not scored)."""
    if not args.strict:
        return
    for s in sample_file.samples:
        if s.task_id in inputs.excluded:
            raise InvalidInput(f"task {s.task_id} has no {args.suite} suite ({inputs.excluded[s.task_id]}); "
                               "--strict refuses a file with samples of an excluded task",
                               source=sample_file.path, record=f"line {s.line}", field="task_id")


def _check(args) -> None:
    if args.workers < 1:
        raise InvalidInput("must be at least 1", field="--workers")
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
    if args.dask:
        return _run_dask(args)
    from acceptgate.datasets import suitefiles
    phases = Phases()
    with phases("load"):  # the suites directory is read once, for the gauge and the scoring alike
        sample_file = read_samples(args.samples)
        sd = suitefiles.read_suites(args.suites)
        inputs = score.inputs_of(sd, args.suite)
        if args.profile == EVALPLUS:
            score.require_timing(inputs, args.suites)
    try:
        sandbox = backends.create(args.backend)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None
    # The records first: a file --strict refuses (or one with no valid sample) stops before any gauge work
    score.check_records(sample_file, set(inputs.suites) | set(inputs.excluded), inputs.prompts,
                        set(inputs.suites), strict=args.strict)
    _refuse_excluded(args, sample_file, inputs)
    with sandbox:
        with phases("gauge"):
            unusable = _gauge(args, sandbox, sd, {s.task_id for s in sample_file.samples})
        with phases("execute"):
            report = score.score_samples(
                sample_file, inputs.suites, inputs.prompts, sandbox, suite=args.suite, excluded=inputs.excluded,
                fail_fast=not args.all_cases, workers=args.workers, strict=args.strict, limits=_limits(args),
                profile=args.profile, reference_seconds=inputs.timing if args.profile == EVALPLUS else None,
                unusable=unusable, progress=ProgressLine("score", "samples", quiet=args.quiet))
    with phases("write"):
        _report(args, report, report.summary())
    if args.verbose:
        print(phases.line("score"), file=sys.stderr)
    return 0


def _report(args, report: score.ScoreReport, summary: str) -> None:
    """The invalid records on stderr, one JSON line per record (--out, else stdout), then the summary."""
    for problem in report.problems:
        print(f"acceptgate score: invalid record: {report.samples_path}: {problem}", file=sys.stderr)
    lines = report.output_rows()
    if args.out:
        _write_atomically(args.out, lines)
        print(summary)
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
        print(summary, file=sys.stderr)


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
    unusable: dict[str, str] = {}
    if args.strict or not args.no_gauge:
        from acceptgate.datasets import suitefiles
        sample_file, sd = read_samples(args.samples), suitefiles.read_suites(args.suites)
        _refuse_excluded(args, sample_file, score.inputs_of(sd, args.suite))
        try:
            sandbox = backends.create(args.backend)
        except ValueError as exc:
            raise InvalidInput(str(exc), field="--backend") from None
        with sandbox:
            unusable = _gauge(args, sandbox, sd, {s.task_id for s in sample_file.samples})
    from acceptgate.cli import flowrun

    if cluster.workers is not None:
        _workers_temp_dir()
    say = flowrun.Say("score")
    flowrun.prepare(say)
    from acceptgate.flows import score_sharded

    say(f"scoring in shards of {args.shard_size} samples on Dask ({cluster}); nothing is written until the end")

    sharded = score_sharded.run(args.suites, args.samples, suite=args.suite, backend=args.backend,
                                dask=cluster, shard_size=args.shard_size,
                                fail_fast=not args.all_cases, limits=_limits(args), strict=args.strict,
                                profile=args.profile, unusable=unusable)
    _report(args, sharded.report, sharded.summary())
    return 0
