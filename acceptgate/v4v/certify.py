"""The certification as stages: materials -> pools (published and held-out) -> runs (once per candidate
and suite) -> construction check (GT's disagreements with the labels settled by differential testing,
``taskcert``) -> repeat runs from reset -> decisions of every verifier and mutant -> the task's
certification (the six gates on GT, the source verifier) -> every other verifier measured on the
certified tasks.

The flow (``flows/certify.py``) only sequences these functions; tests call them directly.

Speed: a candidate is executed once per suite (``runs``), and every suite verifier built from that
suite, with all its mutants, decides from the stored per-case outputs. Only the repeatability gate
re-runs, from reset (a fresh sandbox process), k - 1 more times, for a sample of candidates per task
and suite: the gold, every attack (the candidates built to behave differently across calls) and a
seeded sample of ``repeat_sample`` others -- or all candidates with ``repeat_sample = -1``. The
baselines are pure functions of the text; they are re-decided k times all the same.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from acceptgate._util.hashing import sha256_text
from acceptgate._util.errors import InvalidInput
from acceptgate._util.parallel import parallel_map
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.datasets.task import HIDDEN, VISIBLE
from acceptgate.v4v import differential, external, gates, heldout, metrics, mutation, pools, runs, taskcert
from acceptgate.v4v.candidates import HELD_OUT, POOL_VERSION
from acceptgate.v4v.external import ExternalOptions
from acceptgate.v4v.pools import PoolCandidate, PoolSettings, ProposedPool, TaskMaterial
from acceptgate.v4v.runs import RunJob, SuiteRun
from acceptgate.v4v.taskcert import Finding, TaskCertificate
from acceptgate.v4v.verifiers import BUILTIN, Decision, SuiteVerifier, Verifier, get as get_verifier

Progress = Callable[[str, int, int], None] | None  # (stage, done, total)
BASELINES = ("always-accept", "always-reject", "gold-exact-match")
SOURCE = "GT"  # the task's source verifier: the six gates certify the task with it
SOURCE_ROLE, MEASURED_ROLE = "source", "measured"
# what a measured verifier is checked for (its decisions must be reproducible and bound); the other
# four gates are about the task and its source verifier, which a measured verifier is not
MEASURED_CHECKS = ("repeatability", "provenance")


@dataclass(frozen=True)
class Settings:
    verifiers: tuple[str, ...] = BUILTIN
    k: int = 3
    repeat_sample: int = 3  # per task and suite, besides gold and attacks; -1 = every candidate
    pool: PoolSettings = PoolSettings()
    max_mutant_cases: int | None = None  # None: every case of the suite
    workers: int = 2
    limits: Limits = Limits()
    external: ExternalOptions = ExternalOptions()  # command verifiers' mounts and limits, EvalPlus's venv
    # the secret seed of the held-out candidates: fresh per run (heldout.new_seed), never in ``key()``
    # (a re-run with another seed is the same run); "" = no held-out part
    heldout_seed: str = ""
    differential_inputs: int = differential.RANDOM_INPUTS

    def key(self) -> dict:
        key = {"verifiers": list(self.verifiers), "k": self.k, "repeat_sample": self.repeat_sample,
               "samples_per_task": self.pool.samples_per_task,
               "near_miss_per_operator": self.pool.near_miss_per_operator,
               "max_mutant_cases": self.max_mutant_cases, "pool_version": POOL_VERSION,
               "differential_inputs": self.differential_inputs, "held_out": bool(self.heldout_seed)}
        if any(v.startswith("cmd:") or v == "evalplus" for v in self.verifiers):
            # the commands' files are bound by hash in every decision; the names here tell runs apart
            key["verifier_mounts"] = list(self.external.mounts)
        return key


def with_external(settings: Settings, commands: list[str], mounts: list[str], evalplus_venv: str | None,
                  dataset: str) -> Settings:
    """Settings that also certify these command verifiers (and EvalPlus, given its venv)."""
    import dataclasses

    if not (commands or mounts or evalplus_venv) and settings.external.dataset:
        return settings
    names = list(settings.verifiers) + [f"cmd:{c}" for c in commands] + (["evalplus"] if evalplus_venv else [])
    ext = dataclasses.replace(settings.external, mounts=tuple(dict.fromkeys(list(settings.external.mounts) + mounts)),
                              evalplus_venv=evalplus_venv or settings.external.evalplus_venv,
                              dataset=settings.external.dataset or dataset)
    for name in names:  # before any execution: an unreadable file or a missing mount is refused here
        if name.startswith("cmd:"):
            external.CommandVerifier(name[4:], ext)
    return dataclasses.replace(settings, verifiers=tuple(dict.fromkeys(names)), external=ext)


# -- materials ---------------------------------------------------------------------------------------

def load_materials(suites_dir: str, dataset: str, samples: str | None = None, *, limit: int | None = None,
                   task_ids: list[str] | None = None) -> list[TaskMaterial]:
    """Tasks with a hidden suite (the oracle that checks labels), their gold from the HumanEval+ file
    (prompt + canonical solution) and, with ``samples``, the CodeT model samples as programs."""
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers.common import read_jsonl
    from acceptgate.datasets.importers.humanevalplus import FIELDS

    # the tasks to certify from the manifest, then only theirs read (a whole HumanEval+ read: ~2.7 s of CPU)
    ids = [tid for tid, kinds in suitefiles.manifest_suites(suites_dir).items() if HIDDEN in kinds]
    if task_ids:
        unknown = sorted(set(task_ids) - set(ids))
        if unknown:
            raise InvalidInput(f"tasks without a hidden suite here: {', '.join(unknown[:5])}", field="--task")
        ids = [tid for tid in ids if tid in set(task_ids)]
    if limit is not None:
        ids = ids[: max(0, limit)]
    sd = suitefiles.read_suites(suites_dir, task_ids=ids)
    rows, _ = read_jsonl(dataset, FIELDS)
    gold = {r["task_id"]: r["prompt"] + r["canonical_solution"] for r in rows}
    # with the data set's input contract: inputs it rejects are outside the task (differential tests)
    domain = {r["task_id"]: r["prompt"] + r["contract"] + r["canonical_solution"] for r in rows if r["contract"].strip()}
    missing = [tid for tid in ids if tid not in gold]
    if missing:
        raise InvalidInput(f"no canonical solution for {', '.join(missing[:5])}", source=dataset, field="task_id")
    drawn = _samples(samples, set(ids)) if samples else {}
    out = []
    for tid in ids:
        t = sd.tasks[tid]
        out.append(TaskMaterial.from_suites(tid, t.entry_point, t.prompt, gold[tid], dict(t.suites), drawn.get(tid, []),
                                            sum(sum(seconds) for seconds in t.reference_seconds.values()),
                                            domain.get(tid, "")))
    return out


def _samples(path: str, ids: set[str]) -> dict[str, list[tuple[str, str]]]:
    from acceptgate.sources.codet import CodetSource

    src = CodetSource(path, per_task=100)
    out = {}
    for tid, row in src.rows.items():
        if tid in ids:
            prompt = src.prompts[tid][0]
            out[tid] = [(f"codet:{i}", prompt + body) for i, body in enumerate(row["samples"])]
    return out


# -- pools and runs --------------------------------------------------------------------------------------

def propose_pools(materials: list[TaskMaterial], settings: Settings = Settings()) -> list[ProposedPool]:
    """Each task's published pool, plus its held-out part when the settings carry a secret seed."""
    out = []
    for m in materials:
        pool = pools.propose(m, settings.pool)
        if settings.heldout_seed:
            extra = [c for c in heldout.candidates(m, settings.heldout_seed)
                     if c.candidate_id not in {p.candidate_id for p in pool.candidates}]
            pool = ProposedPool(pool.task_id, sorted(pool.candidates + extra, key=lambda c: c.candidate_id),
                                pool.not_built)
        out.append(pool)
    return out


