"""Batch scoring of an EvalPlus-format samples file against one suite per task (visible or hidden).

The EvalPlus ``evaluate`` workflow on our sandbox: one sandbox process per sample, cases streamed,
stopping at the first failing case (``fail_fast``, as EvalPlus's own ``fast_check``) unless all
cases are asked for. Invalid lines are reported by line number and the rest scored; task ids the
suites do not know, an empty file or a missing file are errors (``InvalidInput``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

from acceptgate.errors import InvalidInput
from acceptgate.render import harness_for
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate import profiles
from acceptgate.sandbox.executor import ExecutionResult, execute, execute_many
from acceptgate.sources.replay import LineProblem, SampleFile
from acceptgate.suitespec import SuiteSpec


@dataclass(frozen=True)
class ScoredSample:
    task_id: str
    sample_index: int  # 0-based among the task's samples, in file order
    line: int
    verdict: str
    cases_failed: int  # of the cases run; with fail_fast 0 or 1; 0 if the program failed before any case (see detail)
    cases_run: int
    cases_total: int
    candidate_sha256: str
    wall_seconds: float
    detail: str
    profile: str = "default"  # the scoring profile (acceptgate.profiles): part of every row
    render_hash: str = ""  # the harness the sample ran against (a profile may change the dialect)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


@dataclass
class ScoreReport:
    samples_path: str
    suite: str
    fail_fast: bool
    rows: list[ScoredSample]
    problems: list[LineProblem]
    wall_seconds: float = 0.0
    skipped: dict[str, tuple[int, str]] = field(default_factory=dict)  # task -> (samples, why not scored)

    @property
    def passed(self) -> int:
        return sum(r.verdict == "pass" for r in self.rows)

    @property
    def pass_rate(self) -> float:
        return self.passed / len(self.rows) if self.rows else 0.0

    def summary(self) -> str:
        rate = len(self.rows) / self.wall_seconds if self.wall_seconds else 0.0
        tasks = len({r.task_id for r in self.rows})
        profile = self.rows[0].profile if self.rows else "default"
        lines = [f"{self.suite} suite: {self.passed}/{len(self.rows)} samples pass "
                 f"(pass rate over scored samples {100 * self.pass_rate:.2f}%), {tasks} tasks, "
                 f"{self.wall_seconds:.1f} s ({rate:.1f} samples/s), profile {profile}"]
        if self.skipped:
            n = sum(count for count, _ in self.skipped.values())
            lines.append(f"{n} samples of {len(self.skipped)} tasks without a {self.suite} suite not scored: "
                         + "; ".join(f"{tid} ({why})" for tid, (_, why) in sorted(self.skipped.items())[:10]))
        if self.problems:
            lines.append(f"{len(self.problems)} invalid lines not scored: "
                         + "; ".join(str(p) for p in self.problems[:10])
                         + (" ..." if len(self.problems) > 10 else ""))
        return "\n".join(lines)


def check_task_ids(sample_file: SampleFile, known: set[str], prompts: Mapping[str, str] | None = None,
                   scorable: set[str] | None = None) -> None:
    unknown = [s for s in sample_file.samples if s.task_id not in known]
    if unknown:
        ids = sorted({s.task_id for s in unknown})
        raise InvalidInput(f"{len(ids)} unknown task ids ({', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''}) "
                           f"on {len(unknown)} lines: not in the suites", source=sample_file.path,
                           record=f"line {unknown[0].line}", field="task_id")
    if prompts is not None:
        need = next((s for s in sample_file.samples if s.kind == "completion" and s.task_id not in prompts
                     and (scorable is None or s.task_id in scorable)), None)
        if need is not None:
            raise InvalidInput(f"a completion needs the task's prompt, which the suites do not hold for "
                               f"{need.task_id}", source=sample_file.path, record=f"line {need.line}",
                               field="completion")
    if not sample_file.samples:
        detail = f" ({len(sample_file.problems)} invalid lines, first: {sample_file.problems[0]})" \
            if sample_file.problems else ""
        raise InvalidInput(f"no valid samples{detail}", source=sample_file.path)


def score_samples(sample_file: SampleFile, suites: Mapping[str, SuiteSpec], prompts: Mapping[str, str],
                  backend: Backend, *, suite: str, fail_fast: bool = True, workers: int = 2,
                  limits: Limits = Limits(), excluded: Mapping[str, str] | None = None,
                  progress: Callable[[int, int], None] | None = None, profile: str = profiles.DEFAULT,
                  reference_seconds: Mapping[str, list[float]] | None = None) -> ScoreReport:
    """Score every valid sample; ``prompts`` completes ``completion`` samples (prompt + completion).

    ``excluded`` names tasks the suites know but cannot score (excluded at import, with the reason):
    their samples are counted as not scored, not as an error. ``profile`` (``acceptgate.profiles``)
    sets each suite's limits and float rule; ``evalplus`` needs ``reference_seconds`` per task.
    """
    excluded = dict(excluded or {})
    check_task_ids(sample_file, set(suites) | set(excluded), prompts, set(suites))
    started = time.monotonic()
    skipped: dict[str, tuple[int, str]] = {}
    scored = []
    for s in sample_file.samples:
        if s.task_id in suites:
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
    results = _execute_all(jobs, backend, fail_fast, workers, progress)
    rows = []
    for s, res in zip(scored, results):
        rows.append(ScoredSample(
            task_id=s.task_id, sample_index=s.index, line=s.line, verdict=res.verdict,
            cases_failed=sum(c.status != "pass" for c in res.cases), cases_run=len(res.cases),
            cases_total=res.cases_total, candidate_sha256=res.candidate_sha256,
            wall_seconds=round(res.wall_seconds, 4), detail=res.detail, profile=profile,
            render_hash=res.render_hash))
    return ScoreReport(sample_file.path, suite, fail_fast, rows, sample_file.problems,
                       time.monotonic() - started, skipped)


def _execute_all(jobs: list[tuple], backend: Backend, fail_fast: bool, workers: int,
                 progress: Callable[[int, int], None] | None) -> list[ExecutionResult]:
    """execute_many when every job has the same limits; else one pool over (harness, source, limits)."""
    if len({id(limits) for _, _, limits in jobs}) <= 1:
        limits = jobs[0][2] if jobs else Limits()
        return execute_many([(h, src) for h, src, _ in jobs], backend, limits=limits, fail_fast=fail_fast,
                            workers=workers, progress=progress)
    from concurrent.futures import ThreadPoolExecutor, as_completed

    results: list[ExecutionResult | None] = [None] * len(jobs)
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(execute, h, src, backend, limits=lim, fail_fast=fail_fast): i
                   for i, (h, src, lim) in enumerate(jobs)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            done += 1
            if progress:
                progress(done, len(jobs))
    return results  # type: ignore[return-value]
