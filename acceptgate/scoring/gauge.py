"""The gauge check: a suite is usable only if it can tell right from wrong.

For every suite of a task, the reference must pass and every known wrong sample must be blocked
(verdict other than pass). A suite that fails is marked not usable, with the reasons. The known
wrong samples are the task's own (a suites directory's ``wrong/`` programs, an API client's) and the
generic ones written from the task's signature: ``return None``, ``raise``, constant returns (0, '',
[], False, True) and "echo the first argument".

What makes a generic sample *wrong* is the reference on the hidden inputs, never the suite being
gauged: one that passes a suite while failing the hidden suite (the reference's answers on every
hidden input) makes that suite's gauge fail, naming the sample. Only a generic sample that passes the
hidden suite too is "not wrong" for the task, and is left out with its reason (a constant that is
every hidden expected value, ``gauge_plan``; any other, noted when its hidden run passes). A task's
own wrong sample is wrong by its provenance (a known wrong program): any suite it passes, the hidden
one included, fails. Without a hidden suite a pass fails the suite too.

``assess`` gives one record per suite, with its reasons, and raises nothing: a caller excludes
the tasks it names (``GaugeCheck.failed_tasks``). ``require`` makes the check a precondition of a whole
batch: any failing suite is InvalidInput naming the task. A record is kept for the suite's exact
spec_hash and the hidden suite it was judged against.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from acceptgate.suites import dialects, render, suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_text
from acceptgate.datasets.importers.docstring import function_def
from acceptgate.datasets.importers.signature import first_parameter, parameter_list
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import ExecutionResult, execute_many
from acceptgate.suites.suitespec import SuiteSpec
from acceptgate.datasets.wrongs import (GENERIC_LABELS, gauge_plan, generic_wrong_samples)  # noqa: F401
from acceptgate.datasets.task import HIDDEN, SUITE_KINDS, ImportIssue, Task, WrongSample

@dataclass
class SuiteGauge:
    task_id: str
    suite: str  # visible | hidden
    spec_hash: str
    render_hash: str
    passed: bool
    reasons: list[str]
    reference: ExecutionResult
    wrong: list[tuple[WrongSample, ExecutionResult]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # samples found not wrong (they pass the hidden suite)
    hidden: list[ExecutionResult] | None = None  # each wrong sample on the hidden suite (None: no hidden suite)


@dataclass
class GaugeResult:
    task_id: str
    suites: list[SuiteGauge]

    @property
    def usable_suites(self) -> list[str]:
        return [s.suite for s in self.suites if s.passed]


def check_many(tasks: list[Task], backend: Backend, *, progress: Callable[[int, int], None] | None = None,
               limits: Limits = Limits(), kinds: dict[str, list[str]] | None = None) -> list[GaugeResult]:
    """Gauge the suites of every task (``kinds``: task id -> the suites to gauge; default all of them):
    the reference on each suite, then each wrong sample on each -- and on the hidden suite, which
    decides whether a sample that passes a suite is wrong at all.

    References and wrong samples run as on every hidden suite: in blocks fixed before the run, up to
    the first block boundary after a failing case (no sample learns from being called again whether
    its previous answer passed; a passing reference runs every case). Both batches go through
    ``execute_many``, so all cores are used.
    """
    slots: list[tuple[Task, str, SuiteSpec, render.Harness]] = []
    runs: list[tuple[Task, str, render.Harness]] = []  # every suite a wrong sample runs on
    for task in tasks:
        asked = [k for k in SUITE_KINDS if k in task.suites and (kinds is None or k in kinds.get(task.task_id, ()))]
        for kind in dict.fromkeys(asked + ([HIDDEN] if HIDDEN in task.suites and asked else [])):
            harness = render.harness_for(task.suites[kind])
            runs.append((task, kind, harness))
            if kind in asked:
                slots.append((task, kind, task.suites[kind], harness))
    ref_jobs = [(h, task.reference) for task, _, _, h in slots]
    wrong_jobs = [(h, ws.source) for task, _, h in runs for ws in task.wrong_samples]
    total = len(ref_jobs) + len(wrong_jobs)

    def shifted(offset: int):
        return None if progress is None else (lambda done, _n: progress(offset + done, total))

    ref_results = execute_many(ref_jobs, backend, limits=limits, progress=shifted(0))
    wrong_results = execute_many(wrong_jobs, backend, limits=limits,
                                 progress=shifted(len(ref_jobs)))
    wrong_on: dict[tuple[str, str], list[ExecutionResult]] = {}
    cursor = 0
    for task, kind, _ in runs:
        wrong_on[(task.task_id, kind)] = wrong_results[cursor: cursor + len(task.wrong_samples)]
        cursor += len(task.wrong_samples)
    by_task: dict[str, GaugeResult] = {t.task_id: GaugeResult(t.task_id, []) for t in tasks}
    for (task, kind, spec, harness), ref in zip(slots, ref_results):
        wrong = list(zip(task.wrong_samples, wrong_on[(task.task_id, kind)]))
        hidden = wrong_on.get((task.task_id, HIDDEN))
        by_task[task.task_id].suites.append(_judge(task, kind, spec, harness, ref, wrong, hidden))
    return [by_task[t.task_id] for t in tasks]


def check(task: Task, backend: Backend, *, limits: Limits = Limits()) -> GaugeResult:
    return check_many([task], backend, limits=limits)[0]


def _judge(task: Task, kind: str, spec: SuiteSpec, harness: render.Harness, ref: ExecutionResult,
           wrong: list[tuple[WrongSample, ExecutionResult]],
           hidden: list[ExecutionResult] | None = None) -> SuiteGauge:
    """``hidden``: each wrong sample's result on the hidden suite (None: the task has none)."""
    reasons: list[str] = []
    if ref.verdict != "pass":
        reasons.append(f"reference does not pass the {kind} suite: {ref.verdict}"
                       f"{' (' + ref.detail + ')' if ref.detail else ''}{_failure_text(ref)}")
    if not wrong:
        reasons.append("no wrong sample to block")
    notes: list[str] = []
    for i, (sample, result) in enumerate(wrong):
        if result.verdict != "pass":
            continue
        if hidden is None or sample.label not in GENERIC_LABELS:
            # no hidden suite to judge by, or a known-wrong program of the task's own (wrong by its
            # provenance): passing is the suite's failure
            reasons.append(f"wrong sample {sample.label} passes the {kind} suite")
        elif hidden[i].verdict == "pass":
            notes.append(f"{sample.label} passes the hidden suite too: right on every hidden input, not wrong")
        else:
            reasons.append(f"wrong sample {sample.label} passes the {kind} suite but fails the reference on the "
                           f"hidden inputs ({hidden[i].verdict}{_failure_text(hidden[i])})")
    return SuiteGauge(task.task_id, kind, spec.spec_hash, harness.render_hash, not reasons, reasons, ref, wrong, notes,
                      hidden)