RunKey = tuple[str, str, str, int]  # (task id, candidate sha256, suite, round)


def execute_pools(materials: list[TaskMaterial], proposed: list[ProposedPool], backend: Backend,
                  settings: Settings = Settings(), progress: Progress = None) -> dict[RunKey, SuiteRun]:
    """Round 0: every distinct candidate text once on each suite of its task."""
    by_task = {m.task_id: m for m in materials}
    jobs, seen = [], set()
    for pool in proposed:
        m = by_task[pool.task_id]
        for c in pool.candidates:
            for suite, h in sorted(m.harnesses.items()):
                key = (m.task_id, c.sha256, suite, 0)
                if key not in seen:
                    seen.add(key)
                    jobs.append(RunJob(key, h, c.source, c.sha256, 0))
    return runs.collect_many(jobs, backend, limits=settings.limits, workers=settings.workers,
                             progress=(lambda d, n: progress("execute", d, n)) if progress else None)


def source_decisions(m: TaskMaterial, candidates: list[PoolCandidate], all_runs: dict[RunKey, SuiteRun],
                     round: int = 0) -> dict[str, Decision]:
    """GT's decision on each candidate (from its run on the hidden suite)."""
    gt = SuiteVerifier(SOURCE, HIDDEN)
    return {c.candidate_id: gt.decide(c, m, all_runs.get((m.task_id, c.sha256, HIDDEN, round))) for c in candidates}


