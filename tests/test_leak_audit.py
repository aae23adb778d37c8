"""The leak audit over real gate runs: CONFORM, H-MIX, OFF and the deliberately leaky ``hmix-leaky-gt``
arm on CodeT's recorded samples for the first five HumanEval+ tasks (no model endpoint). The audit must
flag exactly the leaky arm's records; re-runs skip unchanged records; history files scan the same way;
one test drives ``acceptgate backfill`` through the Prefect flow."""

from __future__ import annotations

import dataclasses
import re
import shutil

import pytest

from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate.leak import audit
from acceptgate.pipelines import leak as leak_io
from acceptgate.leak.records import write_jsonl

ARMS = ["conform", "hmix", "off", "hmix-leaky-gt"]
TASKS = 4
TABLES = ["leak_scans", "leak_verdicts", "leak_hit_rules", "leak_hits"]


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory, humanevalplus_path, codet_samples_path, local_backend):
    """A warehouse with one gate run of four arms over five tasks, and the suites directory."""
    from acceptgate.gates import delivery
    from acceptgate.datasets import suitefiles
    from acceptgate.gates import arm_tasks, run_arm
    from acceptgate.gates import run as core
    from acceptgate.pipelines.families import GATE
    from acceptgate.datasets.importers import humanevalplus
    from acceptgate.sources import open_source

    root = tmp_path_factory.mktemp("leak")
    suites = suitefiles.write_suites(humanevalplus.load(humanevalplus_path, local_backend, limit=TASKS),
                                     root / "suites")
    tasks, tasks_from = core.load_tasks(backend=None, suites_dir=str(suites))
    path = root / "gate.duckdb"
    warehouse.migrate(path)
    source = f"codet:{codet_samples_path}"
    run = core.make_run(source=source, tasks=tasks, tasks_from=tasks_from, arms=ARMS, per_task=5,
                        backend="local", run_id="leak-test-1")
    recorded = GATE.start(path, run.run_id, row=run.frame())
    outcomes = []
    with open_source(source) as src:
        for arm in ARMS:
            outcomes += run_arm(arm, arm_tasks(arm, tasks), src, local_backend)
    frames = core.gate_frames(run, outcomes)
    recorded.write_stage("gate", frames)
    rows = delivery.score_deliveries(outcomes, core.hidden_suites(tasks), local_backend)
    recorded.write_stage("deliveries", core.delivery_frames(run, rows), related=frames)
    recorded.finish(wall_seconds=1.0)
    return {"path": path, "suites": suites, "tasks": tasks, "root": root}


def fresh_copy(gate_run, tmp_path):
    path = tmp_path / "w.duckdb"
    shutil.copy(gate_run["path"], path)
    return path


def verdicts(path):
    with warehouse.connect(path, read_only=True) as con:
        return {(arm, task): (verdict, n, gt) for arm, task, verdict, n, gt in con.execute(
            "select arm, task_id, verdict, v2_violations, gt_as_visible from leak_verdicts").fetchall()}


def test_audit_flags_exactly_the_leaky_arm_and_resumes(gate_run, tmp_path):
    path = fresh_copy(gate_run, tmp_path)
    materials = audit.load_materials(gate_run["tasks"])
    result = leak_io.run_audit(path, materials, audit.Selection(), publish=False)
    assert (result.records, result.scanned, result.skipped) == (4 * TASKS, 4 * TASKS, 0)
    found = verdicts(path)
    flagged = {k for k, (v, _, _) in found.items() if v == "violation"}
    assert flagged == {("hmix-leaky-gt", f"HumanEval/{i}") for i in range(TASKS)}
    assert all(v == "clean" for (arm, _), (v, _, _) in found.items() if arm != "hmix-leaky-gt")
    # v2 read the leaky feedback itself (not only the suite-hash evidence): GT cases quoted by the harness
    text_leaks = {task for (arm, task), (_, n, _) in found.items() if n > 0}
    assert text_leaks and all(found[("hmix-leaky-gt", t)][1] > 0 for t in text_leaks)
    assert all(s["valid"] for s in result.scans)
    # the printed per-run/per-arm numbers are the views'
    with warehouse.connect(path, read_only=True) as con:
        run_row = con.execute("select records, clean, unverifiable, violation, items_v1, items_v2 "
                              "from leak_run_summary").fetchall()
        hits = con.execute("select count(*) from leak_hits h join gate_messages m using (run_id, arm, task_id, seq) "
                           "where substr(m.text, h.start_char + 1, h.end_char - h.start_char) = h.needle").fetchone()[0]
        all_hits = con.execute("select count(*) from leak_hits").fetchone()[0]
    (r,) = result.per_run
    assert run_row == [(r["records"], r["clean"], r["unverifiable"], r["violation"], r["items_v1"], r["items_v2"])]
    assert (r["clean"], r["violation"]) == (3 * TASKS, TASKS) and r["items_v2"] > 0
    assert hits == all_hits > 0  # every stored offset points at its material in the stored message text
    counts = warehouse.row_counts(path, TABLES)

    again = leak_io.run_audit(path, materials, audit.Selection(), publish=False)
    assert (again.scanned, again.skipped) == (0, 4 * TASKS)
    assert warehouse.row_counts(path, TABLES) == counts
    forced = leak_io.run_audit(path, materials, audit.Selection(arms=("hmix-leaky-gt",)), rescan=True, publish=False)
    assert forced.scanned == TASKS and verdicts(path) == found
    assert warehouse.row_counts(path, TABLES) == {**counts, "leak_scans": 2}  # the partial re-scan is a scan
    everything = leak_io.run_audit(path, materials, audit.Selection(), rescan=True, publish=False)
    assert everything.scanned == 4 * TASKS and warehouse.row_counts(path, TABLES) == counts  # same rows again


