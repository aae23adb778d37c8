"""A gate run as stages for the warehouse: tasks -> gate (per arm) -> deliveries on GT -> summary.

The Prefect flow (``flows/gate.py``) only sequences these functions. Stage ``gate`` writes
gate_decisions, gate_attempts and gate_messages; stage ``deliveries`` writes deliveries. Each stage
validates its frames against ``expectations/<table>.json`` first and then replaces its rows for the
run id in one transaction: a failed expectation writes nothing, a re-run of the same run id leaves
the same rows. The warehouse side (attempt, gate_runs row, stage writes, publish) is the run ledger's,
with the gate's family (``acceptgate.pipelines.families.GATE``); this module computes the run's frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping

import pandas as pd

from acceptgate import __version__

from acceptgate.scoring import profiles

from acceptgate._util import runids
from acceptgate.gates.delivery import ArmSummary, DeliveryRow, format_summary, summarize
from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_file, sha256_text
from acceptgate.gates import ARMS, DEFAULT_MAX_FPR_ATTACK, GATED_ARMS  # noqa: F401  (re-exported)
from acceptgate.gates.records import GateOutcome
from acceptgate.datasets.task import HIDDEN, VISIBLE, Task

PIPELINE = "gate/1"
Frames = Mapping[str, pd.DataFrame]

DECISION_COLUMNS = ["run_id", "arm", "task_id", "source", "visible_spec_hash", "decision", "stop_reason",
                    "attempts_used", "delivered_attempt", "delivered_sha256", "tokens_used", "wall_seconds",
                    "certification", "v_fpr_h"]
EXCLUSION_COLUMNS = ["run_id", "task_id", "stage", "reason"]
ATTEMPT_COLUMNS = ["run_id", "arm", "task_id", "attempt", "candidate_sha256", "origin", "sample_index",
                   "extraction", "program", "raw", "precheck", "v_verdict", "v_cases_passed", "v_cases_total",
                   "v_detail", "signature", "outcome", "prompt_tokens", "completion_tokens", "latency_seconds",
                   "exec_seconds"]
MESSAGE_COLUMNS = ["run_id", "arm", "task_id", "seq", "attempt", "author", "purpose", "role", "request",
                   "chat_index", "part", "text", "text_sha256"]
DELIVERY_COLUMNS = ["run_id", "arm", "task_id", "delivered", "refused", "attempts_used", "delivered_attempt",
                    "candidate_sha256", "hidden_spec_hash", "gt_verdict", "gt_first_failure", "gt_cases_total",
                    "false_delivery", "gt_seconds", "gt_profile"]
RUN_COLUMNS = ["run_id", "run_id_origin", "pipeline", "acceptgate_version", "source", "source_sha256",
               "tasks_from", "tasks_sha256", "task_count", "arms", "per_task", "backend", "gauge", "certify",
               "max_fpr_attack"]
GAUGE_CHECKED, GAUGE_SKIPPED = "checked", "skipped"  # gate_runs.gauge: every suite gauged, or --no-gauge
CERTIFY_CHECKED, CERTIFY_SKIPPED = "checked", "skipped"  # gate_runs.certify: every task certified, or --no-certify



def check_arms(arms: list[str]) -> list[str]:
    out: list[str] = []
    for arm in arms:
        if arm not in ARMS:
            raise InvalidInput(f"unknown arm {arm!r}; valid arms: {', '.join(ARMS)}", field="--arm")
        if arm not in out:
            out.append(arm)
    if not out:
        raise InvalidInput("name at least one arm", field="--arm")
    return out


def tasks_sha256(tasks: list[Task]) -> str:
    """One hash over every task's visible and hidden spec hashes (which tasks, which suites)."""
    lines = sorted(f"{t.task_id} {t.suites[VISIBLE].spec_hash} {t.suites[HIDDEN].spec_hash}" for t in tasks)
    return sha256_text("\n".join(lines))


def source_sha256(source_spec: str) -> str | None:
    """The samples file's hash for a replay source; None for a live model."""
    kind, _, arg = source_spec.partition(":")
    if kind in ("codet", "evalplus") and arg:
        try:
            return sha256_file(arg)
        except OSError as exc:
            raise InvalidInput(f"cannot read samples: {exc.strerror}", source=arg, field="--source") from None
    return None