def check_construction(materials: list[TaskMaterial], proposed: list[ProposedPool], all_runs: dict[RunKey, SuiteRun],
                       backend: Backend, settings: Settings = Settings()) -> tuple[dict[str, list[PoolCandidate]],
                                                                                  list[Finding]]:
    """Every task's pool without the candidates whose construction was shown wrong, and every finding
    (``taskcert``): GT's disagreements with the construction labels, each settled by a differential
    test against the reference (in parallel on ``settings.workers``). Nothing is relabelled."""
    by_task = {m.task_id: m for m in materials}
    jobs = []
    for pool in proposed:
        m = by_task[pool.task_id]
        decided = source_decisions(m, pool.candidates, all_runs)
        for c in taskcert.disagreements(pool.candidates, decided):
            jobs.append((m, c, decided[c.candidate_id], all_runs.get((m.task_id, c.sha256, HIDDEN, 0))))
    findings = parallel_map(lambda job: taskcert.settle(*job, backend, n=settings.differential_inputs,
                                                        limits=settings.limits), jobs, workers=settings.workers)
    kept = {pool.task_id: taskcert.kept_after(pool.candidates, findings) for pool in proposed}
    return kept, findings


def repeat_sample(pool: list[PoolCandidate], suite: str, task_id: str, n: int) -> list[PoolCandidate]:
    if n < 0:
        return list(pool)
    always = [c for c in pool if c.kind in ("gold", "attack")]
    rest = [c for c in pool if c.kind not in ("gold", "attack")]
    picked = sorted(mutation.seeded(task_id, suite, "repeat").sample(range(len(rest)), min(n, len(rest))))
    return always + [rest[i] for i in picked]


def repeat_runs(materials: list[TaskMaterial], kept: dict[str, list[PoolCandidate]], backend: Backend,
                settings: Settings = Settings(), progress: Progress = None) -> dict[RunKey, SuiteRun]:
    """Rounds 1..k-1 from reset (each a fresh sandbox process) for the repeat sample."""
    jobs = []
    for m in materials:
        for suite, h in sorted(m.harnesses.items()):
            for c in repeat_sample(kept[m.task_id], suite, m.task_id, settings.repeat_sample):
                for r in range(1, settings.k):
                    jobs.append(RunJob((m.task_id, c.sha256, suite, r), h, c.source, c.sha256, r))
    return runs.collect_many(jobs, backend, limits=settings.limits, workers=settings.workers,
                             progress=(lambda d, n: progress("repeat", d, n)) if progress else None)


# -- decisions ------------------------------------------------------------------------------------------

def _record(m: TaskMaterial, v: Verifier, c: PoolCandidate, r: int, d: Decision, run: SuiteRun | None) -> gates.DecisionRecord:
    b = v.binding(m)
    return gates.DecisionRecord(m.task_id, v.name, c.candidate_id, c.sha256, r, d, b.verifier_version,
                                b.spec_hash, b.render_hash or sha256_text(b.verifier_version),
                                run.spec_hash if run else None, run.candidate_sha256 if run else None)


def decide_task(m: TaskMaterial, pool: list[PoolCandidate], v: Verifier, all_runs: dict[RunKey, SuiteRun],
                k: int, repeat: set[str] | None = None, workers: int = 1) -> list[gates.DecisionRecord]:
    """Round 0 for every candidate; rounds 1..k-1 where the candidate was re-run (suite verifiers), for
    the candidates in ``repeat`` (external verifiers: each decision is a sandboxed run of its own, in
    parallel on ``workers``), or for every candidate (baselines: pure functions of the text)."""
    jobs = []
    for c in pool:
        for r in range(k):
            run = all_runs.get((m.task_id, c.sha256, v.suite, r)) if v.suite is not None else None
            if r > 0 and ((v.suite is not None and run is None) or (repeat is not None and c.candidate_id not in repeat)):
                continue  # not in the repeat sample
            jobs.append((c, r, run))
    if v.family == "external" and workers > 1 and len(jobs) > 1:
        decisions = parallel_map(lambda job: v.decide(job[0], m, job[2]), jobs, workers=workers)
    else:
        decisions = [v.decide(c, m, run) for c, _, run in jobs]
    return [_record(m, v, c, r, d, run) for (c, r, run), d in zip(jobs, decisions)]