def _failure_text(result: ExecutionResult) -> str:
    bad = result.first_failure
    if bad is None:
        return ""
    failing = sum(1 for c in result.cases if c.status != "pass")
    parts = [f"; {failing} failing case(s) of {len(result.cases)} run, first: case {bad.index} {bad.status}"]
    if bad.args is not None:
        parts.append(f" args={bad.args}")
    if bad.got is not None:
        parts.append(f" got={bad.got}")
    if bad.want is not None:
        parts.append(f" want={bad.want}")
    if bad.error_type:
        parts.append(f" {bad.error_type}: {bad.message or ''}")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# the precondition: a suite is used only with a passing gauge record for its exact spec_hash

# /2: a wrong sample is judged wrong by the hidden suite (the reference on every hidden input), never by
# the suite gauged; records and import verdicts of another format are checked again
from acceptgate.datasets.suitefiles import RECORD_FORMAT  # noqa: E402  (the manifest stores the records)
NO_GAUGE_HINT = "--no-gauge uses suites without this check"


@dataclass(frozen=True)
class GaugeRecord:
    task_id: str
    suite: str
    spec_hash: str
    passed: bool
    reasons: tuple[str, ...]
    origin: str  # manifest (import --gauge) | stored (an earlier check) | computed (now)


@dataclass
class GaugeCheck:
    """What ``assess`` found: one record per suite asked about (``require``: all passing), and how many
    it had to compute."""

    records: list[GaugeRecord]
    computed: int = 0

    @property
    def failed(self) -> list[GaugeRecord]:
        return [r for r in self.records if not r.passed]

    def failed_tasks(self) -> dict[str, str]:
        """task id -> why (its first failing suite and the reasons): what a caller excludes."""
        out: dict[str, str] = {}
        for r in self.failed:
            out.setdefault(r.task_id, f"its {r.suite} suite failed the gauge check: {'; '.join(r.reasons)}")
        return out

    def passing(self) -> "GaugeCheck":
        return GaugeCheck([r for r in self.records if r.passed], self.computed)

    def line(self) -> str:
        usable = [r for r in self.records if r.passed]
        by = {o: sum(1 for r in usable if r.origin == o) for o in ("manifest", "stored", "computed")}
        failed = f"; {len(self.failed)} unusable" if self.failed else ""
        return (f"gauge: {len(usable)} suites usable ({by['manifest']} recorded at import, "
                f"{by['stored']} from earlier checks, {by['computed']} checked now){failed}")


