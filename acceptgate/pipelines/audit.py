"""The audit pipeline, one plain function per stage (``flows/audit.py`` only sequences them).

    import  -> tasks, candidates, import_issues (and the runs row)
    suites  -> suites, cases            (validate, render, hash every SuiteSpec)
    gauge   -> gauge_checks             (the reference passes, known wrong samples are blocked)
    execute -> executions, case_results (the reference and every wrong sample on V and GT, all cases)

Each stage computes, turns its results into one pandas frame per table, validates every frame against
``expectations/<table>.json`` (ExpectationFailed: nothing of the stage is written) and then replaces
the run's rows of its tables in one short transaction. Re-running a run id therefore leaves the same
rows, never duplicates. The import stage starts an attempt (the audit's family in
``acceptgate.pipelines.families``), which clears the run's rows of every stage, so a run's rows always
come from one attempt.

Run id: by default derived from the inputs (``audit-`` + 16 hex of the sha256 of dataset, its sha256,
--limit, backend name and the pipeline version): the same audit on the same data maps to the same run
id, so a second run replaces the first one's rows. ``--run-id`` names a run explicitly.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd

from acceptgate import __version__

from acceptgate.suites import render, suitespec

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines import ledger
from acceptgate.pipelines.families import AUDIT
from acceptgate.pipelines.requests import AUDIT_PIPELINE, AuditRequest
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Backend
from acceptgate._util.hashing import sha256_text
from acceptgate.sandbox.executor import ExecutionResult, execute_many
from acceptgate.datasets.task import SUITE_KINDS, ImportResult, Task

FINAL_VERDICTS = ("timeout", "memory", "crash", "protocol")  # end an execution early whatever the mode

Frames = dict[str, pd.DataFrame]
Progress = Callable[[int, int], None] | None


# -- progress --------------------------------------------------------------------------------------

class Reporter:
    """Where stages report what they are doing. The default says nothing; the CLI prints to stderr."""

    def stage(self, name: str, message: str = "") -> None:
        pass

    def progress(self, name: str, done: int, total: int) -> None:
        pass


_reporter = Reporter()


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Use ``reporter`` for the stages run inside the block (the flow reads it through ``reporter()``)."""
    global _reporter
    previous, _reporter = _reporter, reporter
    try:
        yield reporter
    finally:
        _reporter = previous


def reporter() -> Reporter:
    return _reporter


def _progress(name: str) -> Callable[[int, int], None]:
    return lambda done, total: _reporter.progress(name, done, total)


# -- runs ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    run_id: str
    origin: str  # derived | user
    dataset: str
    source: str
    source_sha256: str
    backend: str
    limit: int | None

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "run_id": self.run_id, "run_id_origin": self.origin, "pipeline": AUDIT_PIPELINE,
            "acceptgate_version": __version__, "dataset": self.dataset, "source": self.source,
            "source_sha256": self.source_sha256, "backend": self.backend, "task_limit": self.limit,
        }]).astype({"task_limit": "Int64"})




def make_run(imported: ImportResult, request: AuditRequest) -> Run:
    """The run's row; its id the request's (``AuditRequest.name_run``: the user's, or derived)."""
    run_id, origin = request.name_run(imported.source_sha256)
    return Run(run_id, origin, imported.dataset, imported.source, imported.source_sha256, request.backend,
               request.limit)


def check_limit(limit: int | None) -> int | None:
    if limit is not None and limit < 1:
        raise InvalidInput("must be a positive number of tasks", record=str(limit), field="--limit")
    return limit


def open_backend(name: str) -> Backend:
    try:
        return backends.create(name)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None


# -- writing a stage -------------------------------------------------------------------------------

StageWrite = ledger.StageWrite


