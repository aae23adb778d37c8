"""The ``judge`` flow: inputs -> (sensor, retrieval, prompt, backend, F.2 validation) -> judge_* tables.
Run it with ``acceptgate judge``. The flow only sequences the steps; rows are validated (Great
Expectations) before they are written, and a failed expectation writes nothing."""

from __future__ import annotations

from prefect import flow

from acceptgate.judge.run import JudgeRun
from acceptgate.pipelines import judge as pipeline
from acceptgate.pipelines.requests import JudgeRequest
from acceptgate.pipelines import ledger
from acceptgate.tasks import run_tasks


@flow(name="judge", persist_result=False, log_prints=False)
def judge(request: JudgeRequest) -> JudgeRun:
    path = run_tasks.pipeline_step(ledger.prepare, request.warehouse)
    run = run_tasks.pipeline_step(pipeline.judge, path, request)  # records the attempt, then judges
    run_tasks.pipeline_step(pipeline.record, path, run)  # the verdicts, then the run published
    return run
