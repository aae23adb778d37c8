"""Write an experiment's rows to the warehouse. The one place experiments touch it, so a run ledger can
replace this function alone."""

from __future__ import annotations

import os

from acceptgate import expectations, warehouse
from acceptgate.experiments.result import ExperimentResult


def write(path: str | os.PathLike, result: ExperimentResult) -> dict[str, int]:
    """Validate the frames, then replace the run's rows in one transaction and publish them."""
    frames = result.frames()
    warehouse.migrate(path)
    with warehouse.run_attempt(path, result.run_id, flow="experiment"):
        checked = expectations.validate_batch(path, result.run_id, "experiment", frames)
        with warehouse.transaction(path) as con:
            written = warehouse.replace_run_rows(con, result.run_id, frames)
            warehouse.record_stage(con, result.run_id, "experiment", written, checked)
    return {t: len(f) for t, f in frames.items()}
