"""The ``stats`` flow: gate (or judge) results from the warehouse -> paired statistics -> stats_* tables.
Run it with ``acceptgate stats``. The flow only sequences the steps (the pipeline's own functions in the
generic step task); the rows are validated (Great Expectations) before they are written, and a failed
expectation writes nothing."""

from __future__ import annotations

from prefect import flow

from acceptgate.pipelines import judge as judge_io
from acceptgate.pipelines import stats as pipeline
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
    step = run_tasks.pipeline_step
    if r.judge_run is not None:
        source_run, measured, extra = step(judge_io.judge_inputs, path, r.judge_run)
        result = step(core.compute, "judge", source_run, measured, settings, name_run=r.derive_run_id)
        result.agreement, result.notes = extra.agreement, extra.notes
        if r.audit_judge_run is not None:
            t.add_judge_comparison(path, result, main_run=r.judge_run, audit_run=r.audit_judge_run)
        conditions = "E+,E-"
    else:
        source_run, measured = step(pipeline.gate_inputs, path, r.gate_run, baseline=r.baseline, arms=r.arms)
        result = step(core.compute, "gate", source_run, measured, settings, name_run=r.derive_run_id)
        conditions = f"arm,{r.baseline}"
    step(pipeline.write, path, result, conditions=conditions)
    return result
