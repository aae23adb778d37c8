"""Coarse shards of sandbox executions, for scale-out on a cluster: the one sharded path of every
execution-heavy stage (score, gate, certify, the audit's executions, the leak backfill). Prefect-free;
``flows/score_sharded.py`` and ``flows/dask_runner.py`` map the shards as Prefect tasks on Dask.

A shard is a batch of work with the inputs it needs, plain picklable data (samples and suites; tasks
and the source's candidates; certification materials; history records). The machine that runs it
opens its own sandbox backend by name and runs the same functions as the single-process stage, so a
shard's rows cannot differ from the single-process ones by construction, only by the host; the client
merges them in the single-process order and writes them (the warehouse has one writer). Shards are
large because each one pays for a backend start (the fork-server pool: ~0.1-0.5 s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping

from acceptgate.scoring import profiles, score
from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.datasets.samples import Sample, SampleFile, read_samples
from acceptgate.suites.suitespec import SuiteSpec
from acceptgate.pipelines.requests import DEFAULT_RECORDS_PER_SHARD, DEFAULT_TASKS_PER_SHARD

DEFAULT_SHARD_SIZE = 400  # samples; a few seconds of work per shard on the local fork server


class Shard:
    """One batch: its samples and only the suites and prompts they need.

    A plain class on purpose, not a dataclass: an orchestrator that walks dataclasses and models
    looking for futures (Prefect does, before each task) treats it as one opaque value instead of
    visiting its thousands of nested cases."""

    __slots__ = ("index", "samples_path", "samples", "suites", "prompts", "timing")

    def __init__(self, index: int, samples_path: str, samples: tuple[Sample, ...],
                 suites: Mapping[str, SuiteSpec], prompts: Mapping[str, str],
                 timing: Mapping[str, list[float]] | None = None) -> None:
        self.index = index
        self.samples_path = samples_path
        self.samples = samples
        self.suites = dict(suites)
        self.prompts = dict(prompts)
        self.timing = dict(timing or {})  # task -> the reference's time per case (the evalplus profile)

    def __repr__(self) -> str:
        return f"Shard({self.index}, {len(self.samples)} samples, {len(self.suites)} suites)"


@dataclass(frozen=True)
class ShardResult:
    index: int
    rows: list[score.ScoredSample]
    seconds: float
    worker: str  # host:pid of the process that ran it


@dataclass(frozen=True)
class Inputs:
    sample_file: SampleFile
    suites: Mapping[str, SuiteSpec]
    prompts: Mapping[str, str]
    excluded: Mapping[str, str]
    timing: Mapping[str, list[float]]  # empty unless the profile needs it


def load_inputs(suites_dir: str, samples: str, suite: str, *, limit: int | None = None,
                per_task: int | None = None, profile: str = profiles.DEFAULT) -> Inputs:
    """Read the suites directory and the samples file as ``acceptgate score`` does; optionally only the
    first ``limit`` tasks of the suites and the first ``per_task`` samples of each task."""
    from acceptgate.datasets import suitefiles
    sample_file = read_samples(samples)
    read = score.inputs_of(suitefiles.read_suites(suites_dir), suite)  # the directory read once
    suites, prompts, excluded = read.suites, read.prompts, read.excluded
    timing = {}
    if profiles.check(profile) == profiles.EVALPLUS:
        score.require_timing(read, suites_dir)
        timing = read.timing
    if limit is not None:
        known = sorted(set(suites) | set(excluded), key=_task_order)[:limit]
        suites = {t: suites[t] for t in known if t in suites}
        excluded = {t: excluded[t] for t in known if t in excluded}
        keep = set(known)
        sample_file = SampleFile(sample_file.path, [s for s in sample_file.samples if s.task_id in keep],
                                 sample_file.problems)
    if per_task is not None:
        sample_file = SampleFile(sample_file.path, [s for s in sample_file.samples if s.index < per_task],
                                 sample_file.problems)
    return Inputs(sample_file, suites, prompts, excluded, timing)


def _task_order(task_id: str) -> tuple[str, int]:
    prefix, _, number = task_id.rpartition("/")
    return (prefix, int(number)) if number.isdigit() else (task_id, -1)


def make_shards(sample_file: SampleFile, suites: Mapping[str, SuiteSpec], prompts: Mapping[str, str],
                shard_size: int = DEFAULT_SHARD_SIZE, timing: Mapping[str, list[float]] | None = None) -> list[Shard]:
    """Batches of at most ``shard_size`` scorable samples, in file order (one task's samples stay
    together when they fit, so a shard carries few suites)."""
    if shard_size < 1:
        raise InvalidInput("must be at least 1", field="--shard-size")
    scorable = [s for s in sample_file.samples if s.task_id in suites]
    shards = []
    for start in range(0, len(scorable), shard_size):
        batch = tuple(scorable[start:start + shard_size])
        tids = {s.task_id for s in batch}
        shards.append(Shard(len(shards), sample_file.path, batch, {t: suites[t] for t in tids},
                            {t: prompts[t] for t in tids if t in prompts},
                            {t: timing[t] for t in tids if t in (timing or {})}))
    return shards


def score_shard(shard: Shard, backend: str, *, suite: str, fail_fast: bool = True, workers: int = 1,
                limits: Limits = Limits(), profile: str = profiles.DEFAULT) -> ShardResult:
    """Score one shard here: open the named backend, score, close it."""
    import os
    import socket

    started = time.monotonic()
    with backends.create(backend) as sandbox:
        report = score.score_samples(SampleFile(shard.samples_path, list(shard.samples), []), shard.suites,
                                     shard.prompts, sandbox, suite=suite, fail_fast=fail_fast, workers=workers,
                                     limits=limits, profile=profile, reference_seconds=shard.timing)
    return ShardResult(shard.index, report.rows, time.monotonic() - started, f"{socket.gethostname()}:{os.getpid()}")


@dataclass
class ShardedScore:
    report: score.ScoreReport
    shards: int
    samples_by_worker: dict[str, int]  # how the shards spread over the cluster

    def summary(self) -> str:
        return (self.report.summary() + f"\n{self.shards} shards on {len(self.samples_by_worker)} Dask workers: "
                + ", ".join(f"{w} {n} samples" for w, n in sorted(self.samples_by_worker.items())))


def merge(sample_file: SampleFile, suites: Mapping[str, SuiteSpec], excluded: Mapping[str, str] | None,
          results: list[ShardResult], *, suite: str, fail_fast: bool, wall_seconds: float,
          unusable: Mapping[str, str] | None = None, prompts: Mapping[str, str] | None = None,
          profile: str = profiles.DEFAULT) -> ShardedScore:
    """One report, rows in file order, as ``score_samples`` gives for the whole file at once."""
    rows = [row for res in sorted(results, key=lambda r: r.index) for row in res.rows]
    skipped: dict[str, tuple[int, str]] = {}
    refused = []
    for s in sample_file.samples:
        if s.task_id in suites and s.task_id in (unusable or {}):
            refused.append(score.unusable_row(s, suites[s.task_id], prompts or {}, unusable[s.task_id], profile))
        elif s.task_id not in suites:
            count, _ = skipped.get(s.task_id, (0, ""))
            skipped[s.task_id] = (count + 1, (excluded or {}).get(s.task_id, "no suite"))
    by_worker: dict[str, int] = {}
    for res in results:
        by_worker[res.worker] = by_worker.get(res.worker, 0) + len(res.rows)
    report = score.ScoreReport(sample_file.path, suite, fail_fast, rows, sample_file.problems, wall_seconds, skipped,
                               unusable=refused)
    return ShardedScore(report, len(results), by_worker)


# -- the one sharded execution path of every execution-heavy stage ---------------------------------------
#
# A stage splits its items (samples, tasks, records) into coarse shards that carry their inputs as plain
# picklable data; a worker runs one shard with the same core functions as the single-process stage and
# returns rows; the client merges the rows in the single-process order and writes them through the run
# ledger (the warehouse has one writer). The flows submit one Prefect task per shard, on whatever task
# runner the flow has (Prefect's DaskTaskRunner for --dask).



def split(items: list, size: int) -> list[list]:
    """Consecutive batches of at most ``size`` items, in order."""
    if size < 1:
        raise InvalidInput("must be at least 1", field="--shard-size")
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def worker_name() -> str:
    import os
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


class GateShard:
    """A few tasks (with their suites) and the source's candidates for them: every arm gates them end
    to end, then the delivered programs run on the tasks' hidden suites. Plain class (see ``Shard``)."""

    __slots__ = ("index", "tasks", "source")

    def __init__(self, index: int, tasks: list, source) -> None:
        self.index = index
        self.tasks = list(tasks)
        self.source = source  # a carried CandidateSource, or None: open the source by name on the worker

    def __repr__(self) -> str:
        return f"GateShard({self.index}, {len(self.tasks)} tasks)"