@contextlib.contextmanager
def _stage(path: str | Path, run: Run, name: str, *, report: bool = True) -> Iterator[ledger.Run]:
    """The stage inside the run's attempt (an error or a stop ends it); yields the run's handle."""
    if report:
        _reporter.stage(name)
    with AUDIT.attach(path, run.run_id).guard(name) as recorded:
        warehouse.pause_point(f"{name}:started")  # a stop test's point inside the stage's attempt
        yield recorded


# -- stage: import -----------------------------------------------------------------------------

def load_tasks(backend: Backend, *, limit: int | None = None, path: str | None = None,
               progress: Progress = None, dataset: str = "humaneval") -> ImportResult:
    """The data set through the import pipeline and its cache (``acceptgate.scoring.ingest``)."""
    from acceptgate.datasets import importcache  # the importers pull in the sandbox machinery
    from acceptgate.scoring import ingest

    return ingest.load_result(dataset, path, backend, limit=limit, cache_dir=importcache.flow_cache_dir(),
                              progress=progress)[0]


def _candidates(task: Task) -> list[tuple[str, str, str, str]]:
    """(role, label, sha256, source) for the reference and each distinct wrong sample, in order."""
    out = [("reference", "reference", sha256_text(task.reference), task.reference)]
    seen = {out[0][2]}
    for sample in task.wrong_samples:
        digest = sha256_text(sample.source)
        if digest not in seen:  # two labels with one program: it runs once, under the first label
            seen.add(digest)
            out.append(("wrong", sample.label, digest, sample.source))
    return out


def import_frames(run: Run, imported: ImportResult) -> Frames:
    tasks, candidates = [], []
    for task in imported.tasks:
        progs = _candidates(task)
        tasks.append({"run_id": run.run_id, "task_id": task.task_id, "dataset": task.dataset,
                      "entry_point": task.entry_point, "prompt_sha256": task.prompt_sha256,
                      "reference_sha256": sha256_text(task.reference), "prompt": task.prompt,
                      "contract": task.contract, "wrong_samples": len(progs) - 1})
        candidates += [{"run_id": run.run_id, "task_id": task.task_id, "candidate_sha256": digest,
                        "role": role, "label": label, "source": source}
                       for role, label, digest, source in progs]
    issues = [{"run_id": run.run_id, "issue_index": i, "task_id": issue.task_id, "reason": issue.reason,
               "detail": issue.detail, "suite": issue.suite, "case_index": issue.case_index,
               "excluded": issue.excluded}
              for i, issue in enumerate(imported.issues)]
    return {
        AUDIT.table: run.frame(),
        "tasks": _frame(tasks, TASK_COLUMNS, ints=("wrong_samples",)),
        "candidates": _frame(candidates, CANDIDATE_COLUMNS),
        "import_issues": _frame(issues, ISSUE_COLUMNS, ints=("issue_index", "case_index")),
    }


TASK_COLUMNS = ["run_id", "task_id", "dataset", "entry_point", "prompt_sha256", "reference_sha256", "prompt",
                "contract", "wrong_samples"]
CANDIDATE_COLUMNS = ["run_id", "task_id", "candidate_sha256", "role", "label", "source"]
ISSUE_COLUMNS = ["run_id", "issue_index", "task_id", "reason", "detail", "suite", "case_index", "excluded"]


def _frame(rows: list[dict[str, Any]], columns: list[str], *, ints: tuple[str, ...] = ()) -> pd.DataFrame:
    """A frame with exactly ``columns`` (also when empty); integer columns nullable (Int64)."""
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype({c: "Int64" for c in ints})


@dataclass
class ImportStage:
    run: Run
    imported: ImportResult
    frames: Frames
    write: StageWrite


def stage_import(path: str | Path, backend: Backend, request: AuditRequest) -> ImportStage:
    """The data set imported on ``backend`` (the request's, open) and written as the run's first stage."""
    _reporter.stage("import")
    imported = load_tasks(backend, limit=request.limit, path=request.data_path, progress=_progress("import"),
                          dataset=request.dataset)
    run = make_run(imported, request)
    AUDIT.start(path, run.run_id)  # the attempt, before any write (its earlier rows go)
    with _stage(path, run, "import", report=False) as recorded:
        frames = import_frames(run, imported)
        return ImportStage(run, imported, frames, recorded.write_stage("import", frames))


