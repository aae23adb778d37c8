"""The stats flow's own task: the comparison of two judge runs (loading, computing and writing are the
pipeline's functions, run in the generic ``run_tasks.pipeline_step``). No caching, no persisted
results: the warehouse is the record."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.stats import pipeline as core

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="compare-judges", **_STAGE)
def add_judge_comparison(path: Path, result: core.StatsResult, main_run: str, audit_run: str) -> None:
    from acceptgate.pipelines import judge as judge_io

    main, audit, configs, left_out = judge_io.judge_comparison_arrays(path, main_run, audit_run)
    core.add_judge_comparison(result, main, audit, configs, main_run, audit_run)
    result.notes.append(f"judge comparison: {main.shape[0]} tasks, {left_out} left out (an invalid verdict of "
                        "either judge, or a configuration missing)")