def load_tasks(*, backend, humanevalplus: str | None = None, suites_dir: str | None = None,
               limit: int | None = None, progress: Callable[[int, int], None] | None = None,
               dataset: str | None = None, path: str | None = None,
               task_ids: Collection[str] | None = None) -> tuple[list[Task], str]:
    """The tasks to gate, with where they came from: a data set (imported now, through the import
    cache) or a suites directory written by ``acceptgate import``. Only tasks with both suites are kept.
    ``task_ids``: of a suites directory, only these tasks are read."""
    loaded = load_task_set(backend=backend, humanevalplus=humanevalplus, suites_dir=suites_dir, limit=limit,
                           progress=progress, dataset=dataset, path=path, task_ids=task_ids)
    return loaded.tasks, loaded.tasks_from


@dataclass(frozen=True)
class TaskSet:
    tasks: list[Task]  # gradeable tasks (both suites), after --limit
    tasks_from: str
    known: frozenset[str]  # every task id the input names, excluded ones included, before --limit
    recorded_gauge: dict[tuple[str, str], dict] = field(default_factory=dict)  # import --gauge verdicts


def tasks_input(*, humanevalplus: str | None = None, suites_dir: str | None = None, dataset: str | None = None,
                path: str | None = None) -> tuple[str | None, str | None, str | None]:
    """The one entrance: (data set name, its file, suites directory), exactly one of a data set or a
    suites directory. ``humanevalplus=FILE`` is ``dataset="humanevalplus", path=FILE``."""
    if humanevalplus is not None:
        if dataset is not None or path is not None:
            raise InvalidInput("--humanevalplus FILE is --dataset humanevalplus --path FILE: give one of them",
                               field="--humanevalplus")
        dataset, path = "humanevalplus", humanevalplus
    if path is not None and dataset is None:
        raise InvalidInput("--path names the file of a --dataset", field="--path")
    if (dataset is None) == (suites_dir is None):
        raise InvalidInput("give exactly one of --dataset NAME [--path FILE] or --suites DIR", field="--dataset")
    return dataset, path, suites_dir


def load_task_set(*, backend, humanevalplus: str | None = None, suites_dir: str | None = None,
                  limit: int | None = None, progress: Callable[[int, int], None] | None = None,
                  dataset: str | None = None, path: str | None = None,
                  task_ids: Collection[str] | None = None) -> TaskSet:
    dataset, path, suites_dir = tasks_input(humanevalplus=humanevalplus, suites_dir=suites_dir, dataset=dataset,
                                            path=path)
    from acceptgate.datasets import suitefiles
    if dataset is not None:
        from acceptgate.datasets import importcache
        from acceptgate.scoring import ingest
        result, _ = ingest.load_result(dataset, path, backend, limit=limit, cache_dir=importcache.flow_cache_dir(),
                                       progress=progress)
        known = {t.task_id for t in result.tasks} | {i.task_id for i in result.issues}
        if limit is not None:  # the import stopped at the limit: every id of the file is still known
            known |= _jsonl_task_ids(result.source)
        return TaskSet(gradeable(result.tasks), f"{result.source} (sha256 {result.source_sha256})", frozenset(known))
    sd = suitefiles.read_suites(suites_dir, task_ids=task_ids)  # known: then of the tasks read
    tasks = [Task(task_id=t.task_id, dataset=sd.dataset, entry_point=t.entry_point, prompt=t.prompt,
                  reference=t.reference, suites=dict(t.suites), reference_seconds=dict(t.reference_seconds),
                  contract=t.contract, wrong_samples=list(t.wrong_samples))
             for t in sd.tasks.values()]
    recorded = {k: v for t in sd.tasks.values() for k, v in t.recorded_gauge().items()}
    known = set(sd.tasks) | {i.task_id for i in sd.issues}
    if limit is not None:
        tasks = tasks[:limit]
    return TaskSet(gradeable(tasks), f"{suites_dir} ({sd.dataset}, source sha256 {sd.source_sha256})",
                   frozenset(known), recorded)


