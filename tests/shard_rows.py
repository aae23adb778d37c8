"""The rows a run left in the warehouse, for comparing a sharded run with a single-process one row by
row: every result table of the run kind, in stored order, without the columns that measure time or
describe the host. Also the task runs a sharded flow run left in Prefect, by name."""

from __future__ import annotations

import json
from pathlib import Path

TIMING = {"wall_seconds", "latency_seconds", "exec_seconds", "gt_seconds", "scanned_at"}
# what describes the host a row ran on, not the result: the audit's sandbox description names the
# host uid range its sandbox slots claimed (one per process, so two single-process runs differ too)
HOST = {"isolation"}
TABLES = {
    "gate": ("gate_decisions", "gate_attempts", "gate_messages", "deliveries"),
    "leak": ("leak_scans", "leak_verdicts", "leak_hit_rules", "leak_hits"),
    "audit": ("executions", "case_results", "gauge_checks"),
    "certify": ("v4v_candidates", "v4v_label_checks", "v4v_executions", "v4v_decisions", "v4v_mutants",
                "v4v_gates", "v4v_task_metrics", "v4v_verifier_summary"),
}


def _cell(value):
    import numpy as np
    import pandas as pd

    if isinstance(value, np.ndarray):  # a list column (e.g. gauge_checks.reasons)
        return tuple(_cell(v) for v in value.tolist())
    try:
        return None if pd.isna(value) else value  # NaN, None and pd.NA compare equal as None
    except (TypeError, ValueError):
        return value


def frame_rows(frame) -> list[tuple]:
    cols = [c for c in frame.columns if c not in TIMING | HOST]
    return [tuple(_cell(v) for v in row) for row in frame[cols].astype(object).itertuples(index=False)]


def table_rows(path: str | Path, kind: str) -> dict[str, list[tuple]]:
    from acceptgate.store import warehouse

    with warehouse.connect(path, read_only=True) as con:
        return {t: frame_rows(con.execute(f"select * from {t}").df()) for t in TABLES[kind]}


def assert_same_rows(left: dict[str, list[tuple]], right: dict[str, list[tuple]]) -> None:
    assert set(left) == set(right)
    for table in left:
        assert len(left[table]) == len(right[table]), table
        for i, (a, b) in enumerate(zip(left[table], right[table])):
            assert a == b, f"{table} row {i}: {a} != {b}"


def suites_and_samples(root: Path, humanevalplus_path, codet_samples_path, backend, tasks: int,
                       per_task: int) -> tuple[str, str]:
    """The first ``tasks`` HumanEval+ tasks as a suites directory under root, and ``per_task`` CodeT
    samples of each in EvalPlus format: the inputs both the sharded and the single-process run score."""
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus
    from acceptgate.sources.codet import evalplus_lines

    suites_dir = suitefiles.write_suites(humanevalplus.load(humanevalplus_path, backend, limit=tasks), root / "suites")
    samples = root / "samples.jsonl"
    lines = [line for line in evalplus_lines(codet_samples_path, per_task)
             if int(line["task_id"].rpartition("/")[2]) < tasks]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(suites_dir), str(samples)


def task_run_names(flow_run_id, expected: int, wait_seconds: float = 300) -> list[str]:
    """The names of a flow run's task runs (sorted), once at least ``expected`` are recorded: the server
    records a task run from the events its process sends, a moment after it ran (a backstop, not a
    measurement)."""
    import time

    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + wait_seconds
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            if len(runs) >= expected or time.monotonic() > deadline:
                return sorted(r.name for r in runs)
            time.sleep(0.5)
