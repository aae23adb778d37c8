"""The ``history-backfill`` flow: select past runs by run id, date range and arm, then run each
stage of ``acceptgate.pipelines.schedule.BACKFILL_STAGES`` over them (today: the leak audit's backfill flow,
``flows/backfill.py``, when installed). Served by ``acceptgate serve`` (deployment
``history-backfill/backfill``), triggered on demand:

    prefect deployment run history-backfill/backfill --param run_ids='["R532"]' --param arms='["conform"]'

(the served flow takes the selection's fields as its parameters; ``history_backfill`` itself takes one
``request``, ``acceptgate.pipelines.requests.HistoryBackfillRequest``).
"""

from __future__ import annotations

from prefect import flow, get_run_logger

from acceptgate.pipelines import schedule
from acceptgate.pipelines.requests import HistoryBackfillRequest
from acceptgate.pipelines import ledger
from acceptgate.flows.nightly import run_stage
from acceptgate.tasks import publish
from acceptgate.tasks import run_tasks


@flow(name="history-backfill", persist_result=False, log_prints=False)
def history_backfill(request: HistoryBackfillRequest) -> schedule.ChainSummary:
    logger = get_run_logger()
    path = run_tasks.pipeline_step(ledger.prepare, request.warehouse)
    request = request.model_copy(update={"warehouse": str(path)})
    selected = run_tasks.pipeline_step(schedule.select_runs, path, request)
    logger.info("backfill: %d run(s) selected: %s", len(selected), ", ".join(r.run_id for r in selected))
    summary = schedule.ChainSummary("history-backfill", selected_runs=[r.run_id for r in selected])
    produced = {"selected_runs": [r.run_id for r in selected]}
    for stage in schedule.BACKFILL_STAGES:
        summary.stages.append(run_stage(stage, request, produced, logger))
    summary.snapshot = str(run_tasks.pipeline_step(ledger.publish, path))
    publish.summary_artifact(path, summary.lines())
    logger.info("\n".join(summary.lines()))
    return summary