def _jsonl_task_ids(path: str) -> set[str]:
    from acceptgate.datasets.importers.common import read_jsonl

    rows, _ = read_jsonl(path, {"task_id": str})
    return {r["task_id"] for r in rows}


@dataclass
class SourceCoverage:
    """What a replay source holds against the tasks of a run, so that no denominator moves silently.

    ``invalid``: records that cannot be drawn (a bad line, or a task id the tasks do not know), each
    named by file, line and field. ``no_samples``: gradeable tasks the source has nothing for; they
    are not gated (a gate given nothing would 'refuse' and inflate the rates' denominators) and are
    named in the summary.
    """

    source: str
    invalid: list[str] = field(default_factory=list)
    no_samples: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = []
        if self.invalid:
            out.append(f"invalid: {len(self.invalid)} records of {self.source} not drawn: "
                       + "; ".join(self.invalid[:10]) + (" ..." if len(self.invalid) > 10 else ""))
        if self.no_samples:
            out.append(f"not gated: {len(self.no_samples)} tasks without samples in {self.source}: "
                       + ", ".join(self.no_samples[:10]) + (" ..." if len(self.no_samples) > 10 else ""))
        return out


def source_coverage(source, source_spec: str, tasks: list[Task], known: frozenset[str] | set[str], *,
                    strict: bool = False) -> SourceCoverage:
    """Compare the source's records with the tasks (``source`` an open CandidateSource). With
    ``strict``, an invalid record is an error (InvalidInput naming file, line and field)."""
    cov = SourceCoverage(source_spec)
    path = getattr(source, "path", source_spec)
    for problem in getattr(source, "problems", ()):
        cov.invalid.append(f"{path}: {problem}")
    lines = getattr(source, "lines", {})
    for tid in sorted(set(lines) - set(known)):
        for line in lines[tid]:
            cov.invalid.append(f"{path}: line {line}, field 'task_id': unknown task id {tid!r} (not in the tasks)")
    ids = source.task_ids()
    if ids is not None:
        cov.no_samples = [t.task_id for t in tasks if not source.available(t.task_id)]
    if strict and cov.invalid:
        first = cov.invalid[0]
        more = f" (and {len(cov.invalid) - 1} more invalid records)" if len(cov.invalid) > 1 else ""
        raise InvalidInput(first + more, field="--strict")
    return cov


def covered(tasks: list[Task], coverage: SourceCoverage) -> list[Task]:
    skip = set(coverage.no_samples)
    return [t for t in tasks if t.task_id not in skip]


def gradeable(tasks: list[Task]) -> list[Task]:
    """Tasks with both suites (an importer may keep a task whose hidden suite was excluded)."""
    return [t for t in tasks if VISIBLE in t.suites and HIDDEN in t.suites]


@dataclass(frozen=True)
class GateRun:
    run_id: str
    run_id_origin: str
    source: str
    source_sha256: str | None
    tasks_from: str
    tasks_sha256: str
    task_count: int
    arms: tuple[str, ...]
    per_task: int
    backend: str
    gauge: str = GAUGE_CHECKED
    certify: str = CERTIFY_CHECKED
    max_fpr_attack: float | None = None  # the policy's limit on V's measured FPR_h (None: no limit)
    # tasks left out of the run before any gate, each (task id, stage: certification | gauge, reason)
    exclusions: tuple[tuple[str, str, str], ...] = ()

    def frame(self) -> pd.DataFrame:
        row = {"run_id": self.run_id, "run_id_origin": self.run_id_origin, "pipeline": PIPELINE,
               "acceptgate_version": __version__, "source": self.source, "source_sha256": self.source_sha256,
               "tasks_from": self.tasks_from, "tasks_sha256": self.tasks_sha256, "task_count": self.task_count,
               "arms": ",".join(self.arms), "per_task": self.per_task, "backend": self.backend,
               "gauge": self.gauge, "certify": self.certify, "max_fpr_attack": self.max_fpr_attack}
        return pd.DataFrame([row], columns=RUN_COLUMNS).astype({"max_fpr_attack": "Float64"})


