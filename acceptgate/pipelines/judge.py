"""The judge's warehouse side: reading a judge run's verdicts back (for the statistics and the study),
and the judge as a run of the ledger: the attempt is recorded as soon as the run id is known (before the
first trajectory is judged, so a stop while judging marks it 'interrupted'), the verdicts and the
judge_runs row are written as one stage, and the run is published."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.judge import metrics
from acceptgate.judge import run as core
from acceptgate.pipelines import ledger
from acceptgate.pipelines.families import JUDGE
from acceptgate.pipelines.requests import JudgeRequest
from acceptgate.stats.pipeline import Measured

STAGE = "judge"


def judge(path: str | os.PathLike, request: JudgeRequest) -> core.JudgeRun:
    """Judge every trajectory (``core.judge_inputs``) inside a recorded attempt, the run named by the
    request's derivation. Invalid inputs are refused before the attempt starts (nothing written)."""
    started: list[ledger.Run] = []

    def record(run_id: str) -> None:
        started.append(JUDGE.start(path, run_id))

    r = request
    try:
        return core.judge_inputs(r.inputs(), name_run=r.derive_run_id, backend=r.backend, embedder=r.embedder,
                                 strict=r.strict, chat_config=r.chat_config, on_run_id=record)
    except BaseException as exc:
        if started:
            started[0].fail(exc, STAGE)
        raise


def record(path: str | os.PathLike, run: core.JudgeRun, *, publish: bool = True) -> tuple[dict[str, int], Path | None]:
    """Write the judged run's rows (validated with its judge_runs row) in the attempt ``judge`` began,
    then publish it. Returns the rows written per table and the snapshot's path."""
    handle = JUDGE.attach(path, run.run_id)
    written = handle.write_stage(STAGE, {**run.frames(), JUDGE.table: run.run_frame()})
    return written.rows, handle.finish(publish=publish)


def write(path: str | os.PathLike, run: core.JudgeRun, *, expectations_dir=None, publish: bool = True) -> dict[str, int]:
    """Record a judged run in one go: an attempt, every frame and the judge_runs row validated
    together, written in one transaction, and (``publish``) the run in the snapshot."""
    with JUDGE.run(path, run.run_id, publish=publish) as recorded:
        written = recorded.write_stage(STAGE, {**run.frames(), JUDGE.table: run.run_frame()},
                                       expectations_dir=expectations_dir)
    return written.rows


# -- reading judge runs back ------------------------------------------------------------------------

def read_verdicts(path: str | os.PathLike, judge_run: str | None) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if "judge_verdicts" not in tables:
            raise InvalidInput("the warehouse has no judge results (table judge_verdicts)", source=str(path))
        if judge_run is None:
            row = con.execute("select run_id from judge_runs order by written_at desc limit 1").fetchone()
            if row is None:
                raise InvalidInput("no judge run in the warehouse; run 'acceptgate judge' first", field="--judge-run")
            judge_run = row[0]
        verdicts = con.execute("select * from judge_verdicts where run_id = ? order by trajectory_id", [judge_run]).df()
        labels = con.execute("select trajectory_id, kind from judge_human_labels where run_id = ?", [judge_run]).df()
    if verdicts.empty:
        raise InvalidInput(f"no verdicts for judge run {judge_run!r}", source=str(path), field="--judge-run")
    return judge_run, verdicts, labels


def judge_inputs(path: str | os.PathLike, judge_run: str | None) -> tuple[str, list[Measured], metrics.JudgeExtras]:
    """The judge run (default the latest) as paired data for the statistics."""
    judge_run, verdicts, labels = read_verdicts(path, judge_run)
    with warehouse.connect(path, read_only=True) as con:
        backend = con.execute("select backend from judge_runs where run_id = ?", [judge_run]).fetchone()[0]
    measured, extras = metrics.judge_measures(judge_run, verdicts, labels, backend)
    return judge_run, measured, extras


def judge_comparison_arrays(path: str | os.PathLike, main_run: str,
                            audit_run: str) -> tuple[np.ndarray, np.ndarray, list[str], int]:
    """``metrics.comparison_arrays`` of the two judge runs' verdicts."""
    _, main, _ = read_verdicts(path, main_run)
    _, audit, _ = read_verdicts(path, audit_run)
    return metrics.comparison_arrays(main, audit, main_run, audit_run)