# -- gates and metrics -----------------------------------------------------------------------------------

@dataclass
class TaskVerdict:
    task_id: str
    verifier: str
    family: str
    gates: list[gates.GateResult]
    mutants: list[gates.MutantOutcome]
    metrics: dict[int, metrics.TaskMetrics]  # round -> metrics
    # round -> metrics over only the candidates decided afresh in every round (the median-round ranking);
    # empty when no decision was copied
    ranking: dict[int, metrics.TaskMetrics] = field(default_factory=dict)
    role: str = MEASURED_ROLE  # source: its six gates certify the task | measured: it is measured on it


def mutant_outcomes(m: TaskMaterial, pool: list[PoolCandidate], v: SuiteVerifier, original: dict[str, Decision],
                    all_runs: dict[RunKey, SuiteRun], max_cases: int) -> list[gates.MutantOutcome]:
    out = []
    for mu in mutation.suite_mutations(m.harnesses[v.suite], max_cases):
        mv = SuiteVerifier(v.name, v.suite, mu)
        mutated = {c.candidate_id: mv.decide(c, m, all_runs.get((m.task_id, c.sha256, v.suite, 0))) for c in pool}
        witness = gates.detect(pool, original, mutated)
        out.append(gates.MutantOutcome(mu.mutant_id, mu.operator, witness is not None, witness))
    return out


def _gates(m: TaskMaterial, pool: list[PoolCandidate], v: Verifier, records: list[gates.DecisionRecord],
           original: dict[str, Decision], rerun: dict[str, list[Decision]], baselines: dict[str, dict[str, Decision]],
           mutants: list[gates.MutantOutcome] | None, settings: Settings, scope: str, role: str) -> list[gates.GateResult]:
    """The six gates for the source verifier (on the candidates labelled by construction); for a measured
    one, the checks that apply to any verifier: repeatable from reset, decisions bound."""
    checks = [gates.repeatability(m.task_id, v.name, rerun, settings.k, scope),
              gates.provenance(m.task_id, v.name, pool, records, isinstance(v, SuiteVerifier))]
    if role != SOURCE_ROLE:
        return checks
    labelled = [c for c in pool if c.labelled]
    return [gates.replay(m.task_id, v.name, labelled, original), *checks,
            gates.input_label_consistency(m.task_id, v.name, labelled, m.harnesses.get(VISIBLE)),
            gates.trivial_baselines(m.task_id, v.name, labelled, original, baselines, m.gold_normalised),
            gates.mutation(m.task_id, v.name, mutants, mutation.MUTATION_OPERATORS,
                           why_not=gates.EXTERNAL_NOT_MUTATED if v.family == "external" else None)]


def rerun_history(history: dict[str, list[Decision]], pool: list[PoolCandidate], role: str
                  ) -> dict[str, list[Decision]]:
    """The re-run candidates' decisions the repeatability check reads. The source certifies with
    constructed candidates only: a model sample's re-runs are measured, never a gate of the task."""
    counted = {c.candidate_id for c in pool if c.labelled or role != SOURCE_ROLE}
    return {cid: ds for cid, ds in history.items() if len(ds) > 1 and cid in counted}


