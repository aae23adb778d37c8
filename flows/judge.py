"""The ``judge`` flow: inputs -> (sensor, retrieval, prompt, backend, F.2 validation) -> judge_* tables.
Run it with ``acceptgate judge``. The flow only sequences the tasks; rows are validated (Great
Expectations) before they are written, and a failed expectation writes nothing."""

from __future__ import annotations

from prefect import flow

from acceptgate.judge.run import JudgeRun
from acceptgate.pipelines.requests import JudgeRequest
from acceptgate.pipelines import ledger
from acceptgate.tasks import judge_tasks as t
from acceptgate.tasks import run_tasks


@flow(name="judge", persist_result=False, log_prints=False)
def judge(request: JudgeRequest) -> JudgeRun:
    r = request
    path = run_tasks.ledger_step(ledger.prepare, r.warehouse)
    run = t.judge_trajectories(path, r.inputs(), backend=r.backend, embedder=r.embedder, strict=r.strict,
                               chat_config=r.chat_config)  # records the attempt
    t.write_verdicts(path, run)
    return run
