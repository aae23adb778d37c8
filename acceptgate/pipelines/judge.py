"""The judge as a run of the ledger: the attempt is recorded as soon as the run id is known (before the
first trajectory is judged, so a stop while judging marks it 'interrupted'), the verdicts and the
judge_runs row are written as one stage, and the run is published."""

from __future__ import annotations

import os
from pathlib import Path

from acceptgate.judge import run as core
from acceptgate.pipelines import ledger

STAGE = "judge"


def _handle(path: str | os.PathLike, run_id: str) -> ledger.Run:
    return ledger.attach(path, kind="judge", run_id=run_id, table="judge_runs", stage_tables=core.TABLES)


def judge(path: str | os.PathLike, inputs: core.Inputs, *, backend: str = "rules", embedder: str = "minilm",
          strict: bool = False, chat_config=None) -> core.JudgeRun:
    """Judge every trajectory (``core.judge_inputs``) inside a recorded attempt. Invalid inputs are
    refused before the attempt starts (nothing written)."""
    started: list[ledger.Run] = []

    def record(run_id: str) -> None:
        started.append(ledger.start(path, kind="judge", run_id=run_id, table="judge_runs",
                                    stage_tables=core.TABLES))

    try:
        return core.judge_inputs(inputs, backend=backend, embedder=embedder, strict=strict,
                                 chat_config=chat_config, on_run_id=record)
    except BaseException as exc:
        if started:
            started[0].fail(exc, STAGE)
        raise


def record(path: str | os.PathLike, run: core.JudgeRun, *, publish: bool = True) -> tuple[dict[str, int], Path | None]:
    """Write the judged run's rows (validated with its judge_runs row) in the attempt ``judge`` began,
    then publish it. Returns the rows written per table and the snapshot's path."""
    handle = _handle(path, run.run_id)
    written = handle.write_stage(STAGE, run.frames(), run_row=run.run_frame())
    return written.rows, handle.finish(publish=publish)
