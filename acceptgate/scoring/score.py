"""Batch scoring of an EvalPlus-format samples file against one suite per task (visible or hidden).

The EvalPlus ``evaluate`` workflow on our sandbox: one sandbox process per sample, cases streamed,
stopping at the first failing case (``fail_fast``, as EvalPlus's own ``fast_check``) on a visible
suite unless all cases are asked for. On a hidden suite the cases are called in blocks fixed before
the run from their number alone (``executor.block_plan``): within a block every case is called
whatever the earlier answers were, and the execution stops at the first block boundary after a
failing case, so all an execution can learn is, once per block, that every answer so far passed. All
cases asked for (``fail_fast=False``): every case, on either suite.

Invalid records (the project's one rule for a batch): with ``strict`` the first one is an error
(``InvalidInput`` naming file, line and field) and nothing is scored. Otherwise each one -- a line
that is not a sample, a task id the suites do not know, a completion without its task's prompt --
is kept as a row with verdict ``invalid`` and counted in every total, never dropped. A missing file
or one without a single valid sample is always an error.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_text
from acceptgate.suites.render import harness_for
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.scoring import profiles
from acceptgate.sandbox.executor import run_jobs
from acceptgate.datasets.samples import LineProblem, SampleFile
from acceptgate.suites.suitespec import SuiteSpec
from acceptgate.datasets.task import VISIBLE


# -- inputs: the suites directory ----------------------------------------------------------------------

@dataclass(frozen=True)
class SuiteInputs:
    """What scoring reads of a suites directory for one suite kind (``suitefiles.SuiteDir``, read once)."""

    suites: dict[str, SuiteSpec]  # task_id -> the asked suite
    prompts: dict[str, str]  # task_id -> the public prompt (completions are appended to it)
    excluded: dict[str, str]  # task_id -> why a task the import knows has no such suite (the import's reason)
    timing: dict[str, list[float]]  # task_id -> the reference's time per case (the import's timing sidecars)


def inputs_of(sd, kind: str) -> SuiteInputs:
    """The asked suite of every task of a read suite directory, with what the import excluded and why."""
    suites = {tid: t.suites[kind] for tid, t in sd.tasks.items() if kind in t.suites}
    prompts = {tid: t.prompt for tid, t in sd.tasks.items()}
    excluded = {}
    for issue in sd.issues:
        if issue.excluded == "task" or (issue.excluded == "suite" and issue.suite == kind):
            excluded.setdefault(issue.task_id, f"{issue.reason}: {issue.detail}"[:200])
    for tid, t in sd.tasks.items():
        if kind not in t.suites:
            excluded.setdefault(tid, f"no {kind} suite")
    timing = {tid: t.reference_seconds[kind] for tid, t in sd.tasks.items() if kind in t.reference_seconds}
    return SuiteInputs(suites, prompts, excluded, timing)


def load_timing(directory: str, kind: str) -> dict[str, list[float]]:
    """task_id -> the reference's time per case of the asked suite (the import's timing sidecars)."""
    from acceptgate.datasets import suitefiles
    return suitefiles.read_timing(directory, kind)


def load_suites(directory: str, kind: str) -> tuple[dict, dict, dict]:
    """From a suites directory: task_id -> SuiteSpec of the asked kind, task_id -> prompt, and
    task_id -> why a task the import knows has no such suite (excluded, with the import's reason)."""
    from acceptgate.datasets import suitefiles
    got = inputs_of(suitefiles.read_suites(directory), kind)
    return got.suites, got.prompts, got.excluded


def require_timing(inputs: SuiteInputs, directory: str) -> None:
    """The evalplus profile needs the reference's time per case of every suite (exit 2 otherwise)."""
    if missing := sorted(set(inputs.suites) - set(inputs.timing)):
        raise InvalidInput(f"the evalplus profile needs the reference's time per case, and {len(missing)} suites "
                           f"have no timing sidecar (e.g. {missing[0]}); re-import them", source=directory,
                           field="--profile")


@dataclass(frozen=True)
class ScoredSample:
    task_id: str
    sample_index: int  # 0-based among the task's samples, in file order
    line: int
    verdict: str
    cases_failed: int  # of the cases run; with fail_fast (visible suites) 0 or 1; 0 if the program failed before any case
    cases_run: int
    cases_total: int
    candidate_sha256: str
    wall_seconds: float
    detail: str
    profile: str = "default"  # the scoring profile (acceptgate.scoring.profiles): part of every row
    render_hash: str = ""  # the harness the sample ran against (a profile may change the dialect)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


INVALID = "invalid"  # the verdict of a record that is not a scorable sample
UNUSABLE = "unusable"  # the verdict of a sample whose task's suite failed the gauge check (not scored)


def invalid_row(problem: LineProblem, task_id: str | None = None, profile: str | None = None) -> dict:
    """The output line of an invalid record: same keys as a scored sample, verdict ``invalid``."""
    return {"task_id": task_id, "sample_index": None, "line": problem.line, "verdict": INVALID,
            "cases_failed": 0, "cases_run": 0, "cases_total": 0, "candidate_sha256": None,
            "wall_seconds": 0.0, "detail": str(problem), "profile": profile, "render_hash": None}


@dataclass
class ScoreReport:
    samples_path: str
    suite: str
    fail_fast: bool
    rows: list[ScoredSample]  # the scored samples
    problems: list[LineProblem]  # the invalid records, each counted as ``invalid``
    wall_seconds: float = 0.0
    skipped: dict[str, tuple[int, str]] = field(default_factory=dict)  # task -> (samples, why not scored)
    invalid_task_ids: dict[int, str] = field(default_factory=dict)  # line -> task id of an invalid record
    unusable: list[ScoredSample] = field(default_factory=list)  # samples of tasks whose suite failed the gauge

    @property
    def passed(self) -> int:
        return sum(r.verdict == "pass" for r in self.rows)

    @property
    def pass_rate(self) -> float:
        """Over scored samples; ``records`` says how many records there were in all."""
        return self.passed / len(self.rows) if self.rows else 0.0

    @property
    def not_scored(self) -> int:
        return sum(count for count, _ in self.skipped.values())

    @property
    def records(self) -> int:
        return len(self.rows) + len(self.problems) + len(self.unusable) + self.not_scored

    def output_rows(self) -> list[str]:
        """One JSON line per record, in file order: scored samples, unusable ones and invalid records."""
        out = [(r.line, r.to_json()) for r in self.rows + self.unusable]
        profile = self.rows[0].profile if self.rows else None
        out += [(p.line, json.dumps(invalid_row(p, self.invalid_task_ids.get(p.line), profile), ensure_ascii=False))
                for p in self.problems]
        return [text for _, text in sorted(out, key=lambda item: item[0])]

    def summary(self) -> str:
        rate = len(self.rows) / self.wall_seconds if self.wall_seconds else 0.0
        tasks = len({r.task_id for r in self.rows})
        all_rate = self.passed / self.records if self.records else 0.0
        profile = self.rows[0].profile if self.rows else "default"
        lines = [f"{self.suite} suite: {self.passed}/{len(self.rows)} samples pass "
                 f"(pass rate over scored samples {100 * self.pass_rate:.2f}%), {tasks} tasks, "
                 f"{self.wall_seconds:.1f} s ({rate:.1f} samples/s), profile {profile}",
                 f"records: {self.records} = {len(self.rows)} scored + {len(self.problems)} {INVALID} + "
                 + (f"{len(self.unusable)} {UNUSABLE} + " if self.unusable else "")
                 + f"{self.not_scored} not scored; {self.passed}/{self.records} "
                 f"pass over all records ({100 * all_rate:.2f}%)"]
        if self.unusable:
            why = {r.task_id: r.detail for r in self.unusable}
            lines.append(f"{len(self.unusable)} samples of {len(why)} tasks {UNUSABLE} (their suite failed the "
                         "gauge check; not scored): " + "; ".join(f"{tid} ({reason})" for tid, reason in
                                                                 sorted(why.items())[:10])
                         + (" ..." if len(why) > 10 else ""))
        if self.skipped:
            lines.append(f"{self.not_scored} samples of {len(self.skipped)} tasks without a {self.suite} suite "
                         "not scored: "
                         + "; ".join(f"{tid} ({why})" for tid, (_, why) in sorted(self.skipped.items())[:10]))
        if self.problems:
            lines.append(f"{len(self.problems)} {INVALID} records not scored ({self.samples_path}): "
                         + "; ".join(str(p) for p in self.problems[:10])
                         + (" ..." if len(self.problems) > 10 else ""))
        return "\n".join(lines)


def check_records(sample_file: SampleFile, known: set[str], prompts: Mapping[str, str] | None = None,
                  scorable: set[str] | None = None, *, strict: bool = False) -> tuple[SampleFile, dict[int, str]]:
    """The samples that can be scored; the others join ``problems`` as invalid records (task id the
    suites do not know, completion without its task's prompt). ``strict``: the first is an error."""
    problems = list(sample_file.problems)
    good = []
    invalid_ids = {}
    for s in sample_file.samples:
        if s.task_id not in known:
            problems.append(LineProblem(s.line, "task_id", f"unknown task id {s.task_id!r}: not in the suites"))
            invalid_ids[s.line] = s.task_id
        elif (prompts is not None and s.kind == "completion" and s.task_id not in prompts
              and (scorable is None or s.task_id in scorable)):
            problems.append(LineProblem(s.line, "completion", f"a completion needs the task's prompt, which "
                                                              f"the suites do not hold for {s.task_id}"))
            invalid_ids[s.line] = s.task_id
        else:
            good.append(s)
    problems.sort(key=lambda p: p.line)
    if problems and strict:
        first = problems[0]
        more = f" (and {len(problems) - 1} more invalid records)" if len(problems) > 1 else ""
        raise InvalidInput(first.message + more, source=sample_file.path, record=f"line {first.line}",
                           field=first.field)
    if not good:
        detail = f" ({len(problems)} invalid records, first: {problems[0]})" if problems else ""
        raise InvalidInput(f"no valid samples{detail}", source=sample_file.path)
    return SampleFile(sample_file.path, good, problems), invalid_ids


def score_samples(sample_file: SampleFile, suites: Mapping[str, SuiteSpec], prompts: Mapping[str, str],
                  backend: Backend, *, suite: str, fail_fast: bool = True, workers: int = 2,
                  limits: Limits = Limits(), excluded: Mapping[str, str] | None = None,
                  progress: Callable[[int, int], None] | None = None, strict: bool = False,
                  profile: str = profiles.DEFAULT,
                  reference_seconds: Mapping[str, list[float]] | None = None,
                  unusable: Mapping[str, str] | None = None) -> ScoreReport:
    """Score every valid sample; ``prompts`` completes ``completion`` samples (prompt + completion).

    ``excluded`` names tasks the suites know but cannot score (excluded at import, with the reason):
    their samples are counted as not scored, not as an error. ``unusable`` names tasks whose suite
    failed the gauge check (with the reasons): their samples are rows with verdict ``unusable``, not
    run. ``profile`` (``acceptgate.scoring.profiles``) sets each suite's limits and float rule; ``evalplus``
    needs ``reference_seconds`` per task.
    """
    excluded, unusable = dict(excluded or {}), dict(unusable or {})
    sample_file, invalid_ids = check_records(sample_file, set(suites) | set(excluded), prompts, set(suites),
                                             strict=strict)
    started = time.monotonic()
    skipped: dict[str, tuple[int, str]] = {}
    scored, refused = [], []
    for s in sample_file.samples:
        if s.task_id in unusable and s.task_id in suites:
            refused.append(unusable_row(s, suites[s.task_id], prompts, unusable[s.task_id], profile))
        elif s.task_id in suites:
            scored.append(s)
        else:
            count, _ = skipped.get(s.task_id, (0, ""))
            skipped[s.task_id] = (count + 1, excluded[s.task_id])
    plans: dict[str, tuple] = {}  # task -> (harness, limits) under the profile
    jobs = []
    for s in scored:
        if s.task_id not in plans:
            how = profiles.scoring(profile, suites[s.task_id], limits,
                                   (reference_seconds or {}).get(s.task_id))
            plans[s.task_id] = (harness_for(how.spec), how.limits)
        harness, task_limits = plans[s.task_id]
        jobs.append((harness, s.program(prompts.get(s.task_id, "")), task_limits))
    # Fail-fast only where nothing is hidden: on a hidden suite, being called again would tell a
    # candidate that its previous answer passed (a one-bit store it keeps anywhere then carries that to
    # its next execution); there the cases are called in blocks fixed before the run (execute).
    all_cases = not fail_fast
    fail_fast = fail_fast and suite == VISIBLE
    results = run_jobs(jobs, backend, fail_fast=fail_fast, all_cases=all_cases, workers=workers,
                       progress=progress)
    rows = []
    for s, res in zip(scored, results):
        rows.append(ScoredSample(
            task_id=s.task_id, sample_index=s.index, line=s.line, verdict=res.verdict,
            cases_failed=sum(c.status != "pass" for c in res.cases), cases_run=len(res.cases),
            cases_total=res.cases_total, candidate_sha256=res.candidate_sha256,
            wall_seconds=round(res.wall_seconds, 4), detail=res.detail, profile=profile,
            render_hash=res.render_hash))
    return ScoreReport(sample_file.path, suite, fail_fast, rows, sample_file.problems,
                       time.monotonic() - started, skipped, invalid_ids, refused)


def unusable_row(sample, spec: SuiteSpec, prompts: Mapping[str, str], reason: str, profile: str) -> ScoredSample:
    """The row of a sample not run because its task's suite cannot tell right from wrong."""
    return ScoredSample(task_id=sample.task_id, sample_index=sample.index, line=sample.line, verdict=UNUSABLE,
                        cases_failed=0, cases_run=0, cases_total=len(spec.cases),
                        candidate_sha256=sha256_text(sample.program(prompts.get(sample.task_id, ""))),
                        wall_seconds=0.0, detail=reason[:2000], profile=profile,
                        render_hash=(profiles.float_rule(spec) if profile == profiles.EVALPLUS else spec).render_hash)
