"""The ``nightly`` flow: every stage of ``acceptgate.schedule.NIGHTLY_STAGES`` as a sub-flow, in order,
then one snapshot for analysts. Served by ``acceptgate serve`` (deployment ``nightly/nightly``).

A stage whose flow module is not installed is skipped by an explicit check, logged as a warning and
listed in the summary; a stage whose parameters do not ask for it (no gate source) likewise. A stage
that fails fails the nightly run at that stage (later stages do not run on a partial warehouse).
"""

from __future__ import annotations

from tasks import _prefect_env  # noqa: F401  (offline settings before prefect is imported)

from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from acceptgate import schedule, shards
from tasks import publish


@task(name="import-suites", cache_policy=NO_CACHE, persist_result=False)
def import_suites(humanevalplus: str, warehouse: str, backend: str, limit: int | None) -> str:
    return schedule.import_suites(humanevalplus, warehouse, backend, limit)


@flow(name="nightly", persist_result=False, log_prints=False)
def nightly(warehouse: str | None = None, backend: str = "local", limit: int | None = None,
            gate_source: str | None = None, gate_suites: str | None = None, gate_humanevalplus: str | None = None,
            arms: list[str] | None = None, certify_dataset: str | None = None,
            certify_samples: str | None = None, profile: str = "default",
            dask: str | None = None) -> schedule.ChainSummary:
    """``dask``: N (a LocalCluster of N workers) or a scheduler address (``tcp://host:8786``): the stages
    that run in shards (audit's executions, certify, the gates) run them there; every write stays here."""
    logger = get_run_logger()
    if dask is not None:
        shards.parse_dask(str(dask))  # a bad value fails the chain before any stage
    path = publish.prepare_warehouse(warehouse)
    if gate_humanevalplus and not gate_suites and Path(gate_humanevalplus).exists():
        # one import for every stage; certify takes only a suites directory
        gate_suites = import_suites(gate_humanevalplus, str(path), backend, limit)
    params = {"warehouse": str(path), "backend": backend, "limit": limit, "gate_source": gate_source,
              "gate_suites": gate_suites, "gate_humanevalplus": gate_humanevalplus, "arms": arms,
              "certify_dataset": certify_dataset, "certify_samples": certify_samples, "profile": profile,
              "dask": None if dask is None else str(dask)}
    summary = schedule.ChainSummary("nightly")
    for stage in schedule.NIGHTLY_STAGES:
        summary.stages.append(run_stage(stage, params, logger))
    summary.snapshot = str(publish.publish_snapshot(path))
    publish.summary_artifact(path, summary.lines())
    logger.info("\n".join(summary.lines()))
    return summary


def run_stage(stage: schedule.Stage, params: dict, logger) -> schedule.StageOutcome:
    """Run one stage's flow as a sub-flow, or record why it is skipped."""
    if not stage.installed():
        logger.warning("stage %s skipped: its flow module %s is not installed", stage.name, stage.module)
        return schedule.StageOutcome(stage.name, "skipped", f"{stage.module} not installed")
    fn = stage.load()
    kwargs = stage.call_arguments(fn, params)
    if isinstance(kwargs, schedule.Skip):
        logger.warning("stage %s skipped: %s", stage.name, kwargs.reason)
        return schedule.StageOutcome(stage.name, "skipped", kwargs.reason)
    logger.info("stage %s: %s", stage.name, stage.what)
    result = fn(**kwargs)
    lines = result.lines() if hasattr(result, "lines") else []
    return schedule.StageOutcome(stage.name, "ok", lines[0] if lines else "")
