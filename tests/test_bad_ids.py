"""Every bad id is refused before any flow starts: exit 2 naming the id, and Prefect's temporary server
never started (the CLI announces that start on stderr; no PREFECT_API_URL is set here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acceptgate.store import warehouse

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    root = tmp_path_factory.mktemp("bad-ids")
    suites = suitefiles.write_suites(humanevalplus.load(humanevalplus_path, local_backend, limit=2), root / "suites")
    path = root / "w.duckdb"
    warehouse.migrate(path)  # every table, no run
    return {"suites": str(suites), "warehouse": str(path), "dataset": str(humanevalplus_path)}


CASES = [
    (["certify", "--suites", "{suites}", "--dataset", "{dataset}", "--task", "HumanEval/999"], "HumanEval/999"),
    (["stats", "--gate-run", "gate-nope"], "gate-nope"),
    (["stats", "--judge-run", "judge-nope"], ""),
    (["stats", "--gate-run", "gate-nope", "--arm", "conform"], "gate-nope"),
    (["leak-audit", "--suites", "{suites}", "--run-id", "gate-nope"], "gate-nope"),
    (["backfill", "--suites", "{suites}", "--run-id", "gate-nope"], "gate-nope"),
]


@pytest.mark.parametrize("argv,named", CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_bad_id_is_exit_2_before_any_flow(inputs, argv, named):
    argv = [a.format(**inputs) for a in argv] + ["--warehouse", inputs["warehouse"]]
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    run = subprocess.run([sys.executable, "-m", "acceptgate.cli", *argv], cwd=REPO, capture_output=True, text=True,
                         env={**env, "PYTHONPATH": str(REPO)}, timeout=300)
    assert run.returncode == 2, run.stderr
    assert "invalid input" in run.stderr and named in run.stderr
    assert "Prefect" not in run.stderr and "Traceback" not in run.stderr
