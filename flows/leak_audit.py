"""The ``leak_audit`` flow: scan gate runs for hidden-test material (after each gate run, and nightly).

Defaults scan every gate run in the warehouse; records whose inputs are unchanged since their last
scan are skipped, so running it after each gate run (the deployment's trigger) only scans what is new.
Run it with ``acceptgate leak-audit``.
"""

from __future__ import annotations

from prefect import flow
from prefect.utilities.annotations import quote

from acceptgate.leak import audit as core
from acceptgate.leak.matcher import DEFAULT
from acceptgate.tasks import leak_tasks as t


@flow(name="leak-audit", persist_result=False, log_prints=False)
def leak_audit(suites_dir: str | None = None, humanevalplus: str | None = None, warehouse: str | None = None,
               run_ids: list[str] | None = None, arms: list[str] | None = None, history: list[str] | None = None,
               matcher: str = DEFAULT, rescan: bool = False, backend: str = "local",
               progress=None, spooled=None) -> core.AuditResult:
    selection = core.Selection(run_ids=tuple(run_ids) if run_ids else None, arms=tuple(arms) if arms else None,
                               history=tuple(history or ()))
    # the history files already read by the command's input check (read once), else read first
    spool = spooled if spooled is not None else t.read_history(selection)
    try:
        path = t.prepare_warehouse(warehouse)
        materials = t.hidden_material(suites_dir, humanevalplus, backend)
        # quote(): the material holds ~10^5 needles; without it Prefect walks each one looking for futures
        result = t.scan(path, quote(materials), selection, matcher, rescan, core.BATCH_RECORDS,
                        quote(progress), quote(spool))
        return t.publish(path, quote(result))
    finally:
        if spool is not None:
            spool.close()  # the spool; run_audit closed it already unless a stage before failed