# -- stage: suites -----------------------------------------------------------------------------

@dataclass(frozen=True)
class PreparedSuite:
    task_id: str
    kind: str
    spec: suitespec.SuiteSpec
    render_hash: str


def prepare_suites(tasks: list[Task]) -> list[PreparedSuite]:
    """Validate each suite (its canonical form parses back to the same spec_hash), render it, hash it."""
    prepared = []
    for task in tasks:
        for kind in SUITE_KINDS:
            spec = task.suites.get(kind)
            if spec is None:
                continue
            source = f"{task.task_id} {kind} suite"
            again = suitespec.loads(spec.canonical_json(), source=source)
            if again.spec_hash != spec.spec_hash:
                raise suitespec.SpecError("the canonical form does not load back to the same spec_hash",
                                          source=source, construct="canonical form")
            if spec.entry_point != task.entry_point:
                raise suitespec.SpecError(f"calls {spec.entry_point!r}, the task's entry point is "
                                          f"{task.entry_point!r}", source=source, field="entry_point")
            prepared.append(PreparedSuite(task.task_id, kind, spec, spec.render_hash))
    return prepared


SUITE_COLUMNS = ["run_id", "task_id", "suite", "spec_hash", "render_hash", "renderer", "dialect", "entry_point",
                 "case_count", "spec_json"]
CASE_COLUMNS = ["run_id", "spec_hash", "case_index", "args_text", "kwargs_text", "expected_text"]


def suite_frames(run: Run, prepared: list[PreparedSuite]) -> Frames:
    suites, cases = [], {}
    for p in prepared:
        suites.append({"run_id": run.run_id, "task_id": p.task_id, "suite": p.kind, "spec_hash": p.spec.spec_hash,
                       "render_hash": p.render_hash, "renderer": render.RENDERER_VERSION,
                       "dialect": p.spec.dialect, "entry_point": p.spec.entry_point,
                       "case_count": len(p.spec.cases), "spec_json": p.spec.canonical_json()})
        for i, case in enumerate(p.spec.cases):  # content-addressed: a spec shared by two suites is stored once
            cases[(p.spec.spec_hash, i)] = {"run_id": run.run_id, "spec_hash": p.spec.spec_hash, "case_index": i,
                                            "args_text": case.args_text, "kwargs_text": case.kwargs_text,
                                            "expected_text": case.expected_text}
    return {"suites": _frame(suites, SUITE_COLUMNS, ints=("case_count",)),
            "cases": _frame(list(cases.values()), CASE_COLUMNS, ints=("case_index",))}


@dataclass
class SuitesStage:
    prepared: list[PreparedSuite]
    frames: Frames
    write: StageWrite


def stage_suites(path: str | Path, imp: ImportStage) -> SuitesStage:
    with _stage(path, imp.run, "suites") as recorded:
        prepared = prepare_suites(imp.imported.tasks)
        frames = suite_frames(imp.run, prepared)
        return SuitesStage(prepared, frames, recorded.write_stage("suites", frames, related=imp.frames))


# -- stage: gauge ------------------------------------------------------------------------------

GAUGE_COLUMNS = ["run_id", "task_id", "suite", "spec_hash", "render_hash", "passed", "reasons", "reference_sha256",
                 "reference_verdict", "wrong_total", "wrong_blocked"]


def check_gauges(tasks: list[Task], backend: Backend, *, progress: Progress = None) -> list:
    from acceptgate.scoring import gauge
    return gauge.check_many(tasks, backend, progress=progress)


