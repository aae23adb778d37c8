"""Prefect tasks of the certify flow: thin calls into ``acceptgate.v4v``.

One task per stage (the work inside runs in parallel sandbox processes already). No caching, no
persisted results: the warehouse is the record. Sandbox backends are opened inside each task by name.
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.scoring import gauge

from acceptgate.datasets import suitefiles
from acceptgate.sandbox import backend as backends
from acceptgate.v4v import certify as core
from acceptgate.pipelines.families import CERTIFY
from acceptgate.v4v import store

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="gauge", **_STAGE)
def check_gauge(suites_dir: str, materials: list, backend: str) -> dict[str, str]:
    """Both suites of every task gauged, with the gold as reference and the task's own wrong samples of
    the suites directory: task id -> why a suite failed (a hidden suite's failure fails the task's
    certification; a visible one's is noted on it)."""
    with backends.create(backend) as sandbox:
        ids = {m.task_id for m in materials}  # only theirs read
        check = gauge.assess_dir(suitefiles.read_suites(suites_dir, task_ids=ids), sandbox, task_ids=ids,
                                 references={m.task_id: m.gold for m in materials})
    return {r.task_id + "\x00" + r.suite: "; ".join(r.reasons) for r in check.failed}


@task(name="pools-and-runs", **_STAGE)
def pools_and_runs(materials: list, backend: str, settings: core.Settings) -> dict:
    """Propose the pools, run every candidate once per suite, settle GT's disagreements with the
    construction labels (findings, nothing relabelled), re-run from reset."""
    progress = core.current_progress()
    seconds = {}
    with backends.create(backend) as sandbox:
        t0 = time.monotonic()
        proposed = core.propose_pools(materials, settings)
        all_runs = core.execute_pools(materials, proposed, sandbox, settings, progress)
        seconds["execute"] = time.monotonic() - t0
        t0 = time.monotonic()
        kept, findings = core.check_construction(materials, proposed, all_runs, sandbox, settings)
        seconds["construction"] = time.monotonic() - t0
        t0 = time.monotonic()
        all_runs.update(core.repeat_runs(materials, kept, sandbox, settings, progress))
        seconds["repeat"] = time.monotonic() - t0
    return {"proposed": proposed, "kept": kept, "findings": findings, "runs": all_runs, "seconds": seconds}


@task(name="evaluate", **_STAGE)
def evaluate(materials: list, stage: dict, backend: str, settings: core.Settings) -> core.Certification:
    t0 = time.monotonic()
    with backends.create(backend) as sandbox:
        verifiers = core.make_verifiers(settings.verifiers, sandbox, settings.limits, settings.external)
        records, verdicts, reports, certificates = core.evaluate(materials, stage["kept"], stage["runs"], verifiers,
                                                                 settings, core.current_progress(), stage["findings"])
    seconds = {**stage["seconds"], "decide": time.monotonic() - t0}
    return core.Certification(materials, stage["proposed"], stage["kept"], stage["findings"], stage["runs"], records,
                              verdicts, reports, settings, seconds, certificates)


@task(name="write-pools", **_STAGE)
def write_pools(path: Path, run: store.CertifyRun, cert: core.Certification) -> dict[str, int]:
    return CERTIFY.attach(path, run.run_id).write_stage("pools", store.pool_frames(run, cert)).rows


@task(name="write-certification", **_STAGE)
def write_certification(path: Path, run: store.CertifyRun, cert: core.Certification) -> dict[str, int]:
    related = {"v4v_candidates": store.candidate_frame(run, cert), CERTIFY.table: run.frame()}
    return CERTIFY.attach(path, run.run_id).write_stage("certification", store.certification_frames(run, cert),
                                                        related=related).rows
