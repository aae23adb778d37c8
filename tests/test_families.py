"""Every run family is declared once (acceptgate/pipelines/families.py): each run table of the migrations
belongs to one family, the product code names a family's run table in that declaration only and lists
a family's tables nowhere else, and the ledger refuses a stage's frames that are not its tables."""

from __future__ import annotations

import ast
import shutil
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from acceptgate._util.pyast import parse
from acceptgate.gates import run as gates
from acceptgate.pipelines import families, ledger
from acceptgate.pipelines.families import FAMILIES, GATE, SERVE_API
from acceptgate.store import expectations, warehouse

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("acceptgate", "flows", "tasks")
DECLARATION = "acceptgate/pipelines/families.py"
# The families that share tables by design: the service records each decision as a gate run (its own
# kind, the gate's tables); the leak backfill writes the leak audit's rows.
SHARED = {("gate", "serve-api"), ("leak-audit", "leak-backfill")}


def _tables(path: Path) -> set[str]:
    with warehouse.connect(path, read_only=True) as con:
        return {r[0] for r in con.execute("select table_name from information_schema.tables "
                                          "where table_type = 'BASE TABLE'").fetchall()}


def test_every_run_table_of_the_migrations_belongs_to_exactly_one_family(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    tables = _tables(path)
    run_tables = {t for t in tables if t == "runs" or t.endswith("_runs")}
    owners = {t: sorted(f.kind for f in FAMILIES if f.table == t) for t in run_tables}
    assert {t: kinds for t, kinds in owners.items() if len(kinds) != 1} == {"gate_runs": ["gate", "serve-api"]}
    assert SERVE_API.table == GATE.table and SERVE_API.stages == GATE.stages  # shared, by design
    # every table a family declares exists, has an expectation suite, and belongs to no other family
    held = defaultdict(set)
    for family in FAMILIES:
        for table in family.tables:
            assert table in tables and expectations.load_suite(table).table == table, (family.kind, table)
            held[table].add(family.kind)
    shared = {t: kinds for t, kinds in held.items() if len(kinds) > 1}
    assert all(tuple(sorted(kinds)) in SHARED for kinds in shared.values()), shared
    assert len({f.kind for f in FAMILIES}) == len(FAMILIES)
    assert families.of_kind("score").table == "score_runs"
    with pytest.raises(ValueError, match="no run family 'nope'"):
        families.of_kind("nope")


# -- the scan: where the product code names a family's tables ------------------------------------------------

def declarations(root: Path) -> dict[str, list[str]]:
    """Per run table, the places (file:line) whose string literal is exactly its name, and per family the
    places listing two or more of its tables in one tuple, list or set: the ways a family's tables used
    to be declared again. The audit's table ``runs`` is not scanned for: the word is a plain key
    (a summary's runs, a certification's runs) in many places."""
    run_tables = {f.table for f in FAMILIES if f.table and f.table != "runs"}
    owned = {f.kind: {*f.tables, *([f.table] if f.table else [])} for f in FAMILIES}
    found: dict[str, list[str]] = defaultdict(list)
    for top in PRODUCT:
        for path in sorted((root / top).rglob("*.py")):
            where = str(path.relative_to(root))
            for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in run_tables:
                    found[node.value].append(f"{where}:{node.lineno}")
                if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                    names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                    for kind, tables in owned.items():
                        if len(names & tables) >= 2:
                            found[f"{kind} tables"].append(f"{where}:{node.lineno}")
    return dict(found)


def _elsewhere(found: dict[str, list[str]]) -> dict[str, list[str]]:
    """The places outside the declaration."""
    out = {name: [p for p in places if not p.startswith(DECLARATION + ":")] for name, places in found.items()}
    return {name: places for name, places in out.items() if places}


def test_a_family_s_tables_are_named_in_its_declaration_only():
    found = declarations(REPO)
    assert _elsewhere(found) == {}
    run_tables = {f.table for f in FAMILIES if f.table and f.table != "runs"}
    assert {t: len(found.get(t, [])) for t in run_tables} == {t: 1 for t in run_tables}  # once: in the declaration
    assert {f"{f.kind} tables" for f in FAMILIES if len(f.tables) > 1} <= set(found)  # the scan sees the lists


def test_the_scan_finds_a_run_table_or_a_table_list_declared_again(tmp_path):
    for top in PRODUCT:
        (tmp_path / top).mkdir()
    (tmp_path / "acceptgate" / "pipelines").mkdir()
    shutil.copy(REPO / DECLARATION, tmp_path / DECLARATION)
    assert _elsewhere(declarations(tmp_path)) == {}
    (tmp_path / "tasks" / "doctored.py").write_text(
        'def start(ledger, path, run_id):\n    return ledger.start(path, kind="gate", table="gate_runs")\n\n'
        'STAGE_TABLES = {"pools": ("v4v_candidates", "v4v_findings")}\n')
    assert _elsewhere(declarations(tmp_path)) == {"gate_runs": ["tasks/doctored.py:2"],
                                                  "certify tables": ["tasks/doctored.py:4"]}


# -- no task only forwards a call -------------------------------------------------------------------------

def _is_task(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if (isinstance(target, ast.Name) and target.id == "task") or \
                (isinstance(target, ast.Attribute) and target.attr == "task"):
            return True
    return False


def forwarding_tasks(root: Path) -> set[str]:
    """The Prefect tasks (``file:name``) whose body, past its docstring, is one statement making one call,
    of a function that is neither one of the task's parameters nor a method of one: a task that only
    forwards that call. (The generic ``pipeline_step`` calls the function it is given, ``start_run`` the
    family's ``start``: what they run is a parameter.)"""
    found = set()
    for top in ("flows", "tasks"):
        for path in sorted((root / top).rglob("*.py")):
            for fn in ast.walk(parse(path.read_text(encoding="utf-8"))):
                if not isinstance(fn, ast.FunctionDef) or not _is_task(fn):
                    continue
                body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
                calls = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
                params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                                          *filter(None, (fn.args.vararg, fn.args.kwarg)))}
                callee = calls[0].func if len(calls) == 1 else None
                receiver = callee.value if isinstance(callee, ast.Attribute) else callee
                if len(body) == 1 and callee is not None and not (isinstance(receiver, ast.Name)
                                                                  and receiver.id in params):
                    found.add(f"{path.relative_to(root)}:{fn.name}")
    return found