def gauge_frames(run: Run, gauges: list) -> Frames:
    rows = []
    for result in gauges:
        for s in result.suites:
            rows.append({"run_id": run.run_id, "task_id": s.task_id, "suite": s.suite, "spec_hash": s.spec_hash,
                         "render_hash": s.render_hash, "passed": bool(s.passed), "reasons": list(s.reasons),
                         "reference_sha256": s.reference.candidate_sha256,
                         # a generic sample right on every hidden input is not wrong (s.notes): not counted
                         "reference_verdict": s.reference.verdict, "wrong_total": len(s.wrong) - len(s.notes),
                         "wrong_blocked": sum(1 for _, r in s.wrong if r.verdict != "pass")})
    return {"gauge_checks": _frame(rows, GAUGE_COLUMNS, ints=("wrong_total", "wrong_blocked"))}


@dataclass
class GaugeStage:
    gauges: list
    frames: Frames
    write: StageWrite


def stage_gauge(path: str | Path, imp: ImportStage, suites: SuitesStage, backend: Backend) -> GaugeStage:
    with _stage(path, imp.run, "gauge") as recorded:
        gauges = check_gauges(imp.imported.tasks, backend, progress=_progress("gauge"))
        frames = gauge_frames(imp.run, gauges)
        related = {**imp.frames, **suites.frames}
        return GaugeStage(gauges, frames, recorded.write_stage("gauge", frames, related=related))


# -- stage: execute ----------------------------------------------------------------------------

@dataclass
class ExecutionRecord:
    task_id: str
    suite: str
    role: str  # reference | wrong
    label: str
    result: ExecutionResult
    executed_in: str  # gauge (its complete result reused) | execute


def _complete(result: ExecutionResult) -> bool:
    """Every case was run, or the execution ended for a reason a re-run would meet again."""
    return len(result.cases) >= result.cases_total or result.verdict in FINAL_VERDICTS


def run_executions(tasks: list[Task], gauges: list, backend: Backend, *,
                   progress: Progress = None) -> tuple[list[ExecutionRecord], int]:
    """The reference and every wrong sample on every suite, all cases (no fail-fast).

    The gauge check already executed each of them; its results are reused when complete (the
    references; wrong samples stopped at the end of the block of their first failing case are run
    again in full). Returns
    the records in (task, suite, candidate) order and how many executions ran here.
    """
    earlier: dict[tuple[str, str, str], ExecutionResult] = {}
    for result in gauges:
        for s in result.suites:
            for r in [s.reference] + [r for _, r in s.wrong]:
                earlier[(s.task_id, s.suite, r.candidate_sha256)] = r
    records: list[ExecutionRecord | None] = []
    jobs, slots = [], []
    for task in tasks:
        progs = _candidates(task)
        for kind in SUITE_KINDS:
            spec = task.suites.get(kind)
            if spec is None:
                continue
            harness = None
            for role, label, digest, source in progs:
                prior = earlier.get((task.task_id, kind, digest))
                if prior is not None and _complete(prior) and prior.spec_hash == spec.spec_hash:
                    records.append(ExecutionRecord(task.task_id, kind, role, label, prior, "gauge"))
                    continue
                harness = harness or render.harness_for(spec)
                jobs.append((harness, source))
                slots.append((len(records), task.task_id, kind, role, label))
                records.append(None)
    results = execute_many(jobs, backend, all_cases=True, progress=progress) if jobs else []
    for (at, task_id, kind, role, label), result in zip(slots, results):
        records[at] = ExecutionRecord(task_id, kind, role, label, result, "execute")
    return records, len(jobs)  # type: ignore[return-value]


EXECUTION_COLUMNS = ["run_id", "task_id", "suite", "candidate_sha256", "spec_hash", "render_hash", "role", "label",
                     "verdict", "detail", "exit", "cases_total", "cases_passed", "cases_recorded", "wall_seconds",
                     "backend", "isolation", "executed_in"]
CASE_RESULT_COLUMNS = ["run_id", "task_id", "suite", "candidate_sha256", "case_index", "spec_hash", "status",
                       "args_text", "got_text", "want_text", "error_type", "message"]


