"""The ``nightly`` flow: every stage of ``acceptgate.pipelines.schedule.NIGHTLY_STAGES`` as a sub-flow, in order,
then one snapshot for analysts. Served by ``acceptgate serve`` (deployment ``nightly/nightly``).

A stage whose flow module is not installed is skipped by an explicit check, logged as a warning and
listed in the summary; a stage whose parameters do not ask for it (no gate source) likewise. A stage
that fails fails the nightly run at that stage (later stages do not run on a partial warehouse).
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from pathlib import Path
from typing import Iterator

from prefect import flow, get_run_logger

from acceptgate.pipelines import schedule
from acceptgate.pipelines.requests import NightlyRequest
from acceptgate.pipelines import ledger
from acceptgate.flows import stage_flows
from acceptgate.tasks import publish
from acceptgate.tasks import run_tasks


@flow(name="nightly", persist_result=False, log_prints=False)
def nightly(request: NightlyRequest) -> schedule.ChainSummary:
    """``gate_source = "openai"`` gates a live OpenAI-compatible model (``gate_base_url``, ``gate_model``;
    the key from the environment variable ``gate_api_key_env``). The judge stage runs on
    ``judge_records`` / ``judge_cards`` / ``judge_memory`` (backend ``rules`` by default, ``replay`` when
    ``judge_replay`` is given). ``dask``: N (a LocalCluster of N workers) or a TLS scheduler with the
    client's credentials (``{"address": "tls://host:8786", "tls": {"ca_file": ..., "cert": ..., "key": ...}}``,
    ``acceptgate.pipelines.daskcluster.DaskCluster``): the stages that run in shards (audit's executions, certify, the gates) run them
    there; every write stays here. The certify stage runs before the gates, which gate only the tasks it
    certified (``no_certify``: gate uncertified tasks, stored with every decision); ``max_fpr_attack``:
    the gates' policy on V's measured FPR_h (default: the gate command's). A misconfigured request (a
    live source without its model, a bad ``dask``) fails when it is validated, before any stage runs."""
    logger = get_run_logger()
    path = run_tasks.pipeline_step(ledger.prepare, request.warehouse)
    request = request.model_copy(update={"warehouse": str(path)})
    if request.gate_humanevalplus and not request.gate_suites and Path(request.gate_humanevalplus).exists():
        # one import for every stage; certify takes only a suites directory
        suites = run_tasks.pipeline_step(schedule.import_suites, request.gate_humanevalplus, str(path),
                                         request.backend, request.limit)
        request = request.model_copy(update={"gate_suites": suites})
    summary = schedule.ChainSummary("nightly")
    produced: dict[str, str] = {}
    for stage in schedule.NIGHTLY_STAGES:
        summary.stages.append(run_stage(stage, request, produced, logger))
    summary.snapshot = str(run_tasks.pipeline_step(ledger.publish, path))
    publish.summary_artifact(path, summary.lines())
    logger.info("\n".join(summary.lines()))
    return summary


def say(text: str) -> None:
    """One line on the terminal of whoever serves the flow (the runner passes its stderr through)."""
    print(f"acceptgate nightly: {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def warnings_to_log(logger) -> Iterator[list]:
    """Python warnings raised in the block (Great Expectations' UserWarnings about its own settings,
    for one) go to the flow run's log, one line each, instead of raw blocks on the terminal."""
    with warnings.catch_warnings(record=True) as caught:  # the filters in force stay (ResourceWarning ignored)
        yield caught
    for w in caught:
        logger.warning("%s: %s (%s:%s)", w.category.__name__, w.message, Path(w.filename).name, w.lineno)


def run_stage(stage: schedule.Stage, request, produced: dict, logger) -> schedule.StageOutcome:
    """Run one stage's flow as a sub-flow on the request its Stage builds from the chain's ``request``, or
    record why it is skipped. A stage that ``produces`` a run id puts it in ``produced`` for the stages
    after it."""
    module = stage_flows.module_of(stage)
    if not stage_flows.installed(module):
        logger.warning("stage %s skipped: its flow module %s is not installed", stage.name, module)
        return schedule.StageOutcome(stage.name, "skipped", f"{module} not installed")
    fn = stage_flows.load(stage)
    stage_request = stage.request(request, produced)
    if isinstance(stage_request, schedule.Skip):
        logger.warning("stage %s skipped: %s", stage.name, stage_request.reason)
        return schedule.StageOutcome(stage.name, "skipped", stage_request.reason)
    logger.info("stage %s: %s", stage.name, stage.what)
    say(f"stage {stage.name}: {stage.what}")
    started = time.monotonic()
    with warnings_to_log(logger) as caught:
        result = fn(stage_request)
    run_id = schedule.run_id_of(result)
    noted = f"; {len(caught)} library warnings in the flow run's log" if caught else ""
    say(f"stage {stage.name}: done in {time.monotonic() - started:.1f} s{noted}")
    if stage.produces:
        produced[stage.produces] = run_id
    lines = result.lines() if hasattr(result, "lines") else [f"run {run_id}"] if run_id else []
    return schedule.StageOutcome(stage.name, "ok", lines[0] if lines else "")