class GateShardResult:
    """Per arm the outcomes (decisions, attempts, messages) in task order, and the delivery rows."""

    __slots__ = ("index", "outcomes", "deliveries", "seconds", "worker")

    def __init__(self, index: int, outcomes: dict, deliveries: list, seconds: dict, worker: str) -> None:
        self.index, self.outcomes, self.deliveries, self.seconds, self.worker = (index, outcomes, deliveries,
                                                                                   seconds, worker)


def gate_shards(tasks: list, source, shard_size: int = DEFAULT_TASKS_PER_SHARD) -> list[GateShard]:
    """Shards of ``shard_size`` tasks; ``source`` is the client's open source (its candidates for each
    shard's tasks travel with the shard)."""
    out = []
    for i, batch in enumerate(split(tasks, shard_size)):
        out.append(GateShard(i, batch, source.carried({t.task_id for t in batch})))
    return out


def gate_shard(shard: GateShard, arms: list[str], backend: str, *, source_spec: str, per_task: int,
               chat_config=None, strict: bool = True, workers: int = 1, limits: Limits = Limits(),
               profile: str = profiles.DEFAULT, refusals: Mapping[str, str] | None = None) -> GateShardResult:
    """Gate one shard here, every arm, and score its deliveries on GT: what ``flows/gate.py`` does for
    all tasks in one process, with the same functions."""
    import contextlib

    from acceptgate.gates import delivery
    from acceptgate.gates import HmixCaps, arm_tasks, run_arm
    from acceptgate.gates import run as gate_core
    from acceptgate.sources import open_source

    seconds: dict[str, float] = {}
    outcomes: dict[str, list] = {}
    with contextlib.ExitStack() as stack:
        src = shard.source or stack.enter_context(open_source(source_spec, per_task=per_task,
                                                              chat_config=chat_config, strict=strict))
        sandbox = stack.enter_context(backends.create(backend))
        for arm in arms:
            started = time.monotonic()
            outcomes[arm] = run_arm(arm, arm_tasks(arm, shard.tasks), src, sandbox, workers=workers, limits=limits,
                                    caps=HmixCaps(calls=per_task), refusals=refusals)
            seconds[arm] = time.monotonic() - started
        started = time.monotonic()
        rows = delivery.score_deliveries([o for arm in arms for o in outcomes[arm]],
                                         gate_core.hidden_suites(shard.tasks), sandbox, workers=workers,
                                         limits=limits, profile=profile,
                                         reference_seconds=gate_core.hidden_timing(shard.tasks))
        seconds["deliveries"] = time.monotonic() - started
    return GateShardResult(shard.index, outcomes, rows, seconds, worker_name())