def make_run(*, source: str, tasks: list[Task], tasks_from: str, arms: list[str], per_task: int,
             backend: str, run_id: str, run_id_origin: str = "user", gauge: str = GAUGE_CHECKED,
             certify: str = CERTIFY_CHECKED, max_fpr_attack: float | None = None,
             exclusions: tuple[tuple[str, str, str], ...] = (), digest: str | None = None) -> GateRun:
    """The run's row: ``run_id`` is the user's (checked) or one derived from these inputs
    (``GateRequest.derive_run_id``, origin 'derived'); ``digest``: ``tasks_sha256(tasks)`` if known."""
    digest = digest or tasks_sha256(tasks)
    src_hash = source_sha256(source)
    run_id, origin = runids.check_run_id(run_id) if run_id_origin == "user" else run_id, run_id_origin
    return GateRun(run_id, origin, source, src_hash, tasks_from, digest, len(tasks), tuple(arms), per_task,
                   backend, gauge, certify, max_fpr_attack, tuple(exclusions))


# -- frames -----------------------------------------------------------------------------------------

def _frame(rows: list[dict[str, Any]], columns: list[str], ints: tuple[str, ...] = ()) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns).astype({c: "Int64" for c in ints})


# The gate stage's tables: their columns and the integer columns that may be null (pandas Int64).
GATE_STAGE_COLUMNS = {
    "gate_decisions": (DECISION_COLUMNS, ("attempts_used", "delivered_attempt", "tokens_used")),
    "gate_exclusions": (EXCLUSION_COLUMNS, ()),
    "gate_attempts": (ATTEMPT_COLUMNS, ("attempt", "sample_index", "v_cases_passed", "v_cases_total",
                                        "prompt_tokens", "completion_tokens")),
    "gate_messages": (MESSAGE_COLUMNS, ("seq", "attempt", "request", "chat_index", "part")),
}