def judge_task(m: TaskMaterial, pool: list[PoolCandidate], v: Verifier, records: list[gates.DecisionRecord],
               baselines: dict[str, dict[str, Decision]], all_runs: dict[RunKey, SuiteRun], settings: Settings,
               scope: str) -> TaskVerdict:
    rounds: dict[int, dict[str, Decision]] = defaultdict(dict)
    history: dict[str, list[Decision]] = defaultdict(list)
    for rec in sorted(records, key=lambda r: (r.candidate_id, r.round)):
        rounds[rec.round][rec.candidate_id] = rec.decision
        history[rec.candidate_id].append(rec.decision)
    original = rounds[0]
    role = SOURCE_ROLE if v.name == SOURCE else MEASURED_ROLE
    rerun = rerun_history(history, pool, role)
    suite_v = isinstance(v, SuiteVerifier) and v.suite in m.suites
    labelled = [c for c in pool if c.labelled]  # mutants are told apart by constructed candidates only
    mutants = mutant_outcomes(m, labelled, v, original, all_runs, settings.max_mutant_cases) if suite_v else None
    results = _gates(m, pool, v, records, original, rerun, baselines, mutants, settings, scope, role)
    per_round, ranking = {}, {}
    fresh = [c for c in pool if all(c.candidate_id in rounds[r] for r in range(settings.k))]
    for r in range(settings.k):
        # not re-run: its round-0 decision, copied and marked (no independent sample, seed 002)
        copied = frozenset(cid for cid in original if cid not in rounds[r])
        decided = {cid: rounds[r].get(cid, original[cid]) for cid in original}
        per_round[r] = metrics.task_metrics(m.task_id, v.name, r, pool, decided, m.gold_normalised, copied)
        if len(fresh) < len(pool):
            ranking[r] = metrics.task_metrics(m.task_id, v.name, r, fresh, decided, m.gold_normalised)
    return TaskVerdict(m.task_id, v.name, v.family, results, mutants or [], per_round, ranking, role)


@dataclass
class VerifierReport:
    name: str
    family: str
    summary: metrics.VerifierMetrics
    gates_passed: int  # gates (source) or checks (measured) passed on every task reported
    gates_applicable: int
    failed_gates: dict[str, int]  # gate -> tasks where it failed
    mutation_score: float | None
    role: str = MEASURED_ROLE  # source: over every task (its certification) | measured: certified tasks only


def report(name: str, family: str, verdicts: list[TaskVerdict]) -> VerifierReport:
    failed: dict[str, int] = {}
    passed, applicable = 0, 0
    role = verdicts[0].role if verdicts else MEASURED_ROLE
    for g in (gates.GATES if role == SOURCE_ROLE else MEASURED_CHECKS):
        statuses = [r.status for v in verdicts for r in v.gates if r.gate == g]
        if statuses and all(s == "n/a" for s in statuses):
            continue
        applicable += 1
        bad = sum(s == "fail" for s in statuses)
        if bad:
            failed[g] = bad
        else:
            passed += 1
    muts = [mo for v in verdicts for mo in v.mutants]
    score = sum(mo.detected for mo in muts) / len(muts) if muts else None
    rounds: dict[int, list[metrics.TaskMetrics]] = defaultdict(list)
    ranking: dict[int, list[metrics.TaskMetrics]] = defaultdict(list)
    for v in verdicts:
        for r, tm in v.metrics.items():
            rounds[r].append(tm)
            ranking[r].append(v.ranking.get(r, tm))  # a task with no copies ranks on every candidate
    fresh = sum(tm.legal + tm.illegal for tm in ranking[0]) if ranking else 0
    basis = f"the {fresh} candidates decided afresh in every round (copied round-0 decisions excluded)"
    summary = metrics.summarize(name, dict(rounds), dict(ranking), basis)
    return VerifierReport(name, family, summary, passed, applicable, failed, score, role)


@dataclass
class Certification:
    materials: list[TaskMaterial]
    proposed: list[ProposedPool]
    kept: dict[str, list[PoolCandidate]]
    findings: list[Finding]
    runs: dict[RunKey, SuiteRun]
    records: list[gates.DecisionRecord]
    verdicts: list[TaskVerdict]
    reports: list[VerifierReport]
    settings: Settings
    seconds: dict[str, float] = field(default_factory=dict)
    certificates: list[TaskCertificate] = field(default_factory=list)

    @property
    def certified(self) -> set[str]:
        return {c.task_id for c in self.certificates if c.certified}


def make_verifiers(names: tuple[str, ...], backend: Backend, limits: Limits,
                   options: ExternalOptions | None = None) -> list[Verifier]:
    """Verifiers by name; external ones get the sandbox backend (program verifiers run with the
    candidates' limits, command verifiers with ``options.limits``)."""
    out = []
    for name in names:
        try:
            v = external.make(name, options or ExternalOptions()) or get_verifier(name)
        except ValueError as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(str(exc), field="--verifier") from None
        if hasattr(v, "backend"):
            v.backend = backend
            if isinstance(v, external.ExternalVerifier):
                v.limits = limits
        out.append(v)
    return out


Decided = dict[tuple[str, str], tuple[list[gates.DecisionRecord], str]]  # (task, verifier) -> (records, scope)


