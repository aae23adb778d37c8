"""Prefect tasks of the stats flow: thin calls into ``acceptgate.stats.pipeline`` (and the judge's
metrics for judge runs). No caching, no persisted results: the warehouse is the record."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.pipelines import stats as pipeline
from acceptgate.stats import pipeline as core

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="load-gate-results", **_STAGE)
def load_gate(path: Path, gate_run: str | None, baseline: str, arms: list[str] | None):
    return pipeline.gate_inputs(path, gate_run, baseline=baseline, arms=arms)


@task(name="load-judge-results", **_STAGE)
def load_judge(path: Path, judge_run: str | None):
    from acceptgate.pipelines import judge as judge_io

    return judge_io.judge_inputs(path, judge_run)


@task(name="compute-statistics", **_STAGE)
def compute(kind: str, source_run_id: str, measured, settings: core.Settings, name_run) -> core.StatsResult:
    return core.compute(kind, source_run_id, measured, settings, name_run=name_run)


@task(name="write-statistics", **_STAGE)
def write(path: Path, result: core.StatsResult, conditions: str) -> dict[str, int]:
    return pipeline.write(path, result, conditions=conditions)


@task(name="compare-judges", **_STAGE)
def add_judge_comparison(path: Path, result: core.StatsResult, main_run: str, audit_run: str) -> None:
    from acceptgate.pipelines import judge as judge_io

    main, audit, configs, left_out = judge_io.judge_comparison_arrays(path, main_run, audit_run)
    core.add_judge_comparison(result, main, audit, configs, main_run, audit_run)
    result.notes.append(f"judge comparison: {main.shape[0]} tasks, {left_out} left out (an invalid verdict of "
                        "either judge, or a configuration missing)")