def test_no_task_only_forwards_a_call():
    """A step the pipeline defines whole, a shard function included, runs in ``run_tasks.pipeline_step``."""
    assert forwarding_tasks(REPO) == set()


def test_the_scan_finds_a_task_that_only_forwards_a_call(tmp_path):
    for top in ("flows", "tasks"):
        (tmp_path / top).mkdir()
    shutil.copy(REPO / "tasks" / "run_tasks.py", tmp_path / "tasks")
    shutil.copy(REPO / "tasks" / "stats_tasks.py", tmp_path / "tasks")
    assert forwarding_tasks(tmp_path) == set()  # the generic step and a coarse task pass
    (tmp_path / "tasks" / "doctored.py").write_text(
        'from prefect import task\n\n\n@task(name="compute-statistics")\n'
        'def compute(kind, source_run_id, measured, settings, name_run):\n'
        '    """Docstring."""\n'
        '    return core.compute(kind, source_run_id, measured, settings, name_run=name_run)\n\n\n'
        '@task\ndef write(path, result):\n    return pipeline.write(path, result)[0]\n\n\n'
        'def helper(path):\n    return pipeline.write(path)\n')
    assert forwarding_tasks(tmp_path) == {"tasks/doctored.py:compute", "tasks/doctored.py:write"}


# -- the ledger takes the family --------------------------------------------------------------------------

def _gate_run(run_id: str) -> gates.GateRun:
    return gates.GateRun(run_id, "user", "codet:samples.jsonl", "a" * 64, "suites/", "b" * 64, 3,
                         ("conform", "off"), 5, "local")


def test_write_stage_refuses_frames_that_are_not_exactly_the_stage_s_tables(tmp_path):
    path = ledger.prepare(tmp_path / "w.duckdb")
    run = _gate_run("family-test")
    recorded = GATE.start(path, run.run_id, row=run.frame())
    gate = gates.gate_frames(run, [])  # the gate stage's four tables, no rows
    deliveries = gates.delivery_frames(run, [])
    refused = [({**gate, **deliveries}, "gate"),  # another stage's table too
               ({t: f for t, f in gate.items() if t != "gate_messages"}, "gate"),  # one missing
               (gate, "deliveries"),  # the gate's tables under another stage
               (deliveries, "decisions")]  # no such stage
    for frames, stage in refused:
        with pytest.raises(ValueError, match=f"stage {stage}|no stage 'decisions'"):
            recorded.write_stage(stage, frames)
        assert warehouse.row_counts(path, ["run_stages"], run_id=run.run_id) == {"run_stages": 0}
    recorded = GATE.start(path, run.run_id, row=run.frame())  # the refusals failed the attempt: a new one
    assert recorded.write_stage("gate", gate).rows == {t: 0 for t in gate}
    assert recorded.write_stage("deliveries", deliveries, related=gate).rows == {"deliveries": 0}
    recorded.finish()
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select attempt, flow, status from run_attempts order by attempt").fetchall() == [
            (1, "gate", "failed"), (2, "gate", "ok")]
        assert con.execute("select stage from run_stages order by stage").fetchall() == [("deliveries",), ("gate",)]


def test_the_service_s_batch_writes_every_table_of_its_family_and_no_other(tmp_path):
    path = ledger.prepare(tmp_path / "w.duckdb")
    run = _gate_run("api-test")
    rows = run.frame().assign(wall_seconds=0.5)
    frames = {**gates.gate_frames(run, []), **gates.delivery_frames(run, [])}
    with pytest.raises(ValueError, match="serve-api runs write"):
        SERVE_API.write_runs(path, rows, {t: f for t, f in frames.items() if t != "deliveries"})
    with pytest.raises(ValueError, match="serve-api runs write"):
        SERVE_API.write_runs(path, rows, {**frames, "v4v_findings": pd.DataFrame()})
    assert SERVE_API.write_runs(path, rows, frames) == ["api-test"]
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select flow from run_attempts").fetchall() == [("serve-api",)]
        assert con.execute("select status from gate_runs").fetchall() == [("ok",)]