def decide_all(materials: list[TaskMaterial], kept: dict[str, list[PoolCandidate]], all_runs: dict[RunKey, SuiteRun],
               verifiers: list[Verifier], settings: Settings = Settings(), progress: Progress = None) -> Decided:
    """Every candidate decided by every verifier that applies to its task, with the repeatability
    gate's scope: the part of the certification that runs verifiers (a shard's, on a cluster)."""
    decided: Decided = {}
    total = len(materials) * len(verifiers)
    done = 0
    sampled = f"gold, attacks and {settings.repeat_sample} seeded others"
    for v in verifiers:
        v.prepare(materials)
    try:
        for m in materials:
            pool = kept[m.task_id]
            for v in verifiers:
                done += 1
                if v.suite is not None and v.suite not in m.suites:
                    continue  # e.g. V on a task without docstring examples: nothing to certify there
                repeat = None
                if v.family == "external" and settings.repeat_sample >= 0:
                    repeat = {c.candidate_id for c in repeat_sample(pool, "external", m.task_id, settings.repeat_sample)}
                recs = decide_task(m, pool, v, all_runs, settings.k, repeat, settings.workers)
                scope = ("every candidate" if (v.suite is None and repeat is None) or settings.repeat_sample < 0
                         else sampled)
                decided[(m.task_id, v.name)] = (recs, scope)
                if progress:
                    progress("decide", done, total)
    finally:
        for v in verifiers:
            v.close()
    return decided


def with_source(settings: Settings) -> Settings:
    """The settings with the source verifier among the verifiers: a task is certified with it."""
    import dataclasses

    if SOURCE in settings.verifiers:
        return settings
    return dataclasses.replace(settings, verifiers=(SOURCE, *settings.verifiers))


def with_gauge(certificates: list[TaskCertificate], failures: dict[str, str]) -> list[TaskCertificate]:
    """The certificates with the gauge's verdicts (``failures``: "task\\0suite" -> reasons): a hidden suite
    that fails its gauge fails the task's certification; a visible one's failure is noted (the gates
    exclude that task by their own gauge check)."""
    import dataclasses

    out = []
    for c in certificates:
        hidden, visible = failures.get(c.task_id + "\x00hidden"), failures.get(c.task_id + "\x00visible")
        if hidden:
            c = dataclasses.replace(c, certified=False, failed_gates=(*c.failed_gates, "gauge"),
                                    reason=f"the hidden suite fails the gauge: {hidden}; " + c.reason)
        if visible:
            c = dataclasses.replace(c, reason=c.reason + f" (note: the visible suite fails the gauge: {visible})")
        out.append(c)
    return out


def judge_tasks(materials: list[TaskMaterial], kept: dict[str, list[PoolCandidate]], all_runs: dict[RunKey, SuiteRun],
                verifiers: list[Verifier], decided: Decided, settings: Settings = Settings(),
                findings: list[Finding] | None = None) -> tuple[list[gates.DecisionRecord], list[TaskVerdict],
                                                                list[TaskCertificate]]:
    """The gates and metrics per task and verifier from the decisions (pure: runs nothing), with the
    baselines the trivial-baselines gate compares against, and each task's certificate from its
    source verifier's gates; in task, then verifier order whatever order the decisions came in. Per
    task only, so a shard judges its own tasks."""
    baseline_vs = {v.name: v for v in make_verifiers(BASELINES, None, settings.limits)}  # type: ignore[arg-type]
    records: list[gates.DecisionRecord] = []
    verdicts: list[TaskVerdict] = []
    certificates: list[TaskCertificate] = []
    for m in materials:
        pool = kept[m.task_id]
        base = {n: {c.candidate_id: bv.decide(c, m, None) for c in pool} for n, bv in baseline_vs.items()}
        for v in verifiers:
            if (m.task_id, v.name) not in decided:
                continue
            recs, scope = decided[(m.task_id, v.name)]
            verdict = judge_task(m, pool, v, recs, base, all_runs, settings, scope)
            verdicts.append(verdict)
            records += recs
            if verdict.role == SOURCE_ROLE:
                certificates.append(taskcert.certificate(m, pool, verdict.gates, findings or [],
                                                         pool_sha256({m.task_id: pool})))
    return records, verdicts, certificates