def merge_gate(arms: list[str], results: list[GateShardResult]) -> tuple[list, list, dict[str, float], dict[str, int]]:
    """Outcomes and delivery rows in the single-process order (arm by arm, tasks in order); seconds per
    stage summed over shards; tasks per worker."""
    results = sorted(results, key=lambda r: r.index)
    outcomes = [o for arm in arms for r in results for o in r.outcomes[arm]]
    rows = [row for arm in arms for r in results for row in r.deliveries if row.arm == arm]
    seconds: dict[str, float] = {}
    by_worker: dict[str, int] = {}
    for r in results:
        for stage, s in r.seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + s
        by_worker[r.worker] = by_worker.get(r.worker, 0) + len(next(iter(r.outcomes.values()), []))
    return outcomes, rows, seconds, by_worker


class CertifyShard:
    """A few tasks' certification materials (gold, suites, harnesses, samples). Plain class."""

    __slots__ = ("index", "materials")

    def __init__(self, index: int, materials: list) -> None:
        self.index = index
        self.materials = list(materials)

    def __repr__(self) -> str:
        return f"CertifyShard({self.index}, {len(self.materials)} tasks)"

    def cost(self, history: Mapping[str, float] | None = None) -> float:
        """The shard's guessed seconds of sandbox work, to start the largest first (``task_cost``)."""
        return sum(task_cost(m, history) for m in self.materials)