def gate_stage_frame(table: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One gate-stage table's frame from its rows (also rows kept elsewhere, e.g. the service's journal)."""
    columns, ints = GATE_STAGE_COLUMNS[table]
    frame = _frame(rows, columns, ints)
    return frame.astype({"v_fpr_h": "Float64"}) if table == "gate_decisions" else frame


def gate_frames(run: GateRun, outcomes: list[GateOutcome]) -> dict[str, pd.DataFrame]:
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in GATE_STAGE_COLUMNS}
    for o in outcomes:
        key = {"run_id": run.run_id, "arm": o.arm, "task_id": o.task_id}
        rows["gate_decisions"].append({**key, **{k: v for k, v in o.as_row().items() if k not in key}})
        rows["gate_attempts"] += [{**key, **a.as_row()} for a in o.attempts]
        rows["gate_messages"] += [{**key, **m.as_row()} for m in o.messages]
    rows["gate_exclusions"] = [{"run_id": run.run_id, "task_id": t, "stage": stage, "reason": why}
                               for t, stage, why in run.exclusions]
    return {table: gate_stage_frame(table, r) for table, r in rows.items()}


def delivery_frames(run: GateRun, rows: list[DeliveryRow]) -> dict[str, pd.DataFrame]:
    data = [{"run_id": run.run_id, **r.as_row()} for r in rows]
    return {"deliveries": _frame(data, DELIVERY_COLUMNS, ("attempts_used", "delivered_attempt",
                                                          "gt_first_failure", "gt_cases_total"))}


# -- summary ---------------------------------------------------------------------------------------

def is_replay(source: str) -> bool:
    """A replayed samples file (codet:, evalplus:): no model reads what a gate sends."""
    return source.split(":", 1)[0] in ("codet", "evalplus")


@dataclass
class GateSummary:
    run: GateRun
    arms: dict[str, ArmSummary]
    # arm -> the measured FPR_h of the V that gated it (mean over its tasks), as printed; OFF: no V
    fpr_h: dict[str, str] | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # per arm (gate) and 'deliveries'
    stages: list = field(default_factory=list)  # the run ledger's StageWrite of each stage written
    warehouse: str = ""
    coverage: SourceCoverage | None = None
    snapshot: str = ""
    timing: str = ""  # where the run's time went, by phase (printed with --verbose)

    def certification_lines(self) -> list[str]:
        run = self.run
        if run.certify != CERTIFY_CHECKED:
            out = ["certification: skipped (--no-certify): tasks used without a certification record"]
        else:
            limit = "none" if run.max_fpr_attack is None else f"{run.max_fpr_attack:g}%"
            out = [f"certification: every task gated has a certification record for its suites and pool; V's FPR_h "
                   f"measured there is shown beside each gated arm's rates (policy --max-fpr-attack: {limit})"]
        if run.exclusions:
            out.append(f"excluded before any gate: {len(run.exclusions)} tasks: " + "; ".join(
                f"{t} ({stage}: {why[:160]})" for t, stage, why in run.exclusions[:5])
                + (" ..." if len(run.exclusions) > 5 else "") + " (table gate_exclusions)")
        return out

    def lines(self) -> list[str]:
        invalid = len(self.coverage.invalid) if self.coverage else 0
        out = [f"gate run {self.run.run_id}: {self.run.task_count} tasks, source {self.run.source} "
               f"({invalid} invalid records), arms {', '.join(self.run.arms)}"]
        if self.coverage:
            out += self.coverage.lines()
        out.append("gauge: every visible and hidden suite used has a passing gauge record" if self.run.gauge == GAUGE_CHECKED
                   else "gauge: skipped (--no-gauge): suites used without the gauge check")
        out += self.certification_lines()
        out += format_summary(self.arms, fpr_h=self.fpr_h).splitlines()
        if "hmix" in self.run.arms and is_replay(self.run.source):
            out.append("hmix on a replayed source: resampling, not revision -- no model receives its feedback "
                       "(recorded with role none); its rates measure redrawing recorded samples")
        for arm in self.run.arms:
            if arm in self.seconds and self.seconds[arm] > 0:
                out.append(f"{arm}: {self.seconds[arm]:.1f} s, "
                           f"{self.run.task_count / self.seconds[arm]:.1f} tasks/s")
        if "deliveries" in self.seconds:
            out.append(f"GT scoring of delivered programs: {self.seconds['deliveries']:.1f} s")
        if self.warehouse:
            out.append(f"warehouse: {self.warehouse} (tables gate_runs, gate_decisions, gate_attempts, "
                       f"gate_messages, gate_exclusions, deliveries; view gate_rates)")
        if self.snapshot:
            out.append(f"snapshot: {self.snapshot} (read-only, for analysts: acceptgate sql \"...\")")
        return out


def summarize_rows(run: GateRun, rows: list[DeliveryRow]) -> dict[str, ArmSummary]:
    by_arm = summarize(rows)
    return {arm: by_arm[arm] for arm in run.arms if arm in by_arm}


def fpr_h_by_arm(run: GateRun, outcomes: list[GateOutcome]) -> dict[str, str]:
    """arm -> the mean measured FPR_h of V over the tasks the arm gated, as printed ("-": OFF, no V;
    "not measured": --no-certify)."""
    out = {}
    for arm in run.arms:
        if arm not in GATED_ARMS:
            out[arm] = "- (no V)"
            continue
        values = [o.v_fpr_h for o in outcomes if o.arm == arm and o.v_fpr_h is not None]
        out[arm] = f"{sum(values) / len(values):.1f}% ({len(values)} tasks)" if values else "not measured"
    return out


def hidden_suites(tasks: list[Task]) -> dict[str, Any]:
    return {t.task_id: t.suites[HIDDEN] for t in tasks}


def hidden_timing(tasks: list[Task]) -> dict[str, list[float]]:
    """task_id -> the reference's time per GT case, where the import recorded it (the evalplus profile)."""
    return {t.task_id: t.reference_seconds[HIDDEN] for t in tasks if HIDDEN in t.reference_seconds}


def check_profile(profile: str, tasks: list[Task]) -> str:
    """The GT scoring profile, refused before any gate runs when it cannot score every task."""
    try:
        profiles.check(profile)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--profile") from None
    if profile == profiles.EVALPLUS:
        missing = sorted({t.task_id for t in tasks} - set(hidden_timing(tasks)))
        if missing:
            raise InvalidInput(f"the evalplus profile needs the reference's time per hidden case, and {len(missing)} "
                               f"tasks have none (e.g. {missing[0]}); re-import them with 'acceptgate import'",
                               field="--profile")
    return profile

