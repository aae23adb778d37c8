"""The Prefect task that ends a scheduled flow: the summary, a markdown artifact on the flow run.

Each stage's flow publishes its own complete runs (through the run ledger); the chain's last publish
(``ledger.publish`` in ``run_tasks.pipeline_step``) adds no run (run-less tables only) and writes the
snapshot the summary is built from (by ``acceptgate.report``).
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from acceptgate.store import warehouse

_STAGE = {"cache_policy": NO_CACHE, "persist_result": False}


@task(name="summary-artifact", **_STAGE)
def summary_artifact(path: Path, header: list[str] | None = None) -> str:
    """The report's summary (from the snapshot just published) as a markdown artifact on this flow run."""
    from prefect.artifacts import create_markdown_artifact

    from acceptgate.report import data, markdown

    text = markdown.summary(data.collect(warehouse.snapshot_path(path)), header)
    create_markdown_artifact(text, key="acceptgate-summary", description="acceptgate summary of the warehouse")
    return text
