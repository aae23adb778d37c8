"""Readers and one writer in separate processes: analysts query while runs write, never wait, never see
a half-written run; then every example of the warehouse page (docs/warehouse.md) runs, as written, on the
warehouse they made.

The writer (this test process, ``cli.main``) runs the audit flow (``acceptgate audit --limit 1``) and then
the gate flow (CONFORM and OFF on 2 HumanEval+ tasks with CodeT's samples) into ``data/warehouse.duckdb``
of a temporary directory. A reader process loops until told to stop, each round through ``acceptgate sql --format json`` and the
``duckdb`` Python API on the snapshot, and also keeps one connection open from its first round on.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from acceptgate._util import settings
from acceptgate.store.warehouse import ENV_LOCK_TIMEOUT
from acceptgate.cli import main
from writer_process import REPO, cli_env, kill_group

pytestmark = pytest.mark.prefect

# One row per run in the snapshot with what a complete run has: status ok, every stage, and row counts
# that agree across tables (an execution per candidate and suite, a case result per recorded case, a
# decision and a delivery per task and arm).
COMPLETE = """
select 'audit' as flow, r.run_id, r.status = 'ok'
   and (select count(*) from run_stages s where s.run_id = r.run_id) = 4
   and (select count(*) from executions e where e.run_id = r.run_id)
       = (select count(*) from candidates c join suites s using (run_id, task_id) where c.run_id = r.run_id)
   and (select count(*) from executions e where e.run_id = r.run_id) > 0
   and (select coalesce(sum(cases_recorded), 0) from executions e where e.run_id = r.run_id)
       = (select count(*) from case_results c where c.run_id = r.run_id) as complete
from runs r
union all
select 'gate', g.run_id, g.status = 'ok'
   and (select count(*) from run_stages s where s.run_id = g.run_id) = 2
   and (select count(*) from deliveries d where d.run_id = g.run_id) = g.task_count * len(string_split(g.arms, ','))
   and (select count(*) from gate_decisions d where d.run_id = g.run_id) = g.task_count * len(string_split(g.arms, ','))
from gate_runs g
order by all
"""

READER = textwrap.dedent("""
    import json, os, subprocess, sys, time
    import duckdb

    warehouse, snapshot, stop, out, query = sys.argv[1:6]
    PAUSE = 1.0  # seconds between rounds
    # A second process holds one connection open from the first snapshot it sees to the end: what it
    # reads must never change. (Its own process: within one process DuckDB shares an open database
    # per path, so a held connection would make this reader's new connections see the old file too.)
    HOLDER = "\\n".join([
        "import duckdb, os, sys, time",
        "snapshot, stop, query = sys.argv[1:4]",
        "held = duckdb.connect(snapshot, read_only=True)",
        "first = held.execute(query).fetchall()",
        "print('holding', flush=True)",
        "while not os.path.exists(stop): time.sleep(0.2)",
        "sys.exit(0 if held.execute(query).fetchall() == first else 'the held connection saw its snapshot change')",
    ])
    holder, rounds = None, 0
    with open(out, "w") as log:
        def note(source, rows):
            log.write(json.dumps({"round": rounds, "source": source, "rows": rows}) + "\\n")
            log.flush()

        while True:
            last = os.path.exists(stop)  # one more round after the writer is done
            cli = subprocess.run([sys.executable, "-m", "acceptgate.cli", "sql", "--warehouse", warehouse,
                                  "--format", "json", query], capture_output=True, text=True)
            if cli.returncode == 2 and "no snapshot published yet" in cli.stderr and holder is None:
                note("none", [])
            elif cli.returncode != 0:
                sys.exit(f"acceptgate sql exited {cli.returncode}: {cli.stderr}")
            else:
                note("acceptgate-sql", [[r["flow"], r["run_id"], r["complete"]] for r in json.loads(cli.stdout)])
                with duckdb.connect(snapshot, read_only=True) as con:
                    note("duckdb-api", [list(r) for r in con.execute(query).fetchall()])
                if holder is None:
                    holder = subprocess.Popen([sys.executable, "-c", HOLDER, snapshot, stop, query],
                                              stdout=subprocess.PIPE, text=True)
                    assert holder.stdout.readline().strip() == "holding"
            rounds += 1
            if last:
                break
            # A short pause between rounds (ended early by the stop file): back to back, the reader's
            # `acceptgate sql` processes took a whole core from the writers it watches. A half-written
            # run published to the snapshot would stay there until the next publish, so rounds a second
            # apart still see it.
            pause_until = time.monotonic() + PAUSE
            while time.monotonic() < pause_until and not os.path.exists(stop):
                time.sleep(0.05)
    if holder is None or holder.wait(timeout=120) != 0:
        sys.exit(f"holder: {holder and holder.returncode}")
