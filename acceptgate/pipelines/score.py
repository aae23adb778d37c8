"""``acceptgate score`` as a run of the ledger: a samples file scored against one suite kind of a suites
directory (``acceptgate.scoring.score`` computes), recorded like every other command's run.

    load    the samples file and the suites directory (read once), the run's row (inputs' hashes)
    check   the records (``--strict``: the first invalid one is exit 2), the tasks the import excluded
    gauge   each suite used needs a passing gauge record (``--no-gauge`` skips it)
    score   the attempt is recorded (score_runs 'running'), the samples run in the sandbox (here, or in
            shards on a Dask cluster: ``sharded``), then score_results -- one row per output line --
            and the run's counts written as one stage, and the run published to the snapshot

Inputs are checked before the attempt: a file refused for its inputs (exit 2) writes nothing, not even
a schema-only warehouse. A stop while scoring ends the attempt 'interrupted' (the ledger does it).
The run id derives from the suites' and samples' hashes and the scoring settings
(``ScoreRequest.derive_run_id``) unless ``run_id`` names one. The command's JSON lines are the rows'
``lines``: computed once, written by the CLI.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from acceptgate import __version__
from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_file, sha256_text
from acceptgate._util.phases import Phases, ProgressLine
from acceptgate.datasets.samples import SampleFile, read_samples
from acceptgate.pipelines import ledger
from acceptgate.pipelines.families import SCORE
from acceptgate.pipelines.requests import ScoreRequest
from acceptgate.sandbox import backend as backends
from acceptgate.scoring import profiles
from acceptgate.scoring import score as scoring

PIPELINE = "score/1"
STAGE = "score"
RESULT_COLUMNS = ["run_id", "line", "task_id", "sample_index", "verdict", "cases_failed", "cases_run", "cases_total",
                  "candidate_sha256", "wall_seconds", "detail", "profile", "render_hash"]
COUNT_COLUMNS = ["records", "scored", "passed", "invalid", "unusable", "not_scored"]


@dataclass
class Scored:
    report: scoring.ScoreReport
    summary: str
    lines: list[str]  # one JSON line per record, in file order (the command's output)
    run_id: str
    warehouse: Path
    snapshot: Path | None
    timing: Phases


# A sharded scorer (``flows/score_sharded.py`` on a Dask cluster): given the unusable tasks (task id ->
# why its suite failed the gauge), the report and its summary.
Sharded = Callable[[dict[str, str]], tuple[scoring.ScoreReport, str]]


def score(request: ScoreRequest, *, sharded: Sharded | None = None,
          say: Callable[[str], None] = lambda text: None) -> Scored:
    """Score the samples file as a recorded run (see the module docstring). ``say``: a status line
    (the gauge's); InvalidInput for bad input, before anything is written."""
    from acceptgate.datasets import suitefiles

    phases = Phases()
    with phases("load"):  # the suites directory is read once, for the gauge and the scoring alike
        sample_file = read_samples(request.samples)
        sd = suitefiles.read_suites(request.suites_dir)
        inputs = scoring.inputs_of(sd, request.suite)
        if request.profile == profiles.EVALPLUS:
            scoring.require_timing(inputs, request.suites_dir)
        row = run_row(request, inputs, sd.source_sha256)
    # The records first: a file --strict refuses (or one with no valid sample) stops before any gauge work
    scoring.check_records(sample_file, set(inputs.suites) | set(inputs.excluded), inputs.prompts,
                          set(inputs.suites), strict=request.strict)
    _refuse_excluded(request, sample_file, inputs)
    with contextlib.ExitStack() as held:
        # a sharded run scores on the cluster: a sandbox here only for the gauge
        sandbox = held.enter_context(_open_backend(request.backend)) if request.gauge or sharded is None else None
        with phases("gauge"):
            unusable = _gauge(request, sandbox, sd, {s.task_id for s in sample_file.samples}, say)
        with phases("write"):
            path = ledger.prepare(request.warehouse)
            run = SCORE.start(path, row["run_id"][0], row=row)  # the attempt; any error or stop below ends it
        with run.guard(STAGE):
            with phases("execute"):
                if sharded is not None:
                    report, summary = sharded(unusable)
                else:
                    report = scoring.score_samples(
                        sample_file, inputs.suites, inputs.prompts, sandbox, suite=request.suite,
                        excluded=inputs.excluded, fail_fast=request.fail_fast, workers=request.workers,
                        strict=request.strict, limits=request.limits, profile=request.profile,
                        reference_seconds=inputs.timing if request.profile == profiles.EVALPLUS else None,
                        unusable=unusable, progress=ProgressLine("score", "samples", quiet=request.quiet))
                    summary = report.summary()
                held.close()  # the sandbox's processes end before the rows are written
            with phases("write"):
                lines = report.output_rows()
                run.write_stage(STAGE, {"score_results": result_frame(run.run_id, lines),
                                        SCORE.table: with_counts(row, report, lines)})
                snapshot = run.finish()
    return Scored(report, summary, lines, run.run_id, path, snapshot, phases)


# -- the run's rows ---------------------------------------------------------------------------------------

def suites_sha256(inputs: scoring.SuiteInputs) -> str:
    """One hash over the suites scored against: each task's id and its suite's spec hash, and the tasks
    the suites directory knows but excluded."""
    lines = sorted(f"{tid} {spec.spec_hash}" for tid, spec in inputs.suites.items())
    lines += sorted(f"{tid} excluded" for tid in inputs.excluded)
    return sha256_text("\n".join(lines))


def run_row(request: ScoreRequest, inputs: scoring.SuiteInputs, suites_source_sha256: str) -> pd.DataFrame:
    """The score_runs row without its counts (they arrive with the results)."""
    limits = json.dumps(asdict(request.limits), sort_keys=True)
    row = {"pipeline": PIPELINE, "acceptgate_version": __version__, "suites_from": str(request.suites_dir),
           "suites_source_sha256": suites_source_sha256, "suites_sha256": suites_sha256(inputs),
           "samples_from": str(request.samples), "samples_sha256": sha256_file(request.samples),
           "suite": request.suite, "profile": request.profile, "backend": request.backend,
           "fail_fast": request.fail_fast, "limits": limits, "gauge": "checked" if request.gauge else "skipped"}
    run_id, origin = request.name_run(row)
    frame = pd.DataFrame([{"run_id": run_id, "run_id_origin": origin, **row,
                           **{c: None for c in COUNT_COLUMNS}, "verdict_counts": None}])
    return frame.astype({c: "Int64" for c in COUNT_COLUMNS})


def with_counts(row: pd.DataFrame, report: scoring.ScoreReport, lines: list[str]) -> pd.DataFrame:
    counts = {"records": report.records, "scored": len(report.rows), "passed": report.passed,
              "invalid": len(report.problems), "unusable": len(report.unusable), "not_scored": report.not_scored}
    verdicts = Counter(json.loads(line)["verdict"] for line in lines)
    full = row.assign(**counts, verdict_counts=json.dumps(dict(verdicts.most_common())))
    return full.astype({c: "Int64" for c in COUNT_COLUMNS})


def result_frame(run_id: str, lines: list[str]) -> pd.DataFrame:
    """score_results: the output lines as rows (the same keys), with the run id."""
    frame = pd.DataFrame([{"run_id": run_id, **json.loads(line)} for line in lines], columns=RESULT_COLUMNS)
    return frame.astype({"line": "Int64", "sample_index": "Int64", "cases_failed": "Int64", "cases_run": "Int64",
                         "cases_total": "Int64", "wall_seconds": "float64"})


# -- the input checks -------------------------------------------------------------------------------------

def _open_backend(name: str):
    try:
        return backends.create(name)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None


def _gauge(request: ScoreRequest, sandbox, sd, task_ids: set[str], say: Callable[[str], None]) -> dict[str, str]:
    """task_id -> why its suite is unusable (its gauge record failed), of the tasks a sample names;
    ``strict``: any such task is exit 2. Each suite used needs a gauge record (gauge.assess)."""
    if not request.gauge:
        return {}
    from acceptgate.scoring import gauge
    check = gauge.assess_dir(sd, sandbox, kinds=(request.suite,), task_ids=task_ids,
                             progress=ProgressLine("score", "gauge checks", quiet=request.quiet))
    if request.strict:
        gauge.refuse_failed(check)
    say(f"score: {check.line()}")
    return check.failed_tasks()


def _refuse_excluded(request: ScoreRequest, sample_file: SampleFile, inputs: scoring.SuiteInputs) -> None:
    """``strict``: a sample of a task the import excluded is exit 2 (by default it is counted, not scored)."""
    if not request.strict:
        return
    for s in sample_file.samples:
        if s.task_id in inputs.excluded:
            raise InvalidInput(f"task {s.task_id} has no {request.suite} suite ({inputs.excluded[s.task_id]}); "
                               "--strict refuses a file with samples of an excluded task",
                               source=sample_file.path, record=f"line {s.line}", field="task_id")
