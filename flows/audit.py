"""The ``audit`` flow: import -> suites -> gauge -> execute -> publish, into the DuckDB warehouse.

The flow only sequences the stage tasks; each stage validates its rows (Great Expectations) and
writes them in one short transaction, so a failed expectation stops the flow at that stage with
nothing of it written. Run it with ``acceptgate audit``.
"""

from __future__ import annotations

import time

from prefect import flow
from prefect.utilities.annotations import quote

from acceptgate.pipelines import audit as core
from acceptgate.pipelines import shards
from acceptgate.pipelines.families import AUDIT
from acceptgate._util.phases import Phases
from acceptgate.tasks.publish import summary_artifact
from acceptgate.pipelines.requests import AuditRequest
from acceptgate.pipelines import ledger
from acceptgate.flows import dask_runner
from acceptgate.tasks import run_tasks
from acceptgate.tasks.audit import execute_stage, gauge_stage, import_stage, publish


@flow(name="audit", persist_result=False, log_prints=False)
def audit(request: AuditRequest) -> core.Summary:
    """``dask``: N (a LocalCluster) or a scheduler address: the execution stage (references and wrong
    samples on every suite) runs in shards of ``shard_size`` tasks there; its rows are written here.
    The run id is the single-process one."""
    started = time.monotonic()
    r = request
    timed = Phases()  # where the run's time went, by stage (each stage's rows written in it; --verbose)
    with timed("write"):
        path = run_tasks.pipeline_step(ledger.prepare, r.warehouse)
    with timed("load (import)"):
        imp = import_stage(path, r)  # records the attempt
    # quote(): stage results hold thousands of nested dataclasses; without it Prefect walks every one
    # of them looking for futures before each task (tens of seconds on the full data set).
    with AUDIT.attach(path, imp.run.run_id).guard():  # also between stages: an error or stop ends the attempt
        with timed("suites"):
            suites = run_tasks.pipeline_step(core.stage_suites, path, quote(imp))
        with timed("gauge"):
            gauge = gauge_stage(path, quote(imp), quote(suites), backend=r.backend)
        with timed("execute"):
            if r.dask:
                batches = shards.audit_shards(imp.imported.tasks, gauge.gauges, r.shard_size)
                results = dask_runner.map_shards(shards.audit_shard, batches, r.dask, backend=r.backend)
                # the shards' records written as the single-process stage writes its own (no backend here)
                executed = run_tasks.pipeline_step(core.stage_execute, path, quote(imp), quote(suites), quote(gauge),
                                                   None, executed=quote(shards.merge_audit(results)))
            else:
                executed = execute_stage(path, quote(imp), quote(suites), quote(gauge), backend=r.backend)
        with timed("write"):
            summary = publish(path, quote(imp), quote(suites), quote(gauge), quote(executed), started)
    summary_artifact(path, summary.lines())  # the report's summary, on this flow run in the Prefect UI
    summary.timing = timed.line("audit")
    return summary


def run(request: AuditRequest, reporter: core.Reporter | None = None) -> core.Summary:
    """Run the flow with a progress reporter (the CLI's entry point)."""
    with core.reporting(reporter or core.Reporter()):
        return audit(request)