# A certified task's seconds without history, fitted to a 40-task HumanEval+ certification (CodeT
# samples, default settings; 2026-12-02): per pool candidate 57 ms, plus 48 us per case of its suites,
# plus 0.9 times the reference's own time over those cases (big inputs and outputs: HumanEval/15's
# strings, /36's loops). A pool is about the task's samples plus 16 constructed candidates. What no
# suite predicts is a candidate that runs to its time limit (HumanEval/39: 1.5 s guessed, 68 s spent):
# history (the task's last certification in the warehouse) knows it.
POOL_EXTRA = 16
CANDIDATE_SECONDS, CASE_SECONDS, REFERENCE_FACTOR = 0.057, 48e-6, 0.9


def task_cost(material, history: Mapping[str, float] | None = None) -> float:
    """Seconds a task's certification is expected to take: its last certification's where ``history``
    has it (``pipelines.certify.task_seconds``), else the estimate above."""
    if history and material.task_id in history:
        return float(history[material.task_id])
    cases = sum(len(s.cases) for s in material.suites.values())
    return (len(material.samples) + POOL_EXTRA) * (CANDIDATE_SECONDS + cases * CASE_SECONDS
                                                   + material.reference_seconds * REFERENCE_FACTOR)


class CertifyShardResult:
    """Per task: the proposed and kept pools, the construction findings, every execution, and the
    judged decisions: every decision record, the verdict (gates, mutants, metrics) of each task and
    verifier, and each task's certificate. Only the verifiers' reports over all tasks are left to the
    client."""

    __slots__ = ("index", "proposed", "kept", "findings", "runs", "records", "verdicts", "certificates", "seconds",
                 "worker")

    def __init__(self, index, proposed, kept, findings, runs, records, verdicts, certificates, seconds, worker) -> None:
        self.index, self.proposed, self.kept, self.findings = index, proposed, kept, findings
        self.runs, self.records, self.verdicts, self.certificates = runs, records, verdicts, certificates
        self.seconds, self.worker = seconds, worker


def certify_shards(materials: list, shard_size: int = DEFAULT_TASKS_PER_SHARD,
                   history: Mapping[str, float] | None = None) -> list[CertifyShard]:
    """Shards of ``shard_size`` consecutive tasks (their index keeps the task order for the merge),
    listed largest first (``CertifyShard.cost``, with ``history``: task -> seconds of its last
    certification): submitted in this order, the long shards start early and the small ones fill the
    gaps, so the last shard does not run alone for long."""
    batches = [CertifyShard(i, batch) for i, batch in enumerate(split(materials, shard_size))]
    return sorted(batches, key=lambda b: (-b.cost(history), b.index))


