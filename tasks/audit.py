"""Prefect tasks of the audit flow: the stages that open a sandbox backend, and the publish, calling
``acceptgate.pipelines.audit``. The suites stage, the writing of the execution stage's sharded records
and the shards themselves need no backend here and run in the generic ``run_tasks.pipeline_step``.

Stages are coarse (one task per stage, not per execution): the executions inside a stage run in
parallel sandbox processes already. Results stay in memory (no caching, no persisted results): the
warehouse is the record. A sandbox backend is opened per stage by name, since backends hold
processes and cannot travel between tasks.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.pipelines import audit
from acceptgate.pipelines.families import AUDIT
from acceptgate.pipelines.requests import AuditRequest

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="import", **_STAGE)
def import_stage(warehouse: Path, request: AuditRequest) -> audit.ImportStage:
    with audit.open_backend(request.backend) as sandbox:
        return audit.stage_import(warehouse, sandbox, request)


@task(name="gauge", **_STAGE)
def gauge_stage(warehouse: Path, imp: audit.ImportStage, suites: audit.SuitesStage,
                backend: str) -> audit.GaugeStage:
    with audit.open_backend(backend) as sandbox:
        return audit.stage_gauge(warehouse, imp, suites, sandbox)


@task(name="execute", **_STAGE)
def execute_stage(warehouse: Path, imp: audit.ImportStage, suites: audit.SuitesStage, gauge: audit.GaugeStage,
                  backend: str) -> audit.ExecuteStage:
    with audit.open_backend(backend) as sandbox:
        return audit.stage_execute(warehouse, imp, suites, gauge, sandbox)


@task(name="publish", **_STAGE)
def publish(warehouse: Path, imp: audit.ImportStage, suites: audit.SuitesStage, gauge: audit.GaugeStage,
            execute: audit.ExecuteStage, started: float) -> audit.Summary:
    audit.reporter().stage("publish")
    snapshot = AUDIT.attach(warehouse, imp.run.run_id).finish(wall_seconds=audit.elapsed(started))
    return audit.summarize(warehouse, imp, suites, gauge, execute, wall_seconds=audit.elapsed(started),
                           snapshot=snapshot)
