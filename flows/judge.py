"""The ``judge`` flow: inputs -> (sensor, retrieval, prompt, backend, F.2 validation) -> judge_* tables.
Run it with ``acceptgate judge``. The flow only sequences the tasks; rows are validated (Great
Expectations) before they are written, and a failed expectation writes nothing."""

from __future__ import annotations

from prefect import flow

from acceptgate.judge.run import Inputs, JudgeRun
from acceptgate.tasks import judge_tasks as t


@flow(name="judge", persist_result=False, log_prints=False)
def judge(inputs: Inputs, backend: str = "rules", embedder: str = "minilm", warehouse: str | None = None,
          strict: bool = False, chat_config=None) -> JudgeRun:
    path = t.prepare_warehouse(warehouse)
    run = t.judge_trajectories(path, inputs, backend, embedder, strict, chat_config)  # records the attempt
    t.write_verdicts(path, run)
    return run
