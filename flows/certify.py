"""The ``certify`` flow: materials -> pools and runs -> decisions, gates, metrics -> DuckDB -> the table.
Run it with ``acceptgate certify``.

The flow only sequences the tasks; every stage validates its rows (Great Expectations) before it
writes them, so a failed expectation stops the flow with nothing of that stage written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time

from prefect import flow
from prefect.utilities.annotations import quote

from acceptgate.pipelines import shards
from acceptgate._util.phases import Phases
from acceptgate.v4v import certify as core
from acceptgate.v4v import heldout, store
from acceptgate.pipelines.requests import CertifyRequest
from acceptgate.flows import dask_runner
from acceptgate.pipelines.families import CERTIFY
from acceptgate.pipelines import certify as certify_io
from acceptgate.pipelines import ledger
from acceptgate.tasks import certify_tasks as t
from acceptgate.tasks import run_tasks


class CertifySummary:
    """What the flow returns. A plain class on purpose, not a dataclass: Prefect walks a flow's return
    value looking for futures, through dataclasses and containers, and the certification holds every
    run's per-case outputs (minutes of walking on all HumanEval+ tasks)."""

    def __init__(self, run: store.CertifyRun, certification: core.Certification, rows: dict[str, int] | None = None,
                 warehouse: str = "", wall_seconds: float = 0.0, timing: str = "") -> None:
        self.timing = timing  # where the run's time went, by phase (printed with --verbose)
        self.run = run
        self.certification = certification
        self.rows = rows or {}
        self.warehouse = warehouse
        self.wall_seconds = wall_seconds

    def lines(self) -> list[str]:
        cert = self.certification
        s = cert.seconds
        out = [f"certify run {self.run.run_id}: {self.run.task_count} tasks, k = {self.run.k}, "
               f"verifiers {', '.join(self.run.verifiers)}",
               "pools: " + core.pool_counts(cert.kept, cert.findings),
               core.format_table(cert.reports, cert.certificates, cert.findings),
               "TPR/TNR/BA_norm/FPR_h (attacks accepted): unweighted means of per-task rates (%) over the candidates "
               "labelled by construction, median-BA round; held-out BA_norm: the part of each pool made from this "
               "run's secret seed; errors: decisions that were no decision (crash, timeout, malformed).",
               f"held-out seed (published now the run is over; sha256 committed at its start): "
               f"{cert.settings.heldout_seed or '-'}",
               f"executions: {sum(1 for k in cert.runs if k[3] == 0)} runs once per candidate and suite "
               f"({s.get('execute', 0):.1f} s), {sum(1 for k in cert.runs if k[3] > 0)} re-runs from reset "
               f"({s.get('repeat', 0):.1f} s); decisions, gates and mutants {s.get('decide', 0):.1f} s; "
               f"wall {self.wall_seconds:.1f} s"]
        if "report" in s:  # a sharded run: the seconds above are summed over its shards
            out.append(f"shards: sandbox backend starts {s.get('backend', 0):.1f} s and gates, mutants and metrics "
                       f"{s.get('judge', 0):.1f} s (summed over shards); the reports here {s['report']:.1f} s")
        if self.warehouse:
            out.append(f"warehouse: {self.warehouse} (tables v4v_*: v4v_task_certificates, v4v_findings, ...; views "
                       "v4v_certificates, v4v_pool_composition)")
        return out


@flow(name="certify", persist_result=False, log_prints=False)
def certify(request: CertifyRequest) -> CertifySummary:
    """``verifier_commands``, ``verifier_mounts`` and ``evalplus_venv``: external verifiers to certify
    besides ``settings.verifiers`` (plain fields, for deployments; the CLI puts them in settings).
    ``gauge``: gauge both suites of every task with the gold (a failing hidden suite fails that task's
    certification, a failing visible one is noted on it); False (``--no-gauge``) skips the check,
    recorded in v4v_runs.settings. ``settings.heldout_seed``: the held-out part's secret seed (a fresh
    one when empty; given, it rebuilds a published run's held-out candidates).
    ``dask``: N (a LocalCluster) or a scheduler address: pools, executions and decisions run in shards of
    ``shard_size`` tasks on the cluster; the gates and metrics are computed here from their rows, and
    written here. The run id is the single-process one (it derives from the inputs and settings)."""
    r = request
    started = time.monotonic()
    timed = Phases()  # where the run's time went (--verbose)
    settings = core.with_external(r.settings, r.verifier_commands, r.verifier_mounts, r.evalplus_venv, r.dataset)
    settings = core.with_source(dataclasses.replace(settings, heldout_seed=settings.heldout_seed or heldout.new_seed()))
    # Inputs first: a run refused for its inputs (exit 2) must not leave even a schema-only warehouse.
    with timed("load"):
        materials = run_tasks.pipeline_step(core.load_materials, r.suites_dir, r.dataset, r.samples, limit=r.limit,
                                            task_ids=r.task_ids)
    with contextlib.ExitStack() as cluster:
        # the cluster starts now, in the background, while the suites are checked and the run recorded
        run_shards = cluster.enter_context(dask_runner.cluster(r.dask)) if r.dask else None
        with timed("gauge"):
            gauge_failures = t.check_gauge(r.suites_dir, quote(materials), backend=r.backend) if r.gauge else {}
        with timed("write"):
            path = run_tasks.pipeline_step(ledger.prepare, r.warehouse)
        digest = core.inputs_sha256(materials)
        run_id, origin = r.name_run(digest, settings)
        run = store.make_run(materials, settings, suites_from=r.suites_dir, dataset_from=r.dataset,
                             samples_from=r.samples, backend=r.backend, run_id=run_id, run_id_origin=origin,
                             digest=digest)
        run = dataclasses.replace(run, settings=json.dumps({**json.loads(run.settings),
                                                            "gauge": "checked" if r.gauge else "skipped"},
                                                           sort_keys=True))
        # how long each task took the last time (read before this attempt replaces a previous one's rows)
        history = run_tasks.pipeline_step(certify_io.task_seconds, path, [m.task_id for m in materials]) \
            if r.dask else {}
        with timed("write"):
            # the attempt is recorded; any error or stop below ends it
            ledger_run = run_tasks.start_run(CERTIFY, path, run.run_id, run.frame())
        # quote(): materials hold ~10^5 nested cases and runs every output; Prefect must not walk them
        with ledger_run.guard():
            with timed("execute"):
                if run_shards is not None:
                    batches = shards.certify_shards(materials, r.shard_size, history)
                    report = core.current_progress()
                    results = run_shards(shards.certify_shard, batches, backend=r.backend, settings=settings,
                                         progress=(lambda d, n: report("shards", d, n)) if report else None)
                    cluster.close()  # the workers go before the client merges and writes
                    cert = shards.merge_certify(materials, results, settings)
                else:
                    stage = t.pools_and_runs(quote(materials), backend=r.backend, settings=settings)
                    cert = t.evaluate(quote(materials), quote(stage), backend=r.backend, settings=settings)
            cert.certificates = core.with_gauge(cert.certificates, gauge_failures)
            with timed("write"):
                rows = t.write_pools(path, run, quote(cert))
                rows.update(t.write_certification(path, run, quote(cert)))
    wall = time.monotonic() - started
    with timed("write"):
        run_tasks.finish_run(ledger_run, wall)
    return CertifySummary(run, cert, rows, str(path), wall, timing=timed.line("certify"))


def run(request: CertifyRequest, reporter: core.Progress = None) -> CertifySummary:
    """Run the flow with a progress reporter (the CLI's entry point)."""
    with core.reporting(reporter):
        return certify(request)
