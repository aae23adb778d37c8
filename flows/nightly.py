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

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from acceptgate.pipelines import daskcluster, schedule
from acceptgate.pipelines.daskcluster import DaskCluster
from acceptgate.flows import stage_flows
from acceptgate.tasks import publish


@task(name="import-suites", cache_policy=NO_CACHE, persist_result=False)
def import_suites(humanevalplus: str, warehouse: str, backend: str, limit: int | None) -> str:
    return schedule.import_suites(humanevalplus, warehouse, backend, limit)


@flow(name="nightly", persist_result=False, log_prints=False)
def nightly(warehouse: str | None = None, backend: str = "local", limit: int | None = None,
            gate_source: str | None = None, gate_suites: str | None = None, gate_humanevalplus: str | None = None,
            arms: list[str] | None = None, gate_base_url: str | None = None, gate_model: str | None = None,
            gate_api_key_env: str = "OPENAI_API_KEY", certify_dataset: str | None = None,
            certify_samples: str | None = None, profile: str = "default", judge_records: str | None = None,
            judge_cards: str | None = None, judge_memory: str | None = None, judge_backend: str | None = None,
            judge_replay: str | None = None, judge_human_labels: str | None = None,
            judge_embedder: str = "minilm", dask: DaskCluster | str | None = None, no_certify: bool = False,
            max_fpr_attack: float | None = None) -> schedule.ChainSummary:
    """``gate_source = "openai"`` gates a live OpenAI-compatible model (``gate_base_url``, ``gate_model``;
    the key from the environment variable ``gate_api_key_env``). The judge stage runs on
    ``judge_records`` / ``judge_cards`` / ``judge_memory`` (backend ``rules`` by default, ``replay`` when
    ``judge_replay`` is given). ``dask``: N (a LocalCluster of N workers) or a TLS scheduler with the
    client's credentials (``{"address": "tls://host:8786", "tls": {"ca_file": ..., "cert": ..., "key": ...}}``,
    ``acceptgate.pipelines.daskcluster.DaskCluster``): the stages that run in shards (audit's executions, certify, the gates) run them
    there; every write stays here. The certify stage runs before the gates, which gate only the tasks it
    certified (``no_certify``: gate uncertified tasks, stored with every decision); ``max_fpr_attack``:
    the gates' policy on V's measured FPR_h (default: the gate command's)."""
    logger = get_run_logger()
    params = {"backend": backend, "limit": limit, "gate_source": gate_source, "gate_suites": gate_suites,
              "gate_humanevalplus": gate_humanevalplus, "arms": arms, "gate_base_url": gate_base_url,
              "gate_model": gate_model, "gate_api_key_env": gate_api_key_env, "certify_dataset": certify_dataset,
              "certify_samples": certify_samples, "profile": profile, "judge_records": judge_records,
              "judge_cards": judge_cards, "judge_memory": judge_memory, "judge_backend": judge_backend,
              "judge_replay": judge_replay, "judge_human_labels": judge_human_labels,
              "judge_embedder": judge_embedder, "dask": daskcluster.parse(dask),  # a bad value fails here
              "no_certify": no_certify, "max_fpr_attack": max_fpr_attack}
    schedule.check_parameters(params)  # a misconfigured live source fails the night before any stage runs
    path = publish.prepare_warehouse(warehouse)
    params["warehouse"] = str(path)
    if gate_humanevalplus and not gate_suites and Path(gate_humanevalplus).exists():
        # one import for every stage; certify takes only a suites directory
        params["gate_suites"] = import_suites(gate_humanevalplus, str(path), backend, limit)
    summary = schedule.ChainSummary("nightly")
    for stage in schedule.NIGHTLY_STAGES:
        summary.stages.append(run_stage(stage, params, logger))
    summary.snapshot = str(publish.publish_snapshot(path))
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


def run_stage(stage: schedule.Stage, params: dict, logger) -> schedule.StageOutcome:
    """Run one stage's flow as a sub-flow, or record why it is skipped. A stage that ``produces`` a run
    id puts it in ``params`` for the stages after it."""
    module = stage_flows.module_of(stage)
    if not stage_flows.installed(module):
        logger.warning("stage %s skipped: its flow module %s is not installed", stage.name, module)
        return schedule.StageOutcome(stage.name, "skipped", f"{module} not installed")
    fn = stage_flows.load(stage)
    kwargs = stage.call_arguments(fn, params)
    if isinstance(kwargs, schedule.Skip):
        logger.warning("stage %s skipped: %s", stage.name, kwargs.reason)
        return schedule.StageOutcome(stage.name, "skipped", kwargs.reason)
    logger.info("stage %s: %s", stage.name, stage.what)
    say(f"stage {stage.name}: {stage.what}")
    started = time.monotonic()
    with warnings_to_log(logger) as caught:
        result = fn(**kwargs)
    run_id = schedule.run_id_of(result)
    noted = f"; {len(caught)} library warnings in the flow run's log" if caught else ""
    say(f"stage {stage.name}: done in {time.monotonic() - started:.1f} s{noted}")
    if stage.produces:
        params[stage.produces] = run_id
    lines = result.lines() if hasattr(result, "lines") else [f"run {run_id}"] if run_id else []
    return schedule.StageOutcome(stage.name, "ok", lines[0] if lines else "")
