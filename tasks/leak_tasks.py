"""Prefect tasks of the leak_audit and backfill flows. Reading the history files (validated whole and
spooled before anything else so a bad record writes nothing, ``acceptgate.leak.audit.read_history``)
and the scan (in batches, unchanged records skipped: ``acceptgate.pipelines.leak.run_audit``, or its
record shards ``shards.leak_shard`` on Dask) are steps the pipeline defines whole, run in the generic
``run_tasks.pipeline_step``.

Coarse stages here: the hidden material of the tasks the selected records name, and the publish of the
analysts' snapshot with the flow's times. No caching and no persisted results: the warehouse is the record.
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.leak import audit
from acceptgate.pipelines import leak as leak_io
from acceptgate.leak.material import TaskMaterial


_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="hidden-material", **_STAGE)
def hidden_material(suites_dir: str | None, humanevalplus: str | None, backend: str,
                    task_ids: frozenset[str] | None = None) -> dict[str, TaskMaterial]:
    """Of the tasks ``task_ids`` names (the selected records'), or of every task."""
    return audit.load_materials(audit.load_tasks(suites_dir=suites_dir, humanevalplus=humanevalplus,
                                                 backend=backend, task_ids=task_ids), task_ids)


@task(name="publish", **_STAGE)
def publish(path: Path, result: audit.AuditResult, *, started: float, material: float,
            load: float = 0.0) -> audit.AuditResult:
    """The leak audit's run and the scanned runs' leak rows published, and the flow's times (since
    ``started``; ``load`` seconds reading the gate records, ``material`` building the hidden material;
    this publish) put on the result."""
    began = time.monotonic()
    result = leak_io.publish_result(path, result)
    return leak_io.with_flow_times(result, started=started, material=material, publish=time.monotonic() - began,
                                   load=load)
