"""A certification in the warehouse: the run written through the run ledger (the attempt and the
validated v4v_runs row, stage ``pools``, stage ``certification``, finish and publish), and the check a
gate makes before it decides with a verifier (seed 002: "six gates first, then the agent").

``require(path, verifier, spec_hashes)`` looks in the warehouse for a finished certification run in which
``verifier`` passed every applicable V4V gate on every task, with decisions bound to the verifier version
this code runs and to the very suites the gate will use (each task's spec hash). It returns that run's
id, or raises InvalidInput saying what is missing and the command that certifies it. Nothing is decided
by the verifier before this holds. ``acceptgate.v4v`` computes; this is its only warehouse I/O.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pandas as pd

from acceptgate.store import warehouse
from acceptgate.errors import InvalidInput
from acceptgate.pipelines import ledger
from acceptgate.v4v.store import RESULT_TABLES, STAGE_TABLES, CertifyRun
from acceptgate.v4v.verifiers import VERSION


# -- writes (through the run ledger) ------------------------------------------------------------------

def ledger_run(path: str | Path, run: CertifyRun) -> ledger.Run:
    return ledger.attach(path, kind="certify", run_id=run.run_id, table="v4v_runs", stage_tables=RESULT_TABLES)


def start_run(path: str | Path, run: CertifyRun, *, expectations_dir: str | Path | None = None) -> ledger.Run:
    """The attempt, then the validated v4v_runs row; the run's rows of an earlier attempt go."""
    return ledger.start(path, kind="certify", run_id=run.run_id, table="v4v_runs", row=run.frame(),
                        stage_tables=RESULT_TABLES, stage="certify", expectations_dir=expectations_dir)


def write_stage(path: str | Path, run: CertifyRun, stage: str, frames: Mapping[str, pd.DataFrame], *,
                related: Mapping[str, pd.DataFrame] | None = None,
                expectations_dir: str | Path | None = None) -> dict[str, int]:
    if set(frames) != set(STAGE_TABLES[stage]):
        raise ValueError(f"stage {stage} writes {sorted(STAGE_TABLES[stage])}, got {sorted(frames)}")
    return ledger_run(path, run).write_stage(stage, frames, related=related, expectations_dir=expectations_dir).rows


def finish_run(path: str | Path, run: CertifyRun, status: str, wall_seconds: float,
               failure: BaseException | str | None = None) -> Path | None:
    """'ok': the run's row ok and its rows published (the snapshot's path returned); otherwise the
    attempt and the row end failed (or interrupted, for a stop request)."""
    handle = ledger_run(path, run)
    if status == "ok":
        return handle.finish(wall_seconds=wall_seconds)
    handle.fail(failure or status)
    return None


def task_seconds(path: str | Path, task_ids: list[str]) -> dict[str, float]:
    """Per task, what its newest finished certification in this warehouse spent executing (the sum of
    its executions' wall seconds): a sharded certify starts the longest first (``shards.task_cost``).
    Read before the run starts (a new attempt of the same run id replaces its rows). Only an order
    depends on it: a warehouse that cannot be read gives no history, not an error."""
    if not task_ids or not Path(path).exists():
        return {}
    query = """
        select task_id, seconds from (
            select e.task_id, sum(e.wall_seconds) as seconds,
                   row_number() over (partition by e.task_id order by r.finished_at desc) as newest
            from v4v_executions e join v4v_runs r using (run_id)
            where r.status = 'ok' and e.task_id in (select unnest(?))
            group by e.task_id, e.run_id, r.finished_at)
        where newest = 1"""
    try:
        with warehouse.connect(path, read_only=True) as con:
            return {task: float(seconds) for task, seconds in con.execute(query, [list(task_ids)]).fetchall()
                    if seconds is not None}
    except Exception:  # noqa: BLE001  (a locked, older or foreign file: no history)
        return {}


# -- the gate's precondition ------------------------------------------------------------------------

# The verifier a gate decides with, and the suite it reads, by name. V is the visible suite; the gates
# run it directly (gates/visible.py), so its certified version is the suite verifier's.
GATE_VERIFIERS = {"V": ("visible", VERSION + ":suite")}


@dataclass(frozen=True)
class Certified:
    run_id: str
    verifier: str
    version: str
    tasks: int


def require(path: str | os.PathLike, verifier: str, spec_hashes: Mapping[str, str]) -> Certified:
    """The certification run that covers every (task, spec hash) with a passing certificate, or InvalidInput."""
    if verifier not in GATE_VERIFIERS:
        raise InvalidInput(f"a gate can decide with {', '.join(GATE_VERIFIERS)} only, not {verifier!r}",
                           field="--verifier")
    _, version = GATE_VERIFIERS[verifier]
    how = ("certify it first: acceptgate certify --suites DIR --dataset FILE --verifier "
           f"{verifier} (on the same suites directory)")
    if not os.path.exists(path):
        raise InvalidInput(f"no warehouse, so no certification of {verifier}: {how}", source=str(path),
                           field="--verifier")
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if not {"v4v_runs", "v4v_verifier_summary", "v4v_decisions"} <= tables:
            raise InvalidInput(f"no certification in this warehouse: {how}", source=str(path), field="--verifier")
        runs = con.execute(
            "select r.run_id from v4v_runs r join v4v_verifier_summary s using (run_id) "
            "where r.status = 'ok' and s.verifier = ? and s.gates_passed = s.gates_applicable "
            "order by r.finished_at desc", [verifier]).fetchall()
        if not runs:
            failed = con.execute("select run_id, failed_gates from v4v_verifier_summary where verifier = ? "
                                 "and gates_passed < gates_applicable limit 1", [verifier]).fetchone()
            why = f" (run {failed[0]} failed gates {failed[1]})" if failed else ""
            raise InvalidInput(f"{verifier} has no passing certification{why}: {how}", field="--verifier")
        best = None
        for (run_id,) in runs:
            bound = dict(con.execute(
                "select task_id, any_value(spec_hash) from v4v_decisions where run_id = ? and verifier = ? "
                "and verifier_version = ? group by task_id having count(distinct spec_hash) = 1",
                [run_id, verifier, version]).fetchall())
            missing = sorted(t for t, h in spec_hashes.items() if bound.get(t) != h)
            if not missing:
                return Certified(run_id, verifier, version, len(spec_hashes))
            if best is None or len(missing) < len(best[1]):
                best = (run_id, missing)
    run_id, missing = best
    raise InvalidInput(f"{verifier}'s passing certification (best: run {run_id}) does not cover {len(missing)} of "
                       f"{len(spec_hashes)} tasks with these suites (e.g. {missing[0]}: not certified, or certified "
                       f"on another spec hash or verifier version): {how}", field="--verifier")