""")



def _write(args: list[str], log: Path) -> int:
    """One writer command, in this process: the readers are processes of their own either way, and a
    writer process of its own would cost a Prefect and Great Expectations start (about 8 s of CPU)."""
    with open(log, "w") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        return main(args)


@pytest.fixture(scope="module")
def concurrent_runs(prefect_harness, tmp_path_factory, humanevalplus_path, codet_samples_path):
    home = tmp_path_factory.mktemp("analyst")
    path = home / "data" / "warehouse.duckdb"
    stop, observed = home / "stop", home / "observed.jsonl"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(path), str(path.with_name("warehouse.snapshot.duckdb")),
                               str(stop), str(observed), COMPLETE], env=cli_env(), cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lock_timeout = os.environ.get(ENV_LOCK_TIMEOUT)
    os.environ[ENV_LOCK_TIMEOUT] = "30"  # a writer kept waiting would fail loudly
    settings.reload()
    try:
        codes = [_write(["audit", "--limit", "1", "--warehouse", str(path)], home / "audit.log"),
                 _write(["gate", "--no-certify", "--arm", "conform", "--arm", "off", "--source", f"codet:{codet_samples_path}",
                         "--humanevalplus", str(humanevalplus_path), "--limit", "2", "--warehouse", str(path)],
                        home / "gate.log")]
        stop.touch()
        _, err = reader.communicate(timeout=300)
    finally:
        if lock_timeout is None:
            os.environ.pop(ENV_LOCK_TIMEOUT, None)
        else:
            os.environ[ENV_LOCK_TIMEOUT] = lock_timeout
        if reader.poll() is None:
            kill_group(reader)
    return home, codes, reader.returncode, err, [json.loads(line) for line in observed.read_text().splitlines()]


def test_readers_never_wait_never_fail_and_only_see_complete_runs(concurrent_runs):
    home, codes, reader_code, reader_err, observed = concurrent_runs
    assert codes == [0, 0], [(home / f).read_text()[-2000:] for f in ("audit.log", "gate.log")]
    assert reader_code == 0, reader_err
    seen = [o for o in observed if o["source"] != "none"]
    assert {o["source"] for o in seen} == {"acceptgate-sql", "duckdb-api"}
    assert all(complete for o in seen for _, _, complete in o["rows"]), seen  # never a half-written run
    # Runs appear (audit, then gate) and never disappear.
    runs_seen = [{tuple(r[:2]) for r in o["rows"]} for o in seen]
    assert all(a <= b for a, b in zip(runs_seen, runs_seen[1:]))
    assert [flow for flow, _ in sorted(runs_seen[-1])] == ["audit", "gate"]
    assert max(o["round"] for o in observed) >= 3  # the reader really queried throughout


def _page_blocks(lang: str, page: str = "docs/warehouse.md") -> list[str]:
    """The fenced blocks of one language on a documentation page."""
    text = (REPO / page).read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_every_warehouse_page_example_runs_as_written(concurrent_runs):
    home = concurrent_runs[0]
    snapshot = home / "data" / "warehouse.snapshot.duckdb"
    statements = [s.strip() for block in _page_blocks("sql") for s in block.split(";\n") if s.strip()]
    statements = [s for s in statements if not all(line.startswith("--") for line in s.splitlines())]
    assert len(statements) >= 8
    with duckdb.connect(str(snapshot), read_only=True) as con:
        for statement in statements:
            con.execute(statement.rstrip(";")).fetchall()
    blocks = _page_blocks("sh")
    commands = [line for block in blocks for line in block.splitlines()
                if line.strip() and not line.startswith(("#", "pip install"))]
    assert any(c.startswith("acceptgate sql") for c in commands) and any(c.startswith("duckdb ") for c in commands)
    env = cli_env()
    for command in commands:
        out = subprocess.run(["bash", "-c", command], cwd=home, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (command, out.stderr)
        assert out.stdout.strip(), command