def execution_frames(run: Run, records: list[ExecutionRecord]) -> Frames:
    executions, cases = [], []
    for rec in records:
        r = rec.result
        key = {"run_id": run.run_id, "task_id": rec.task_id, "suite": rec.suite,
               "candidate_sha256": r.candidate_sha256}
        executions.append({**key, "spec_hash": r.spec_hash, "render_hash": r.render_hash, "role": rec.role,
                           "label": rec.label, "verdict": r.verdict, "detail": r.detail, "exit": r.exit,
                           "cases_total": r.cases_total, "cases_passed": r.cases_passed,
                           "cases_recorded": len(r.cases), "wall_seconds": float(r.wall_seconds),
                           "backend": str(r.isolation.get("backend", run.backend)),
                           "isolation": json.dumps(r.isolation, sort_keys=True),
                           "executed_in": rec.executed_in})
        cases += [{**key, "case_index": c.index, "spec_hash": r.spec_hash, "status": c.status,
                   "args_text": c.args, "got_text": c.got, "want_text": c.want, "error_type": c.error_type,
                   "message": c.message} for c in r.cases]
    return {"executions": _frame(executions, EXECUTION_COLUMNS,
                                 ints=("cases_total", "cases_passed", "cases_recorded")),
            "case_results": _frame(cases, CASE_RESULT_COLUMNS, ints=("case_index",))}


@dataclass
class ExecuteStage:
    records: list[ExecutionRecord]
    ran: int  # executions run in this stage (the rest reused from the gauge check)
    frames: Frames
    write: StageWrite


def stage_execute(path: str | Path, imp: ImportStage, suites: SuitesStage, gauge: GaugeStage,
                  backend: Backend | None, *,
                  executed: tuple[list[ExecutionRecord], int] | None = None) -> ExecuteStage:
    """``executed``: the records and count ``run_executions`` gave, already computed (in shards on a
    cluster, ``acceptgate.pipelines.shards``); this then only writes them."""
    with _stage(path, imp.run, "execute") as recorded:
        records, ran = executed or run_executions(imp.imported.tasks, gauge.gauges, backend,
                                                  progress=_progress("execute"))
        frames = execution_frames(imp.run, records)
        related = {**imp.frames, **suites.frames}
        return ExecuteStage(records, ran, frames, recorded.write_stage("execute", frames, related=related))


# -- finishing ---------------------------------------------------------------------------------

@dataclass
class Summary:
    run_id: str
    run_id_origin: str
    backend: str
    warehouse: str
    snapshot: str | None
    imported: dict[str, Any]  # acceptgate.datasets.importers.report.summary
    suites: dict[str, int]
    cases: int
    gauge_usable: dict[str, int]
    gauge_failed: dict[str, int]
    gauge_reasons: dict[str, int]
    executions: int
    executions_run: int
    verdicts: dict[str, dict[str, int]]  # role -> verdict -> count
    rows: dict[str, int]
    wall_seconds: float = 0.0  # the flow's stages
    attempts: int = 1
    total_seconds: float | None = None  # the whole command, Prefect's server start included (set by the CLI)
    timing: str = ""  # where the run's time went, by stage (set by the flow; printed with --verbose)

    def lines(self) -> list[str]:
        imp = self.imported
        out = [f"run        {self.run_id} ({self.run_id_origin}; attempt {self.attempts}) backend {self.backend}"]
        total = imp["tasks_imported"] + imp["tasks_excluded"]
        out.append(f"tasks      {total} read: {imp['tasks_imported']} imported, {imp['tasks_excluded']} excluded"
                   + _reasons(imp["tasks_excluded_by_reason"]))
        out.append("suites     " + ", ".join(f"{k} {n} ({imp['cases'].get(k, 0)} cases)" for k, n in self.suites.items())
                   + _reasons(imp["suites_excluded_by_reason"], "excluded"))
        n_cases_excl = sum(imp["cases_excluded_by_reason"].values())
        out.append(f"cases      {n_cases_excl} excluded" + _reasons(imp["cases_excluded_by_reason"]))
        if imp["kept_with_notes_by_reason"]:
            out.append(f"notes      {sum(imp['kept_with_notes_by_reason'].values())} kept with a note"
                       + _reasons(imp["kept_with_notes_by_reason"]))
        out.append("gauge      " + ", ".join(f"{k} {self.gauge_usable.get(k, 0)} usable / {self.gauge_failed.get(k, 0)} "
                                              f"failed" for k in self.suites) + _reasons(self.gauge_reasons))
        out.append(f"executions {self.executions} ({self.executions - self.executions_run} reused from the gauge, "
                   f"{self.executions_run} run)")
        for role, counts in self.verdicts.items():
            out.append(f"  {role:<10} " + ", ".join(f"{v} {n}" for v, n in counts.items()))
        out.append(f"wall time  {self.wall_seconds:.1f} s in the flow"
                   + (f", {self.total_seconds:.1f} s in all" if self.total_seconds is not None else ""))
        out.append(f"warehouse  {self.warehouse}" + (f" (snapshot {self.snapshot})" if self.snapshot else ""))
        out.append("rows       " + ", ".join(f"{t} {n}" for t, n in self.rows.items()))
        return out


