"""The scheduled nightly chain end to end, as ``acceptgate serve`` runs it (``flows/nightly.py``): audit ->
gates with a live OpenAI-compatible model (a scripted server on loopback: the first reply to each
conversation is wrong, every later one right) -> leak audit -> certify -> stats -> judge -> judge stats ->
the snapshot -> the report. Afterwards every table family has this night's rows in the published
snapshot, ``acceptgate sql`` (the command, in its own process) reads them, and the report has no empty
section."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from acceptgate.pipelines.requests import NightlyRequest

pytestmark = pytest.mark.prefect

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo" / "judge"
TASKS = 2

# table family -> the snapshot's tables (and views) that must hold this night's rows
FAMILIES = {
    "audit": ["runs", "tasks", "suites", "gauge_checks", "executions"],
    "gate": ["gate_runs", "gate_decisions", "gate_attempts", "gate_messages"],
    "deliveries": ["deliveries", "gate_rates"],
    "leak": ["leak_scans", "leak_verdicts"],
    "v4v": ["v4v_runs", "v4v_decisions", "v4v_gates", "v4v_task_metrics"],
    "stats": ["stats_runs", "stats_effects"],
    "judge": ["judge_runs", "judge_verdicts"],
}
RUN_TABLES = ["runs", "gate_runs", "v4v_runs", "stats_runs", "judge_runs"]


def _first_tasks(path: Path, n: int) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for _, line in zip(range(n), f)]


def _scripted_model(tasks: list[dict]):
    """A reply function for ChatServer: the task is found by its function's name in the messages; the
    first reply of a conversation (keyed by its first message) returns None, later ones the canonical
    solution."""
    seen: dict[str, int] = {}

    def reply(body):
        text = "\n".join(m["content"] for m in body["messages"])
        task = next(t for t in tasks if f"def {t['entry_point']}(" in text)
        first = body["messages"][0]["content"]
        seen[first] = seen.get(first, 0) + 1
        head = task["prompt"]
        body_text = "    return None\n" if seen[first] == 1 else task["canonical_solution"]
        return {"content": f"```python\n{head}{body_text}\n```"}
    return reply


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "acceptgate.cli", *args], cwd=cwd, env=os.environ.copy(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"acceptgate {' '.join(args)}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def test_nightly_chain_with_a_live_model_reaches_snapshot_sql_and_report(prefect_harness, tmp_path, monkeypatch,
                                                                          humanevalplus_path):
    from acceptgate.flows.nightly import nightly
    from test_openai_chat import ChatServer

    tasks = _first_tasks(humanevalplus_path, TASKS)
    path = tmp_path / "w.duckdb"
    monkeypatch.setenv("NIGHTLY_CHAT_KEY", "sk-test")
    with ChatServer(_scripted_model(tasks)) as server:
        summary = nightly(NightlyRequest(
            warehouse=str(path), limit=TASKS, gate_source="openai", gate_humanevalplus=str(humanevalplus_path),
            arms=["conform", "hmix", "off"], gate_base_url=server.base_url, gate_model="scripted-1",
            gate_api_key_env="NIGHTLY_CHAT_KEY", judge_records=str(DEMO / "trajectories.jsonl"),
            judge_cards=str(DEMO / "cards.jsonl"), judge_memory=str(DEMO / "memory.jsonl"),
            judge_replay=str(DEMO / "replay.jsonl"), judge_human_labels=str(DEMO / "human_labels.jsonl"),
            judge_embedder="hashing"))
    outcomes = {s.name: s.status for s in summary.stages}
    assert outcomes == {"audit": "ok", "gates": "ok", "leak-audit": "ok", "certify": "ok", "stats": "ok",
                        "judge": "ok", "judge-stats": "ok"}, summary.lines()
    assert server.requests, "the gates never called the live model"
    assert all(r["body"]["model"] == "scripted-1" for r in server.requests)

    snapshot = path.with_name("w.snapshot.duckdb")
    with duckdb.connect(str(snapshot), read_only=True) as con:
        # the live model's draws: CONFORM and H-MIX deliver the right program on the second draw
        decisions = con.execute("select d.arm, d.task_id, d.decision, d.attempts_used, v.gt_verdict "
                                "from gate_decisions d join deliveries v using (run_id, arm, task_id) "
                                "order by d.arm, d.task_id").fetchall()
        ids = [t["task_id"] for t in tasks]
        for arm in ("conform", "hmix"):
            assert [r[1:] for r in decisions if r[0] == arm] == [(t, "delivered", 2, "pass") for t in ids], decisions
        assert [r[2] for r in decisions if r[0] == "off"] == ["delivered"] * TASKS
        gate_run, source = con.execute("select run_id, source from gate_runs").fetchone()
        assert source == "openai"
        # every run of the night is complete (its attempt ended 'ok') and published
        live = duckdb.connect(str(path), read_only=True)
        try:
            attempts = live.execute("select run_id, flow, status from run_attempts order by run_id").fetchall()
            runs = {t: {r[0] for r in live.execute(f"select run_id from {t}").fetchall()} for t in RUN_TABLES}
        finally:
            live.close()
        assert attempts and all(status == "ok" for *_, status in attempts), attempts
        assert {f for _, f, _ in attempts} >= {"audit", "gate", "leak-audit", "certify", "stats", "judge"}, attempts
        for table in RUN_TABLES:
            assert runs[table], table
            assert {r[0] for r in con.execute(f"select run_id from {table}").fetchall()} == runs[table], table
        for family, tables in FAMILIES.items():
            for table in tables:
                assert con.execute(f"select count(*) from {table}").fetchone()[0] > 0, (family, table)
        assert con.execute("select count(*) from stats_runs s join stats_effects e using (run_id) "
                           "where e.source_run_id = ?", [gate_run]).fetchone()[0] > 0
        judge_run = con.execute("select run_id from judge_runs").fetchone()[0]
        assert con.execute("select count(*) from stats_effects where source_run_id = ?", [judge_run]).fetchone()[0] > 0
        sides = dict(con.execute("select source, count(*) from agent_resources group by source").fetchall())
        assert sides.get("gate") == 3 and sides.get("judge", 0) > 0, sides

    # the analysts' command, in its own process, reads the same rows (one query: a process each cost
    # a Python start apiece and showed nothing more)
    tables = ("stats_effects", "judge_verdicts", "deliveries", "leak_verdicts", "v4v_decisions")
    query = "select " + ", ".join(f"(select count(*) from {t}) as {t}" for t in tables)
    out = _cli("sql", query, "--format", "json", "--warehouse", str(path), cwd=tmp_path)
    counts = json.loads(out.stdout)[0]
    assert sorted(counts) == sorted(tables) and all(counts[t] > 0 for t in tables), out.stdout

    # the report: every section has data
    html = tmp_path / "report.html"
    out = _cli("report", "--warehouse", str(path), "--out", str(html), cwd=tmp_path)
    page = html.read_text()
    assert "not run yet" not in page and "no statistics published" not in page, out.stdout
    for title in ("False delivery by arm", "Audit executions by verdict", "V4V certification", "Leak verdicts",
                  "Statistics and agreement", "Seed 004 Table 2"):
        assert title in page