def records_dir() -> Path:
    """Where computed gauge records are kept: ``gauge/`` in the import cache's directory."""
    from acceptgate.datasets import importcache  # importcache -> importers -> gauge: import when used

    return importcache.default_dir() / "gauge"


def _record_key(task: Task, kind: str, wrong: list[WrongSample], limits: Limits) -> dict[str, Any]:
    """Everything a record's verdict depends on: the suite (spec_hash), the reference, the wrong
    samples, the sandbox limits and the code that renders and runs them."""
    from acceptgate.datasets import importcache
    hidden = task.suites.get(HIDDEN)
    return {"format": RECORD_FORMAT, "spec_hash": task.suites[kind].spec_hash,
            "hidden_spec_hash": hidden.spec_hash if hidden is not None else None,
            "reference_sha256": sha256_text(task.reference),
            "wrong_sha256": sha256_text("\0".join(f"{w.label}\0{w.source}" for w in wrong)),
            "limits": [limits.wall_seconds, limits.cpu_seconds, limits.memory_bytes],
            "code_sha256": importcache.code_sha256()}


def _record_path(store: Path, key: dict[str, Any]) -> Path:
    return store / f"{sha256_text(json.dumps(key, sort_keys=True))}.json"


def _read_record(store: Path | None, key: dict[str, Any], task_id: str, kind: str) -> GaugeRecord | None:
    if store is None:
        return None
    try:
        doc = json.loads(_record_path(store, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("passed"), bool):
        return None
    return GaugeRecord(task_id, kind, key["spec_hash"], doc["passed"], tuple(doc.get("reasons") or ()), "stored")


def _write_record(store: Path | None, key: dict[str, Any], s: SuiteGauge) -> None:
    if store is None:
        return
    from acceptgate._util import outputs
    doc = {"key": key, "task_id": s.task_id, "suite": s.suite, "passed": s.passed, "reasons": s.reasons,
           "notes": s.notes,
           "render_hash": s.render_hash, "reference_verdict": s.reference.verdict,
           "wrong_total": len(s.wrong), "wrong_blocked": sum(1 for _, r in s.wrong if r.verdict != "pass")}
    try:
        outputs.write_atomic(_record_path(store, key), json.dumps(doc, sort_keys=True) + "\n")
    except OSError:
        pass  # a store that cannot be written only costs a re-check next time


def require(tasks: list[Task], backend: Backend, *, kinds: tuple[str, ...] = SUITE_KINDS,
            recorded: dict[tuple[str, str], dict] | None = None, store: Path | None = None,
            limits: Limits = Limits(), progress: Callable[[int, int], None] | None = None) -> GaugeCheck:
    """Every suite of ``kinds`` of every task needs a passing gauge record (``assess``); a failing one
    is InvalidInput naming the task (exit 2): nothing runs on a suite that cannot tell right from wrong."""
    check = assess(tasks, backend, kinds=kinds, recorded=recorded, store=store, limits=limits, progress=progress)
    refuse_failed(check)
    return check


def refuse_failed(check: GaugeCheck) -> None:
    """InvalidInput (exit 2) naming the first failed suite, if any."""
    failed = check.failed
    if failed:
        first = failed[0]
        more = f" (and {len(failed) - 1} more failed suites)" if len(failed) > 1 else ""
        raise InvalidInput(f"task {first.task_id}: its {first.suite} suite failed the gauge check: "
                           f"{'; '.join(first.reasons)}{more}. A suite is used only when its reference passes and "
                           f"every known wrong sample is blocked; {NO_GAUGE_HINT}", field="--no-gauge")


def assess(tasks: list[Task], backend: Backend, *, kinds: tuple[str, ...] = SUITE_KINDS,
           recorded: dict[tuple[str, str], dict] | None = None, store: Path | None = None,
           limits: Limits = Limits(), progress: Callable[[int, int], None] | None = None) -> GaugeCheck:
    """A gauge record for every suite of ``kinds`` of every task, passing or not, for its exact spec_hash:
    one ``recorded`` at import (a suite directory's manifest, ``(task_id, kind) -> {passed, reasons,
    format}``, used when of this record format), one in ``store`` from an earlier check, or one computed
    now from the task's reference and wrong samples (and then stored, if it passed). A suite with no
    record and no reference is InvalidInput naming the task (nothing can gauge it); every other outcome
    is a record the caller acts on (``GaugeCheck.failed_tasks``)."""
    records: list[GaugeRecord] = []
    todo: dict[str, tuple[Task, list[str]]] = {}
    keys: dict[tuple[str, str], dict[str, Any]] = {}
    for task in tasks:
        for kind in kinds:
            spec = task.suites.get(kind)
            if spec is None:
                continue
            mark = (recorded or {}).get((task.task_id, kind))
            if isinstance(mark, dict) and isinstance(mark.get("passed"), bool) and mark.get("format") == RECORD_FORMAT:
                records.append(GaugeRecord(task.task_id, kind, spec.spec_hash, mark["passed"],
                                           tuple(mark.get("reasons") or ()), "manifest"))
                continue
            if not task.reference:
                raise InvalidInput(f"task {task.task_id}: its {kind} suite (spec_hash {spec.spec_hash[:16]}) has no "
                                   "gauge record and no reference to gauge it with; re-import the suites "
                                   f"('acceptgate import' keeps the reference, '--gauge' records the check), or "
                                   f"{NO_GAUGE_HINT}", field="--no-gauge")
            wrong = list(task.wrong_samples) + [w for w in generic_wrong_samples(task)
                                                if w.label not in {x.label for x in task.wrong_samples}]
            key = keys[(task.task_id, kind)] = _record_key(task, kind, wrong, limits)
            found = _read_record(store, key, task.task_id, kind)
            if found is not None:
                records.append(found)
            else:
                todo.setdefault(task.task_id, (dataclasses.replace(task, wrong_samples=wrong), []))[1].append(kind)
    computed = 0
    if todo:  # only the suites without a record are gauged (the hidden suite runs too, to judge samples)
        subset = [t for t, _ in todo.values()]
        asked = {t.task_id: ks for t, ks in todo.values()}
        results = _retry_slow_references(subset, check_many(subset, backend, progress=progress, limits=limits,
                                                            kinds=asked), backend)
        for result in results:
            for s in result.suites:
                if s.passed:  # a failure is checked again next time: it may be a timeout under load
                    _write_record(store, keys[(s.task_id, s.suite)], s)
                records.append(GaugeRecord(s.task_id, s.suite, s.spec_hash, s.passed, tuple(s.reasons), "computed"))
                computed += 1
    return GaugeCheck(records, computed)


# A reference that ran out of time or memory says nothing about whether the suite tells right from
# wrong (a large suite on a loaded machine): it is run again, alone, with the importers' retry limits.
SLOW_REFERENCE_LIMITS = Limits(wall_seconds=120.0, cpu_seconds=121, memory_bytes=2 * 1024 ** 3)


def _retry_slow_references(tasks: list[Task], results: list[GaugeResult], backend: Backend) -> list[GaugeResult]:
    by_id = {t.task_id: t for t in tasks}
    for result in results:
        task = by_id[result.task_id]
        for i, s in enumerate(result.suites):
            if s.reference.verdict not in ("timeout", "memory"):
                continue
            harness = render.harness_for(task.suites[s.suite])
            (ref,) = execute_many([(harness, task.reference)], backend, limits=SLOW_REFERENCE_LIMITS)
            result.suites[i] = _judge(task, s.suite, task.suites[s.suite], harness, ref, s.wrong, s.hidden)
    return results


def assess_dir(suite_dir: Any, backend: Backend, *, kinds: tuple[str, ...] = SUITE_KINDS,
               task_ids: set[str] | None = None, references: dict[str, str] | None = None,
               store: Path | None = None, progress: Callable[[int, int], None] | None = None) -> GaugeCheck:
    """``assess`` for the tasks of a read suite directory (``suitefiles.SuiteDir``; ``task_ids``: only
    these), with the verdicts its import recorded and the references it holds (``references``: others,
    e.g. certify's gold); computed records go to ``store``, by default ``records_dir()``."""
    tasks, recorded = suite_dir.gauge_inputs(task_ids=task_ids, references=references)
    return assess(tasks, backend, kinds=kinds, recorded=recorded, store=records_dir() if store is None else store,
                  progress=progress)
