"""The ``stats`` flow: gate (or judge) results from the warehouse -> paired statistics -> stats_* tables.
Run it with ``acceptgate stats``. The flow only sequences the tasks; the rows are validated (Great
Expectations) before they are written, and a failed expectation writes nothing."""

from __future__ import annotations

from prefect import flow

from acceptgate.pipelines.requests import StatsRequest
from acceptgate.pipelines import ledger
from acceptgate.stats import pipeline as core
from acceptgate.tasks import stats_tasks as t
from acceptgate.tasks import run_tasks


@flow(name="stats", persist_result=False, log_prints=False)
def stats(request: StatsRequest) -> core.StatsResult:
    r = request
    settings = r.settings()
    path = run_tasks.pipeline_step(ledger.prepare, r.warehouse)
    if r.judge_run is not None:
        source_run, measured, extra = t.load_judge(path, r.judge_run)
        result = t.compute("judge", source_run, measured, settings, r.derive_run_id)
        result.agreement, result.notes = extra.agreement, extra.notes
        if r.audit_judge_run is not None:
            t.add_judge_comparison(path, result, main_run=r.judge_run, audit_run=r.audit_judge_run)
        conditions = "E+,E-"
    else:
        source_run, measured = t.load_gate(path, r.gate_run, baseline=r.baseline, arms=r.arms)
        result = t.compute("gate", source_run, measured, settings, r.derive_run_id)
        conditions = f"arm,{r.baseline}"
    t.write(path, result, conditions)
    return result
