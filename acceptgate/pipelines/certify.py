"""A certification in the warehouse, read back: what a sharded certification's tasks took the last time,
and the check a gate makes before it decides with a verifier (seed 002: "six gates first, then the
agent"). The run itself is written by the run ledger with the certification's family (``families.CERTIFY``).

``require_tasks(path, tasks)`` looks in the warehouse for each task's newest certificate (a finished
certification run's row of v4v_task_certificates) bound to the task's exact suite hashes and pool key,
and raises InvalidInput naming the first task that has none: a gate, the nightly chain and the service
decide nothing on an uncertified task. Each certificate carries V's figures measured on the task (its
FPR on the attacks, FPR_h), which the gate reports beside its false-delivery rates and its policy
(``--max-fpr-attack``) reads. ``acceptgate.v4v`` computes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput


# -- the history a sharded certification orders its shards by -----------------------------------------

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

CERTIFY_HINT = ("certify them first: acceptgate certify --suites DIR --dataset FILE (on the same suites directory "
                "and the data set its references came from), or --no-certify to use uncertified tasks (stored with "
                "every decision)")


@dataclass(frozen=True)
class TaskCertification:
    """The newest finished certification of one task for its exact suites and pool."""

    task_id: str
    run_id: str
    certified: bool
    reason: str
    v_tpr: float | None
    v_tnr: float | None
    v_fpr_h: float | None  # V's measured FPR on the attacks of this task's pool


def task_key(task) -> tuple[str | None, str, str]:
    """(visible spec hash, hidden spec hash, pool key) of a Task: what its certificate must match."""
    from acceptgate.v4v.candidates import pool_key

    hashes = {k: s.spec_hash for k, s in task.suites.items()}
    return (hashes.get("visible"), hashes["hidden"],
            pool_key(task.task_id, task.entry_point, task.prompt, task.reference, hashes))


def lookup(path: str | os.PathLike, tasks: list) -> dict[str, TaskCertification]:
    """Per task (a ``Task`` with its reference and both suites), the newest certificate of a finished
    certification run bound to the task's exact suite hashes and pool key; a task without one is absent."""
    if not tasks or not os.path.exists(path):
        return {}
    keys = {t.task_id: task_key(t) for t in tasks}
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if "v4v_task_certificates" not in tables:
            return {}
        rows = con.execute(
            "select c.task_id, c.run_id, c.certified, c.reason, c.v_tpr, c.v_tnr, c.v_fpr_h, c.visible_spec_hash, "
            "c.hidden_spec_hash, c.pool_key from v4v_task_certificates c join v4v_runs r using (run_id) "
            "where r.status = 'ok' and c.task_id in (select unnest(?)) order by r.finished_at desc, c.run_id",
            [list(keys)]).fetchall()
    found: dict[str, TaskCertification] = {}
    for tid, run_id, ok, reason, tpr, tnr, fpr, vis, hid, pool in rows:
        if tid not in found and (vis, hid, pool) == keys[tid]:
            found[tid] = TaskCertification(tid, run_id, bool(ok), reason, tpr, tnr, fpr)
    return found


def require_tasks(path: str | os.PathLike, tasks: list) -> dict[str, TaskCertification]:
    """``lookup``, as the precondition of a gate: a task with no certification record for its exact
    suites and pool is InvalidInput naming it (exit 2) before any work. A record that says the task
    failed certification is returned: the caller excludes that task with the record's reason."""
    found = lookup(path, tasks)
    missing = [t.task_id for t in tasks if t.task_id not in found]
    if missing:
        more = f" (and {len(missing) - 1} more of {len(tasks)} tasks)" if len(missing) > 1 else ""
        raise InvalidInput(f"task {missing[0]} has no certification record for its exact suites and pool in this "
                           f"warehouse{more}: {CERTIFY_HINT}", source=str(path), field="--no-certify")
    return found
