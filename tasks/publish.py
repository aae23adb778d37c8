"""Prefect tasks that end a scheduled flow: publish the analysts' snapshot, attach the summary.

Each stage's flow publishes its own complete runs (through the run ledger); the chain's last publish adds
no run (run-less tables only) and returns the snapshot the summary reads; the
summary is a markdown artifact on the flow run, built from that snapshot by ``acceptgate.report``.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.store import warehouse
from acceptgate.pipelines import ledger

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="prepare-warehouse", **_STAGE)
def prepare_warehouse(path: str | None) -> Path:
    return ledger.prepare(path)  # check the path, apply pending migrations


@task(name="publish-snapshot", **_STAGE)
def publish_snapshot(path: Path) -> Path:
    return ledger.publish(path)  # no run: the run-less tables, and the snapshot the summary reads


@task(name="summary-artifact", **_STAGE)
def summary_artifact(path: Path, header: list[str] | None = None) -> str:
    """The report's summary (from the snapshot just published) as a markdown artifact on this flow run."""
    from prefect.artifacts import create_markdown_artifact

    from acceptgate.report import data, markdown

    text = markdown.summary(data.collect(warehouse.snapshot_path(path)), header)
    create_markdown_artifact(text, key="acceptgate-summary", description="acceptgate summary of the warehouse")
    return text