def test_disabled_matcher_makes_every_record_of_the_scan_unverifiable(gate_run, tmp_path):
    path = fresh_copy(gate_run, tmp_path)
    materials = audit.load_materials(gate_run["tasks"])
    result = leak_io.run_audit(path, materials, audit.Selection(arms=("conform", "off")), matcher="disabled",
                             publish=False)
    assert not result.scans[0]["valid"]
    found = verdicts(path)
    assert len(found) == 2 * TASKS and {v for v, _, _ in found.values()} == {"unverifiable"}
    with warehouse.connect(path, read_only=True) as con:
        reasons = con.execute("select distinct unnest(reasons) from leak_verdicts").fetchall()
    assert any("positive control failed" in r[0] for r in reasons)


def test_history_file_text_only_and_a_truncated_record(gate_run, tmp_path):
    """Exported without suite hashes, the leaky arm is found from its texts alone; a record cut short
    before the harness's stop decision is unverifiable."""
    from acceptgate.pipelines.leak import from_warehouse

    with warehouse.connect(gate_run["path"], read_only=True) as con:
        recs = from_warehouse(con)
    recs = [dataclasses.replace(r, run_id="R530", visible_spec_hash=None, hidden_spec_hash=None) for r in recs]
    cut = next(r for r in recs if r.arm == "conform")
    recs = [dataclasses.replace(r, messages=r.messages[:-1]) if r is cut else r for r in recs]
    history = tmp_path / "history.jsonl.gz"
    write_jsonl(recs, history)
    path = tmp_path / "h.duckdb"
    warehouse.migrate(path)
    leak_io.run_audit(path, audit.load_materials(gate_run["tasks"]),
                    audit.Selection(history=(str(history),), warehouse_runs=False), publish=False)
    found = verdicts(path)
    assert found[(cut.arm, cut.task_id)][0] == "unverifiable"
    leaky = {t for (arm, t), (v, _, _) in found.items() if arm == "hmix-leaky-gt" and v == "violation"}
    assert leaky and all(found[("hmix-leaky-gt", t)][1] > 0 for t in leaky)
    assert not any(gt for _, _, gt in found.values())
    assert {k for k, (v, _, _) in found.items() if v == "violation"} == {("hmix-leaky-gt", t) for t in leaky}


def test_the_material_of_the_selected_records_tasks_scans_as_every_tasks_material_does(gate_run, tmp_path):
    """The flows build the hidden material of the tasks the selected records name only: on the same
    records the verdicts, reasons, hits, per-record inputs hashes and the run id are those of a scan given
    every task's material. Leaving out a selected record's task changes them (the comparison can fail)."""
    from acceptgate.pipelines.leak import from_warehouse

    with warehouse.connect(gate_run["path"], read_only=True) as con:
        recs = from_warehouse(con)
    picked = {"R531": ("HumanEval/0", "HumanEval/2"), "R532": ("HumanEval/3",)}
    recs = [dataclasses.replace(r, run_id=run) for run, tasks in picked.items() for r in recs if r.task_id in tasks]
    history = tmp_path / "history.jsonl"
    write_jsonl(recs, history)
    selection = audit.Selection(history=(str(history),), warehouse_runs=False, run_ids=("R531",))
    spool = audit.read_history(selection)
    try:
        needed = audit.task_ids(selection, [], spool)
        assert audit.task_ids(audit.Selection(history=(str(history),)), [], spool) == {
            "HumanEval/0", "HumanEval/2", "HumanEval/3"}
    finally:
        spool.close()
    assert needed == {"HumanEval/0", "HumanEval/2"}
    full = audit.load_materials(gate_run["tasks"])
    assert set(full) == {f"HumanEval/{i}" for i in range(TASKS)}

    def scan(name, materials):
        path = tmp_path / f"{name}.duckdb"
        warehouse.migrate(path)
        result = leak_io.run_audit(path, materials, selection, publish=False)
        with warehouse.connect(path, read_only=True) as con:
            rows = {table: con.execute(f"select * from {table} order by all").fetchall()
                    for table in ("leak_verdicts", "leak_hit_rules", "leak_hits")}
            rows["leak_scans"] = con.execute("select * exclude (wall_seconds, scanned_at) from leak_scans").fetchall()
            rows["controls"] = con.execute("select control_passed, negative_passed from leak_scans").fetchall()
            rows["verdicts"] = con.execute("select verdict, count(*) from leak_verdicts group by all order by all").fetchall()
        return result.run_id, rows

    # as the flows build it: only the selected records' tasks read from the suites directory
    read = audit.load_materials(audit.load_tasks(suites_dir=str(gate_run["suites"]), task_ids=needed), needed)
    assert {t: m.sha256 for t, m in read.items()} == {t: full[t].sha256 for t in needed}
    restricted = scan("restricted", read)
    assert restricted == scan("full", full)
    run_id, rows = restricted
    assert len(rows["leak_verdicts"]) == 4 * len(needed) and rows["leak_hit_rules"]
    assert rows["controls"] == [(True, True)]
    assert rows["verdicts"] == [("clean", 3 * len(needed)), ("violation", len(needed))]
    short = scan("short", audit.load_materials(gate_run["tasks"], {"HumanEval/0"}))
    assert short[0] != run_id and short[1]["leak_verdicts"] != rows["leak_verdicts"]