def certify_shard(shard: CertifyShard, backend: str, settings) -> CertifyShardResult:
    """Pools, executions (round 0, labels, re-runs from reset), decisions and their per-task gates and
    metrics, of one shard's tasks, here; the client merges and reports (``merge_certify``)."""
    from acceptgate.v4v import certify as v4v

    seconds = {}
    t0 = time.monotonic()
    with backends.create(backend) as sandbox:
        seconds["backend"] = time.monotonic() - t0
        t0 = time.monotonic()
        proposed = v4v.propose_pools(shard.materials, settings)
        runs = v4v.execute_pools(shard.materials, proposed, sandbox, settings)
        seconds["execute"] = time.monotonic() - t0
        kept, findings = v4v.check_construction(shard.materials, proposed, runs, sandbox, settings)
        t0 = time.monotonic()
        runs.update(v4v.repeat_runs(shard.materials, kept, sandbox, settings))
        seconds["repeat"] = time.monotonic() - t0
        t0 = time.monotonic()
        verifiers = v4v.make_verifiers(settings.verifiers, sandbox, settings.limits, settings.external)
        decided = v4v.decide_all(shard.materials, kept, runs, verifiers, settings)
        seconds["decide"] = time.monotonic() - t0
    t0 = time.monotonic()
    records, verdicts, certificates = v4v.judge_tasks(shard.materials, kept, runs, verifiers, decided, settings,
                                                      findings)
    runs = {key: run.for_storage() for key, run in runs.items()}  # every decision is made: values are no longer read
    seconds["judge"] = time.monotonic() - t0
    return CertifyShardResult(shard.index, proposed, kept, findings, runs, records, verdicts, certificates, seconds,
                              worker_name())


def merge_certify(materials: list, results: list[CertifyShardResult], settings):
    """One ``Certification`` as the single-process flow builds it: pools, findings, records and verdicts
    concatenated in task order (each shard's are in task, then verifier order), then the verifiers'
    reports over all tasks, computed here."""
    from acceptgate.v4v import certify as v4v

    results = sorted(results, key=lambda r: r.index)
    proposed = [p for r in results for p in r.proposed]
    kept = {t: pool for r in results for t, pool in r.kept.items()}
    findings = [f for r in results for f in r.findings]
    certificates = [c for r in results for c in r.certificates]
    runs = {k: v for r in results for k, v in r.runs.items()}
    records = [rec for r in results for rec in r.records]
    verdicts = [v for r in results for v in r.verdicts]
    seconds: dict[str, float] = {}
    for r in results:
        for stage, s in r.seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + s
    t0 = time.monotonic()
    # the verifiers' names and families only: nothing runs on the client
    verifiers = v4v.make_verifiers(settings.verifiers, None, settings.limits, settings.external)  # type: ignore[arg-type]
    reports = v4v.verifier_reports(verifiers, verdicts, {c.task_id for c in certificates if c.certified})
    seconds["report"] = time.monotonic() - t0
    return v4v.Certification(materials, proposed, kept, findings, runs, records, verdicts, reports, settings, seconds,
                             certificates)


class AuditShard:
    """A few tasks of an audit and their gauge results (complete ones are reused, not re-run)."""

    __slots__ = ("index", "tasks", "gauges")

    def __init__(self, index: int, tasks: list, gauges: list) -> None:
        self.index, self.tasks, self.gauges = index, list(tasks), list(gauges)

    def __repr__(self) -> str:
        return f"AuditShard({self.index}, {len(self.tasks)} tasks)"


class AuditShardResult:
    __slots__ = ("index", "records", "ran", "worker")

    def __init__(self, index: int, records: list, ran: int, worker: str) -> None:
        self.index, self.records, self.ran, self.worker = index, records, ran, worker


def audit_shards(tasks: list, gauges: list, shard_size: int = DEFAULT_TASKS_PER_SHARD) -> list[AuditShard]:
    out = []
    for i, batch in enumerate(split(tasks, shard_size)):
        ids = {t.task_id for t in batch}
        out.append(AuditShard(i, batch, [g for g in gauges if any(s.task_id in ids for s in g.suites)]))
    return out


def audit_shard(shard: AuditShard, backend: str) -> AuditShardResult:
    """The audit's execution stage for one shard's tasks, here (``audit.run_executions``)."""
    from acceptgate.pipelines import audit
    with backends.create(backend) as sandbox:
        records, ran = audit.run_executions(shard.tasks, shard.gauges, sandbox)
    return AuditShardResult(shard.index, records, ran, worker_name())


