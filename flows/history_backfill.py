"""The ``history-backfill`` flow: select past runs by run id, date range and arm, then run each
stage of ``acceptgate.pipelines.schedule.BACKFILL_STAGES`` over them (today: the leak audit's backfill flow,
``flows/backfill.py``, when installed). Served by ``acceptgate serve`` (deployment
``history-backfill/backfill``), triggered on demand:

    prefect deployment run history-backfill/backfill --param run_ids='["R532"]' --param arms='["conform"]'
"""

from __future__ import annotations

import datetime as dt

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from acceptgate.pipelines import schedule
from acceptgate.flows.nightly import run_stage
from acceptgate.tasks import publish


@task(name="select-runs", cache_policy=NO_CACHE, persist_result=False)
def select_runs(path, request: schedule.BackfillRequest) -> list[schedule.SelectedRun]:
    return schedule.select_runs(path, request)


@flow(name="history-backfill", persist_result=False, log_prints=False)
def history_backfill(run_ids: list[str] | None = None, since: dt.date | None = None, until: dt.date | None = None,
                     arms: list[str] | None = None, warehouse: str | None = None,
                     backend: str = "local", gate_suites: str | None = None,
                     gate_humanevalplus: str | None = None) -> schedule.ChainSummary:
    logger = get_run_logger()
    request = schedule.backfill_request(run_ids=run_ids or [], since=since, until=until, arms=arms or [])
    path = publish.prepare_warehouse(warehouse)
    selected = select_runs(path, request)
    logger.info("backfill: %d run(s) selected: %s", len(selected), ", ".join(r.run_id for r in selected))
    summary = schedule.ChainSummary("history-backfill", selected_runs=[r.run_id for r in selected])
    params = {"warehouse": str(path), "backend": backend, "run_ids": [r.run_id for r in selected],
              "since": since, "until": until, "arms": arms, "gate_suites": gate_suites,
              "gate_humanevalplus": gate_humanevalplus}
    for stage in schedule.BACKFILL_STAGES:
        summary.stages.append(run_stage(stage, params, logger))
    summary.snapshot = str(publish.publish_snapshot(path))
    publish.summary_artifact(path, summary.lines())
    logger.info("\n".join(summary.lines()))
    return summary
