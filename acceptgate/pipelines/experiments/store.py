"""Write an experiment's rows to the warehouse: a run of the run ledger (attempt, validated stage,
publish), like every other pipeline."""

from __future__ import annotations

import os

from acceptgate.pipelines.experiments.result import ExperimentResult
from acceptgate.pipelines import ledger
from acceptgate.pipelines.families import EXPERIMENT


def write(path: str | os.PathLike, result: ExperimentResult) -> dict[str, int]:
    """Validate the frames, then replace the run's rows in one transaction and publish them."""
    frames = result.frames()
    path = ledger.prepare(path)
    row = frames[EXPERIMENT.table]
    with EXPERIMENT.run(path, result.run_id, row=row) as run:
        run.write_stage("experiment", {t: frames[t] for t in EXPERIMENT.stage_tables("experiment")},
                        related={EXPERIMENT.table: row})
    return {t: len(f) for t, f in frames.items()}
