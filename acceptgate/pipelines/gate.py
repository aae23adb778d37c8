"""A gate run in the warehouse, through the run ledger: the attempt and the validated gate_runs row,
stage ``gate`` (gate_decisions, gate_attempts, gate_messages), stage ``deliveries``, then finish and
publish. ``acceptgate.gates.run`` computes the run and its frames; this is the gate's only warehouse I/O."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from acceptgate.gates.run import RESULT_TABLES, STAGE_TABLES, GateRun
from acceptgate.pipelines import ledger

Frames = Mapping[str, pd.DataFrame]


def ledger_run(path: str | Path, run: GateRun) -> ledger.Run:
    return ledger.attach(path, kind="gate", run_id=run.run_id, table="gate_runs", stage_tables=RESULT_TABLES)


def start_run(path: str | Path, run: GateRun, *, expectations_dir: str | Path | None = None) -> ledger.Run:
    """Begin an attempt, validate and upsert the run row; a new attempt of the run id starts with its
    old rows removed (the snapshot keeps the last published ones until this attempt publishes)."""
    return ledger.start(path, kind="gate", run_id=run.run_id, table="gate_runs", row=run.frame(),
                        stage_tables=RESULT_TABLES, stage="gate", expectations_dir=expectations_dir)


def write_stage(path: str | Path, run: GateRun, stage: str, frames: Frames, *, related: Frames | None = None,
                expectations_dir: str | Path | None = None) -> ledger.StageWrite:
    """Validate every frame of the stage, then replace the run's rows of its tables in one transaction."""
    if set(frames) != set(STAGE_TABLES[stage]):
        raise ValueError(f"stage {stage} writes {sorted(STAGE_TABLES[stage])}, got {sorted(frames)}")
    return ledger_run(path, run).write_stage(stage, frames, related=related, expectations_dir=expectations_dir)


def finish_run(path: str | Path, run: GateRun, status: str, wall_seconds: float, *,
               failed_stage: str | None = None, failure: str | BaseException | None = None) -> Path | None:
    """'ok' publishes the run's rows to the analysts' snapshot (returned); otherwise the attempt ends
    failed (or interrupted, for a stop request) with the stage and the error, nothing published."""
    handle = ledger_run(path, run)
    if status == "ok":
        return handle.finish(wall_seconds=wall_seconds)
    handle.fail(failure or "failed", failed_stage)
    return None
