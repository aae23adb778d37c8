"""Prefect tasks of the judge flow: thin calls into ``acceptgate.judge``. One task judges the whole input
(the calls inside are sequential HTTP requests or pure computation); no caching, no persisted results."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.judge import run as core
from acceptgate.pipelines import judge as pipeline

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="judge-trajectories", **_STAGE)
def judge_trajectories(path: Path, inputs: core.Inputs, backend: str, embedder: str, strict: bool,
                       chat_config) -> core.JudgeRun:
    return pipeline.judge(path, inputs, backend=backend, embedder=embedder, strict=strict, chat_config=chat_config)


@task(name="write-verdicts", **_STAGE)
def write_verdicts(path: Path, run: core.JudgeRun) -> dict[str, int]:
    return pipeline.record(path, run)[0]  # and publish