def verifier_reports(verifiers: list[Verifier], verdicts: list[TaskVerdict],
                     certified: set[str] | None = None) -> list[VerifierReport]:
    """Each verifier's report over all tasks' verdicts (the cross-task part: means, the median round):
    the source verifier over every task (its certification), every other one over the certified tasks
    only (``certified``; None: every task)."""
    out = []
    for v in verifiers:
        mine = [t for t in verdicts if t.verifier == v.name
                and (t.role == SOURCE_ROLE or certified is None or t.task_id in certified)]
        if mine:  # a suite verifier no task has (V where no task has examples) has nothing to report
            out.append(report(v.name, v.family, mine))
    return out


def judge_all(materials: list[TaskMaterial], kept: dict[str, list[PoolCandidate]], all_runs: dict[RunKey, SuiteRun],
              verifiers: list[Verifier], decided: Decided, settings: Settings = Settings(),
              findings: list[Finding] | None = None) -> tuple[list[gates.DecisionRecord], list[TaskVerdict],
                                                              list[VerifierReport], list[TaskCertificate]]:
    """``judge_tasks`` over every task, then the verifiers' reports (measured ones on certified tasks)."""
    records, verdicts, certificates = judge_tasks(materials, kept, all_runs, verifiers, decided, settings, findings)
    # without the source verifier among them no task is certified here: the caller measures on every task
    certified = {c.task_id for c in certificates if c.certified} if certificates else None
    return records, verdicts, verifier_reports(verifiers, verdicts, certified), certificates


def evaluate(materials: list[TaskMaterial], kept: dict[str, list[PoolCandidate]], all_runs: dict[RunKey, SuiteRun],
             verifiers: list[Verifier], settings: Settings = Settings(), progress: Progress = None,
             findings: list[Finding] | None = None):
    """Decide every candidate with every verifier, then the gates, metrics and task certificates."""
    decided = decide_all(materials, kept, all_runs, verifiers, settings, progress)
    return judge_all(materials, kept, all_runs, verifiers, decided, settings, findings)


def certify(materials: list[TaskMaterial], backend: Backend, settings: Settings = Settings(),
            progress: Progress = None) -> Certification:
    """The whole certification in one call (what the flow's tasks do one stage at a time)."""
    import time

    settings = with_source(settings)
    seconds = {}
    t0 = time.monotonic()
    proposed = propose_pools(materials, settings)
    seconds["pools"] = time.monotonic() - t0
    t0 = time.monotonic()
    all_runs = execute_pools(materials, proposed, backend, settings, progress)
    seconds["execute"] = time.monotonic() - t0
    t0 = time.monotonic()
    kept, findings = check_construction(materials, proposed, all_runs, backend, settings)
    seconds["construction"] = time.monotonic() - t0
    t0 = time.monotonic()
    all_runs.update(repeat_runs(materials, kept, backend, settings, progress))
    seconds["repeat"] = time.monotonic() - t0
    t0 = time.monotonic()
    verifiers = make_verifiers(settings.verifiers, backend, settings.limits, settings.external)
    records, verdicts, reports, certificates = evaluate(materials, kept, all_runs, verifiers, settings, progress,
                                                        findings)
    seconds["decide"] = time.monotonic() - t0
    return Certification(materials, proposed, kept, findings, all_runs, records, verdicts, reports, settings, seconds,
                         certificates)


def inputs_sha256(materials: list[TaskMaterial]) -> str:
    lines = sorted(f"{m.task_id} {m.gold_sha256} " + " ".join(f"{k}={s.spec_hash}" for k, s in sorted(m.suites.items()))
                   + " " + sha256_text(json.dumps([o for o, _ in m.samples])) for m in materials)
    return sha256_text("\n".join(lines))


def pool_sha256(kept: dict[str, list[PoolCandidate]]) -> str:
    """Over the labelled candidates (ids, hashes, labels, parts): what a certification certified."""
    lines = sorted(f"{c.candidate_id} {c.sha256} {c.label} {c.part}" for cs in kept.values() for c in cs
                   if c.labelled)
    return sha256_text("\n".join(lines))


# -- progress and the summary table ----------------------------------------------------------------------

_progress: list[Progress] = [None]  # the CLI's progress reporter; a plain global, since Prefect runs
# tasks in worker threads that do not inherit context variables


class reporting:
    """``with reporting(fn): ...`` -- stages report (stage, done, total) to fn meanwhile."""

    def __init__(self, fn: Progress) -> None:
        self.fn = fn

    def __enter__(self) -> None:
        self.saved = _progress[0]
        _progress[0] = self.fn

    def __exit__(self, *exc) -> None:
        _progress[0] = self.saved


