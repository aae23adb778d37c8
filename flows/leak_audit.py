"""The ``leak_audit`` flow: scan gate runs for hidden-test material (after each gate run, and nightly).

Defaults scan every gate run in the warehouse; records whose inputs are unchanged since their last
scan are skipped, so running it after each gate run (the deployment's trigger) only scans what is new.
Run it with ``acceptgate leak-audit``.
"""

from __future__ import annotations

import time

from prefect import flow
from prefect.utilities.annotations import quote

from acceptgate.leak import audit as core
from acceptgate.pipelines import leak as leak_io
from acceptgate.pipelines.requests import LeakAuditRequest
from acceptgate.pipelines import ledger
from acceptgate.tasks import leak_tasks as t
from acceptgate.tasks import run_tasks


@flow(name="leak-audit", persist_result=False, log_prints=False)
def leak_audit(request: LeakAuditRequest, progress=None, spooled=None) -> core.AuditResult:
    """``progress`` (a callable per scanned batch) and ``spooled`` (the history files the command's input
    check already read) are the command's hooks, not part of the request."""
    started = time.monotonic()
    r = request
    selection = core.Selection(run_ids=tuple(r.run_ids) if r.run_ids else None, arms=tuple(r.arms) if r.arms else None,
                               history=tuple(r.history))
    # the history files already read by the command's input check (read once), else read first
    spool = spooled if spooled is not None else run_tasks.pipeline_step(core.read_history, selection)
    try:
        path = run_tasks.pipeline_step(ledger.prepare, r.warehouse)
        load = time.monotonic()
        gate = run_tasks.pipeline_step(leak_io.load_records, path, selection, quote(spool))
        load = time.monotonic() - load
        material = time.monotonic()
        # only the tasks the selected records name: the material of every task costs ~0.1 s of CPU each
        materials = t.hidden_material(suites_dir=r.suites_dir, humanevalplus=r.humanevalplus, backend=r.backend,
                                      task_ids=core.task_ids(selection, gate, spool))
        material = time.monotonic() - material
        # quote(): the material holds ~10^5 needles; without it Prefect walks each one looking for futures
        result = run_tasks.pipeline_step(leak_io.run_audit, path, quote(materials), selection, matcher=r.matcher,
                                         rescan=r.rescan, progress=quote(progress), batch_records=core.BATCH_RECORDS,
                                         publish=False, history=quote(spool), gate=quote(gate))
        return t.publish(path, quote(result), started=started, material=material, load=load)
    finally:
        if spool is not None:
            spool.close()  # the spool; run_audit closed it already unless a stage before failed
