"""The run ledger's start and finish as Prefect tasks, one set for every flow: each takes the run's
family (``acceptgate.pipelines.families``) or its handle. A stage's rows are written by the stage task
that computes them (``Run.write_stage``), so no task only forwards a write. A step the pipeline defines
whole (preparing the warehouse, publishing the run-less tables, loading a run's results, computing its
statistics, a leak scan, one shard of a sharded stage on Dask) runs in one generic task that is given
the pipeline function."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.pipelines import ledger

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="start-run", **_STAGE)
def start_run(family: ledger.Family, path: Path, run_id: str, row: pd.DataFrame | None = None) -> ledger.Run:
    """The attempt is recorded, the run's row validated and upserted; any error or stop after ends it."""
    return family.start(path, run_id, row=row)


@task(name="finish-run", **_STAGE)
def finish_run(run: ledger.Run, wall_seconds: float | None = None) -> Path | None:
    """The run is complete: its row 'ok' and its rows in the analysts' snapshot (returned)."""
    return run.finish(wall_seconds=wall_seconds)


@task(name="pipeline-step", task_run_name="{step.__name__}", **_STAGE)
def pipeline_step(step: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``step(*args, **kwargs)`` as a task of the flow, named after the pipeline function it runs: a
    step the pipeline already defines whole (``ledger.prepare``, ``ledger.publish``, a stage that loads,
    computes or writes, a shard function of ``pipelines.shards`` on a Dask worker) needs no task of its
    own that would only forward the call."""
    return step(*args, **kwargs)
