"""Coarse shards of sandbox executions, for scale-out on a cluster (``flows/score_sharded.py`` maps
them over Prefect's DaskTaskRunner). Prefect-free.

A shard is a batch of samples with the suites they need, plain picklable data. The machine that
runs it opens its own sandbox backend by name and scores the batch with ``score.score_samples`` --
the same code as the single-process ``acceptgate score`` -- so a shard's verdicts cannot differ from
the single-process ones by construction, only by the host. Shards are large (hundreds of
executions) because each one pays for a backend start (the fork-server pool: ~0.1-0.5 s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping

from acceptgate import profiles, score
from acceptgate.errors import InvalidInput
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.sources.replay import Sample, SampleFile, read_samples
from acceptgate.suitespec import SuiteSpec

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
    sample_file = read_samples(samples)
    suites, prompts, excluded = score.load_suites(suites_dir, suite)
    timing = score.load_timing(suites_dir, suite) if profiles.check(profile) == profiles.EVALPLUS else {}
    if timing and (missing := sorted(set(suites) - set(timing))):
        raise InvalidInput(f"the evalplus profile needs the reference's time per case, and {len(missing)} suites "
                           f"have no timing sidecar (e.g. {missing[0]}); re-import them", source=suites_dir,
                           field="--profile")
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
          results: list[ShardResult], *, suite: str, fail_fast: bool, wall_seconds: float) -> ShardedScore:
    """One report, rows in file order, as ``score_samples`` gives for the whole file at once."""
    rows = [row for res in sorted(results, key=lambda r: r.index) for row in res.rows]
    skipped: dict[str, tuple[int, str]] = {}
    for s in sample_file.samples:
        if s.task_id not in suites:
            count, _ = skipped.get(s.task_id, (0, ""))
            skipped[s.task_id] = (count + 1, (excluded or {}).get(s.task_id, "no suite"))
    by_worker: dict[str, int] = {}
    for res in results:
        by_worker[res.worker] = by_worker.get(res.worker, 0) + len(res.rows)
    report = score.ScoreReport(sample_file.path, suite, fail_fast, rows, sample_file.problems, wall_seconds, skipped)
    return ShardedScore(report, len(results), by_worker)