@pytest.mark.prefect
def test_backfill_command_through_the_flow(prefect_harness, gate_run, tmp_path, capsys):
    path = fresh_copy(gate_run, tmp_path)
    # as the README's example: no --suites, the gate run recorded where its tasks came from
    code = main(["backfill", "--since", "2000-01-01", "--warehouse", str(path)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"backfill: the tasks' hidden material from {gate_run['suites']} (recorded by the gate runs)" in out.err
    # the summary's times add up: the flow's total covers its parts, the command's covers the flow
    times = dict((part.rsplit(" ", 2)[0], float(part.rsplit(" ", 2)[1]))
                 for part in re.search(r"^time: (.*)$", out.out, re.M).group(1).split(", "))
    assert {"hidden material", "publish", "total", "command (Prefect's start included)"} <= set(times)
    parts = sum(v for k, v in times.items() if k not in ("total", "command (Prefect's start included)"))
    assert parts <= times["total"] + 0.05 <= times["command (Prefect's start included)"] + 0.05
    assert f"{4 * TASKS} records selected, {4 * TASKS} scanned now" in out.out
    assert f"[{4 * TASKS}/{4 * TASKS} records] run leak-test-1" in out.err
    with warehouse.connect(warehouse.snapshot_path(path), read_only=True) as con:
        run_row = con.execute("select run_id, records, clean, unverifiable, violation, items_v1, items_v2 "
                              "from leak_run_summary").fetchone()
        arms = dict(con.execute("select arm, violation from leak_arm_summary").fetchall())
    line = f"{run_row[0]} {run_row[1]:>8} {run_row[2]:>6} {run_row[3]:>8} {run_row[4]:>9}"
    assert line in out.out and f"{run_row[5]:>13,} {run_row[6]:>13,}" in out.out
    assert arms == {"conform": 0, "hmix": 0, "off": 0, "hmix-leaky-gt": TASKS}
    assert main(["backfill", "--suites", str(gate_run["suites"]), "--warehouse", str(path), "--until",
                 "2000-01-01"]) == 0
    assert "0 records selected" in capsys.readouterr().out


def test_backfill_without_suites_and_no_recorded_source_says_what_to_give(tmp_path, capsys):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    assert main(["backfill", "--since", "2026-11-01", "--warehouse", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no gate run in the selection records its tasks: give --suites DIR or --humanevalplus FILE" in err


def test_leak_audit_deployment_runs_after_every_gate_run():
    """The leak-audit deployment's trigger is a valid Prefect deployment trigger on completed gate runs."""
    from pathlib import Path

    import yaml

    from acceptgate.tasks import _prefect_env  # noqa: F401
    from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger

    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "deployments" / "prefect.yaml").read_text())
    (leak,) = [d for d in doc["deployments"] if d["name"] == "leak-audit"]
    (trigger,) = [DeploymentEventTrigger.model_validate(t) for t in leak["triggers"]]
    assert trigger.expect == {"prefect.flow-run.Completed"}
    assert trigger.match_related.model_dump() == {"prefect.resource.role": "flow", "prefect.resource.name": "gate"}


def test_a_record_both_in_the_warehouse_and_a_history_file_is_invalid_and_nothing_is_written(gate_run, tmp_path):
    from acceptgate._util.errors import InvalidInput
    from acceptgate.pipelines.leak import from_warehouse

    path = fresh_copy(gate_run, tmp_path)
    with warehouse.connect(path, read_only=True) as con:
        recs = from_warehouse(con)
    history = tmp_path / "again.jsonl"
    write_jsonl(recs[:2], history)
    with pytest.raises(InvalidInput) as err:
        leak_io.run_audit(path, audit.load_materials(gate_run["tasks"]), audit.Selection(history=(str(history),)),
                        publish=False)
    assert err.value.source == str(history) and err.value.record == "line 1" and "also in the warehouse" in str(err.value)
    assert warehouse.row_counts(path, TABLES) == {t: 0 for t in TABLES}
