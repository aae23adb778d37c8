"""Write an experiment's rows to the warehouse: a run of the run ledger (attempt, validated stage,
publish), like every other pipeline."""

from __future__ import annotations

import os

from acceptgate.pipelines.experiments.result import ExperimentResult
from acceptgate.pipelines import ledger


def write(path: str | os.PathLike, result: ExperimentResult) -> dict[str, int]:
    """Validate the frames, then replace the run's rows in one transaction and publish them."""
    frames = result.frames()
    path = ledger.prepare(path)
    with ledger.run(path, kind="experiment", run_id=result.run_id, table="experiment_runs",
                    row=frames["experiment_runs"], stage_tables=("experiment_rows",)) as run:
        run.write_stage("experiment", {"experiment_rows": frames["experiment_rows"]},
                        related={"experiment_runs": frames["experiment_runs"]})
    return {t: len(f) for t, f in frames.items()}