def _reasons(counts: dict[str, int], word: str = "") -> str:
    if not counts:
        return ""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"; {word + ': ' if word else ''}" + ", ".join(f"{r} {n}" for r, n in items)


def _gauge_reason_code(reason: str) -> str:
    """'wrong sample constant-0 passes the hidden suite' -> 'wrong sample passes' (for counting)."""
    if reason.startswith("reference does not pass"):
        return "reference does not pass"
    if reason.startswith("wrong sample"):
        return "wrong sample passes"
    return reason


def summarize(path: str | Path, imp: ImportStage, suites: SuitesStage, gauge: GaugeStage, execute: ExecuteStage,
              *, wall_seconds: float, snapshot: Path | None) -> Summary:
    from acceptgate.datasets.importers import report

    kinds = [k for k in SUITE_KINDS]
    usable: Counter = Counter()
    failed: Counter = Counter()
    reasons: Counter = Counter()
    for result in gauge.gauges:
        for s in result.suites:
            (usable if s.passed else failed)[s.suite] += 1
            reasons.update({_gauge_reason_code(r) for r in s.reasons})
    verdicts: dict[str, Counter] = {}
    for rec in execute.records:
        verdicts.setdefault(rec.role, Counter())[rec.result.verdict] += 1
    rows = warehouse.row_counts(path, list(AUDIT.tables), run_id=imp.run.run_id)
    with warehouse.connect(path, read_only=True) as con:
        attempts = con.execute(f"select attempts from {AUDIT.table} where run_id = ?", [imp.run.run_id]).fetchone()[0]
    return Summary(
        run_id=imp.run.run_id, run_id_origin=imp.run.origin, backend=imp.run.backend, warehouse=str(path),
        snapshot=str(snapshot) if snapshot else None, imported=report.summary(imp.imported),
        suites={k: sum(1 for p in suites.prepared if p.kind == k) for k in kinds},
        cases=len(suites.frames["cases"]), gauge_usable=dict(usable), gauge_failed=dict(failed),
        gauge_reasons=dict(reasons), executions=len(execute.records), executions_run=execute.ran,
        verdicts={role: dict(c.most_common()) for role, c in verdicts.items()}, rows=rows,
        wall_seconds=wall_seconds, attempts=attempts)


def prepare_warehouse(path: str | Path | None) -> Path:
    """Resolve and check the path, apply pending migrations (``ledger.prepare``)."""
    return ledger.prepare(path)


def elapsed(started: float) -> float:
    return time.monotonic() - started