def current_progress() -> Progress:
    return _progress[0]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


TABLE_COLUMNS = ("verifier", "role", "tasks", "gates/checks", "TPR", "TNR", "BA_norm", "FPR_h", "held-out BA_norm",
                 "mutation", "errors", "samples accepted", "false rej. (all-reject)", "diagnosis",
                 "failed gates (tasks)")


def table_rows(reports: list[VerifierReport]) -> list[tuple[str, ...]]:
    rows = []
    for r in reports:
        s = r.summary
        errors = sum(s.errors.values())
        rows.append((r.name, r.role, str(s.tasks), f"{r.gates_passed}/{r.gates_applicable}", _pct(s.tpr), _pct(s.tnr),
                     _pct(s.ba_norm), _pct(s.fpr_attack), _pct(s.heldout_ba_norm),
                     "-" if r.mutation_score is None else f"{100 * r.mutation_score:.1f}%", str(errors),
                     f"{s.samples_accepted}/{s.samples}", f"{s.false_rejections} ({s.all_reject_false_rejections})",
                     s.diagnosis, ", ".join(f"{g}({n})" for g, n in r.failed_gates.items()) or "-"))
    return rows


def certification_lines(certificates: list[TaskCertificate], findings: list[Finding]) -> list[str]:
    """The tasks' certification first: how many passed, which failed and why, and every finding."""
    ok = [c for c in certificates if c.certified]
    lines = [f"task certification ({SOURCE}, the source verifier, against the construction labels): {len(ok)} of "
             f"{len(certificates)} tasks certified"]
    failed = [c for c in certificates if not c.certified]
    for c in failed[:10]:
        lines.append(f"  not certified: {c.task_id}: {c.reason[:300]}")
    if len(failed) > 10:
        lines.append(f"  ... and {len(failed) - 10} more (v4v_task_certificates)")
    by: dict[tuple[str, str], int] = defaultdict(int)
    for f in findings:
        by[(f.finding, f.action)] += 1
    if findings:
        lines.append("findings (GT against a construction label, settled by differential testing; nothing "
                     "relabelled): " + ", ".join(f"{n} {k} ({a})" for (k, a), n in sorted(by.items())) +
                     " (v4v_findings)")
    return lines


def format_table(reports: list[VerifierReport], certificates: list[TaskCertificate] | None = None,
                 findings: list[Finding] | None = None) -> str:
    rows = [TABLE_COLUMNS] + table_rows(reports)
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
    lines = certification_lines(certificates, findings or []) if certificates is not None else []
    if certificates is not None:
        lines.append(f"measured on the {sum(c.certified for c in certificates)} certified tasks (the source verifier: "
                     "on every task); gates/checks: the six gates for the source, repeatability and provenance "
                     "for a measured verifier")
    table = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    table.insert(1, "  ".join("-" * w for w in widths))
    lines += table
    measured = [r.summary for r in reports if r.family != "baseline" and r.role != SOURCE_ROLE]
    part, whole, share = metrics.all_reject_share(measured)
    lines.append(f"false rejections (valid FAIL on a legal candidate) from all-reject verifier-task pairs, measured "
                 f"verifiers only (baselines and the source left out): {part} of {whole}"
                 + (" (no false rejection: n/a)" if share is None else f" ({100 * share:.1f}%)"))
    copied = [r for r in reports if r.summary.copied]
    if copied:
        lines.append("median-BA round chosen on candidates decided afresh in every round (" +
                     ", ".join(f"{r.name}: {r.summary.copied} copied round-0 decisions in the reported round"
                               for r in copied) + "; --repeat-all re-runs every candidate)")
    return "\n".join(lines)


def pool_counts(kept: dict[str, list[PoolCandidate]], findings: list[Finding]) -> str:
    by_class: dict[str, int] = defaultdict(int)
    held_out = 0
    for cs in kept.values():
        for c in cs:
            by_class[c.cls] += 1
            held_out += c.part == HELD_OUT
    excluded = sum(f.action == "excluded" for f in findings)
    return (", ".join(f"{k} {by_class[k]}" for k in pools.CLASSES) +
            f"; {held_out} of them held out (made from this run's secret seed); {excluded} constructed candidates "
            "excluded by a finding, none relabelled")