def merge_audit(results: list[AuditShardResult]) -> tuple[list, int]:
    """Records in (task, suite, candidate) order, as ``run_executions`` gives them for all tasks."""
    results = sorted(results, key=lambda r: r.index)
    return [rec for r in results for rec in r.records], sum(r.ran for r in results)




class LeakShard:
    """Whole runs of history records to scan, with the hidden material of their tasks."""

    __slots__ = ("index", "runs", "materials", "matcher")

    def __init__(self, index: int, runs: list, materials: dict, matcher: str) -> None:
        self.index, self.runs, self.materials, self.matcher = index, list(runs), dict(materials), matcher

    def __repr__(self) -> str:
        return f"LeakShard({self.index}, {len(self.runs)} runs)"


class LeakShardResult:
    __slots__ = ("index", "scans", "worker")

    def __init__(self, index: int, scans: list, worker: str) -> None:
        self.index, self.scans, self.worker = index, scans, worker


def leak_shards(runs: list[tuple[str, list]], materials: Mapping, matcher: str,
                shard_size: int = DEFAULT_RECORDS_PER_SHARD) -> list[LeakShard]:
    """Consecutive whole runs, about ``shard_size`` records per shard (a run is never split: its scan
    shares one set of controls)."""
    if shard_size < 1:
        raise InvalidInput("must be at least 1", field="--shard-size")
    out, batch, size = [], [], 0
    for run_id, records in runs:
        batch.append((run_id, records))
        size += len(records)
        if size >= shard_size:
            out.append(batch)
            batch, size = [], 0
    if batch:
        out.append(batch)
    return [LeakShard(i, b, {t: materials[t] for _, recs in b for t in {r.task_id for r in recs} if t in materials},
                      matcher) for i, b in enumerate(out)]


def leak_shard(shard: LeakShard) -> LeakShardResult:
    """Scan one shard's runs here, as the single-process scan does (``leak.audit.scan_run``)."""
    from acceptgate.leak import audit as leak

    scanners = leak.ScannerCache(shard.materials, shard.matcher)
    return LeakShardResult(shard.index, [leak.scan_run(run_id, records, scanners) for run_id, records in shard.runs],
                           worker_name())


def merge_leak(results: list[LeakShardResult]) -> list:
    """The scans in the order of the runs given to ``leak_shards``."""
    return [scan for r in sorted(results, key=lambda r: r.index) for scan in r.scans]


class ShardResultMismatch(RuntimeError):
    """A worker's result does not answer the shard it was sent: the run fails, nothing is merged."""


def check_results(batches: list, results: list) -> None:
    """What the workers returned answers what was sent, before anything is merged: one result per
    shard, of the shard's kind and index; a score shard's rows are its samples, in order, and a gate
    shard's outcomes its tasks, per arm. A worker is trusted to run the sandbox (the cluster
    authenticates it), but a result that answers another question is never written."""
    kinds = {Shard: ShardResult, GateShard: GateShardResult, CertifyShard: CertifyShardResult,
             AuditShard: AuditShardResult, LeakShard: LeakShardResult}
    if len(results) != len(batches):
        raise ShardResultMismatch(f"{len(batches)} shards sent, {len(results)} results returned")
    for batch, result in zip(batches, results):
        want = kinds.get(type(batch))
        if want is not None and (type(result) is not want or result.index != batch.index):
            raise ShardResultMismatch(f"shard {batch.index}: the worker returned {type(result).__name__} "
                                      f"{getattr(result, 'index', '?')}, not its {want.__name__}")
        if isinstance(batch, Shard):
            got = [(r.task_id, r.sample_index) for r in result.rows]
            if got != [(s.task_id, s.index) for s in batch.samples]:
                raise ShardResultMismatch(f"shard {batch.index}: its rows are not its {len(batch.samples)} samples")
        if isinstance(batch, GateShard):
            tasks = [t.task_id for t in batch.tasks]
            if any([o.task_id for o in outcomes] != tasks for outcomes in result.outcomes.values()):
                raise ShardResultMismatch(f"gate shard {batch.index}: its outcomes are not its tasks")
