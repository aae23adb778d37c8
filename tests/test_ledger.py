"""The run ledger (acceptgate/pipelines/ledger.py; that it is the one place that writes run rows is
checked in test_layering.py): a failed expectation quarantines and fails a run with nothing of it written, a stop request (Ctrl-C, SIGTERM)
marks the attempt 'interrupted' and leaves the published snapshot as it was, and the stats and judge
commands' rows reach the analysts' snapshot."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import duckdb
import numpy as np
import pytest

from acceptgate._util import settings
from acceptgate.store import warehouse
from acceptgate._util.errors import Interrupted
from acceptgate.store.expectations import EXPECTATIONS_DIR, ExpectationFailed
from acceptgate.gates import run as gates
from acceptgate.pipelines import ledger
from acceptgate.pipelines.families import AUDIT, GATE, STATS
from acceptgate.pipelines import stats as stats_io
from acceptgate.stats import pipeline
from acceptgate.stats.paired import PairedData
from acceptgate.pipelines.requests import StatsRequest



# -- helpers ----------------------------------------------------------------------------------------

def _stats_result(seed: int = 0) -> pipeline.StatsResult:
    rng = np.random.default_rng(7)
    units = tuple(f"T/{i}" for i in range(12))
    data = PairedData("conform", units, rng.integers(0, 2, 12), rng.integers(0, 2, 12), "conform", "off", "tasks")
    return pipeline.compute("gate", "gate-demo", [pipeline.Measured("false_delivery", [data], "task")],
                            pipeline.Settings(seed=seed, resamples=200),
                            name_run=StatsRequest(seed=seed, resamples=200).derive_run_id)


def _snapshot_rows(path: Path, table: str, run_id: str) -> list[tuple]:
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        return con.execute(f"select * exclude (written_at) from {table} where run_id = ? order by all"
                           if table == "stats_runs" else f"select * from {table} where run_id = ? order by all",
                           [run_id]).fetchall()


def _attempts(path: Path, run_id: str) -> list[tuple]:
    with warehouse.connect(path, read_only=True) as con:
        return con.execute("select attempt, flow, status, failed_stage, failure, last_stage from run_attempts "
                           "where run_id = ? order by attempt", [run_id]).fetchall()


def _strict(tmp_path: Path, table: str, column: str, allowed: list) -> str:
    where = tmp_path / "expectations"
    shutil.copytree(EXPECTATIONS_DIR, where)
    doc = json.loads((where / f"{table}.json").read_text())
    doc["expectations"].append({"type": "expect_column_values_to_be_in_set",
                                "kwargs": {"column": column, "value_set": allowed}})
    (where / f"{table}.json").write_text(json.dumps(doc))
    return str(where)


# -- (b) a failed expectation ------------------------------------------------------------------------

def test_a_failing_expectation_quarantines_and_fails_the_run_writing_nothing(tmp_path, monkeypatch):
    path = ledger.prepare(tmp_path / "w.duckdb")
    published = _stats_result(seed=1)
    stats_io.write(path, published, conditions="arm,off")  # another run, published before
    before = _snapshot_rows(path, "stats_effects", published.run_id)
    assert before

    result = _stats_result(seed=2)
    monkeypatch.setenv("ACCEPTGATE_EXPECTATIONS", _strict(tmp_path, "stats_effects", "measure", ["nothing"]))
    settings.reload()
    with pytest.raises(ExpectationFailed) as err:
        stats_io.write(path, result, conditions="arm,off")
    assert err.value.stage == "stats"
    assert err.value.expectation == "stats_effects.expect_column_values_to_be_in_set(column='measure')"

    with warehouse.connect(path, read_only=True) as con:
        quarantined = con.execute("select attempt, stage, table_name, row_count from quarantine where run_id = ? "
                                  "order by table_name", [result.run_id]).fetchall()
        written = {t: con.execute(f"select count(*) from {t} where run_id = ?", [result.run_id]).fetchone()[0]
                   for t in (STATS.table, *STATS.tables, "run_stages")}
    frames = result.frames()
    assert quarantined == sorted([(1, "stats", "stats_runs", 1)]
                                 + [(1, "stats", t, len(f)) for t, f in frames.items()], key=lambda r: r[2])
    assert written == {t: 0 for t in written}  # no stage row, not even the run's row
    [(attempt, flow, status, stage, failure, last)] = _attempts(path, result.run_id)
    assert (attempt, flow, status, stage, last) == (1, "stats", "failed", "stats", None)
    assert "expect_column_values_to_be_in_set(column='measure')" in failure
    # the snapshot has exactly what it had: the other run, and nothing of this one
    assert _snapshot_rows(path, "stats_effects", published.run_id) == before
    assert _snapshot_rows(path, "stats_effects", result.run_id) == []
    assert _snapshot_rows(path, "stats_runs", result.run_id) == []


# -- (c) a stop request ------------------------------------------------------------------------------

def test_ctrl_c_inside_a_stage_marks_the_attempt_interrupted_and_keeps_the_snapshot(tmp_path):
    path = ledger.prepare(tmp_path / "w.duckdb")
    result = _stats_result()
    stats_io.write(path, result, conditions="arm,off")
    snapshot = warehouse.snapshot_path(path)
    before = {t: _snapshot_rows(path, t, result.run_id) for t in ("stats_runs", "stats_effects")}
    assert all(before.values())
    stamp = snapshot.stat().st_mtime_ns

    def interrupted_mid_write(con, frames):
        warehouse.replace_run_rows(con, result.run_id, frames)  # rows in, not committed
        raise KeyboardInterrupt

    run = STATS.start(path, result.run_id)
    with pytest.raises(KeyboardInterrupt):
        with run.guard():
            run.write_stage("stats", {**result.frames(), STATS.table: result.run_frame("arm,off", result.effects)},
                            write=interrupted_mid_write)
    attempts = _attempts(path, result.run_id)
    assert [a[:4] for a in attempts] == [(1, "stats", "ok", None), (2, "stats", "interrupted", "stats")]
    assert attempts[1][4] == "interrupted by SIGINT"
    with warehouse.connect(path, read_only=True) as con:  # the stage's rows were rolled back
        assert con.execute("select count(*) from stats_effects where run_id = ?", [result.run_id]).fetchone() == (0,)
    # the last published snapshot is intact: same file, same rows, the published attempt 'ok'
    assert snapshot.stat().st_mtime_ns == stamp
    assert {t: _snapshot_rows(path, t, result.run_id) for t in before} == before
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select attempt, status from run_attempts where run_id = ?",
                           [result.run_id]).fetchall() == [(1, "ok")]

    # the next attempt publishes again
    stats_io.write(path, result, conditions="arm,off")
    assert [a[2] for a in _attempts(path, result.run_id)] == ["ok", "interrupted", "ok"]
    assert _snapshot_rows(path, "stats_effects", result.run_id) == before["stats_effects"]


def _gate_run(run_id: str) -> gates.GateRun:
    return gates.GateRun(run_id, "user", "codet:samples.jsonl", "a" * 64, "suites/", "b" * 64, 3,
                         ("conform", "off"), 5, "local")


def _raised_while_a_stop_unwound(signum: int) -> BaseException:
    """A library that caught the stop and failed on its way out (Prefect creating a task run when the
    signal lands: "Task run is not set"), its error carrying the stop as context."""
    try:
        try:
            raise Interrupted(signum)
        except Interrupted:
            raise ValueError("Task run is not set")
    except ValueError as exc:
        return exc


def _termination_signal(signum: int) -> BaseException:
    from prefect.exceptions import TerminationSignal  # what Prefect raises in a flow at SIGTERM

    return TerminationSignal(signum)


# Every stop is stored one way, naming its signal, whatever carried it
@pytest.mark.parametrize("stop, status, said", [
    (Interrupted(signal.SIGTERM), "interrupted", "interrupted by SIGTERM"),
    (SystemExit(130), "interrupted", "interrupted by SIGINT"),
    (KeyboardInterrupt(), "interrupted", "interrupted by SIGINT"),
    (_termination_signal(signal.SIGTERM), "interrupted", "interrupted by SIGTERM"),
    (_raised_while_a_stop_unwound(signal.SIGINT), "interrupted", "interrupted by SIGINT"),
    (RuntimeError("boom"), "failed", "RuntimeError: boom"),
], ids=["Interrupted", "SystemExit", "KeyboardInterrupt", "TerminationSignal", "error-while-stopping", "error"])
def test_the_run_row_and_attempt_end_by_what_stopped_them(tmp_path, stop, status, said):
    path = ledger.prepare(tmp_path / "w.duckdb")
    gate_run = _gate_run("stop-test")
    with pytest.raises(type(stop)):
        with GATE.run(path, gate_run.run_id, row=gate_run.frame()) as run:
            with run.guard("deliveries"):
                raise stop
    [(attempt, flow, got, stage, failure, _)] = _attempts(path, gate_run.run_id)
    assert (attempt, flow, got, stage, failure) == (1, "gate", status, "deliveries", said)
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select status from gate_runs").fetchall() == [(status,)]
    assert not warehouse.snapshot_path(path).exists()  # nothing published


def test_a_stop_in_the_main_thread_names_the_stage_another_thread_runs(tmp_path):
    """A flow's stage may run in another thread (a Prefect task) while the stop is raised in the main
    thread, between stages as far as that thread knows: the attempt still names the running stage."""
    import threading

    path = ledger.prepare(tmp_path / "w.duckdb")
    gate_run = _gate_run("stage-in-a-thread")
    inside, release = threading.Event(), threading.Event()

    def stage() -> None:
        with GATE.attach(path, gate_run.run_id).guard("deliveries"):
            inside.set()
            release.wait(30)

    worker = threading.Thread(target=stage)
    with pytest.raises(Interrupted):
        with GATE.run(path, gate_run.run_id, row=gate_run.frame()) as run:
            with run.guard():
                worker.start()
                assert inside.wait(30)
                raise Interrupted(signal.SIGTERM)
    release.set()
    worker.join(30)
    [(_, _, got, stage_name, failure, _)] = _attempts(path, gate_run.run_id)
    assert (got, stage_name, failure) == ("interrupted", "deliveries", "interrupted by SIGTERM")


def test_a_second_signal_while_a_stage_records_its_stop_still_names_the_stage(tmp_path, monkeypatch):
    """The stage's own record of a stop is cut short by a second signal: the guard around it records
    the stop, naming the stage that was stopped."""
    path = ledger.prepare(tmp_path / "w.duckdb")
    gate_run = _gate_run("second-signal")
    real, calls = ledger.Run.fail, []

    def cut_short_once(self, error, stage=None):
        calls.append(stage)
        if len(calls) == 1:
            raise Interrupted(signal.SIGTERM)  # lands while the first stop is being recorded
        return real(self, error, stage)

    monkeypatch.setattr(ledger.Run, "fail", cut_short_once)
    with pytest.raises(Interrupted):
        with GATE.run(path, gate_run.run_id, row=gate_run.frame()):
            raise_in_stage = GATE.attach(path, gate_run.run_id).guard("deliveries")
            with raise_in_stage:
                raise Interrupted(signal.SIGINT)
    [(_, _, got, stage_name, _, _)] = _attempts(path, gate_run.run_id)
    assert calls[0] == "deliveries" and (got, stage_name) == ("interrupted", "deliveries")


def test_the_run_row_keeps_its_first_start_and_counts_attempts(tmp_path):
    from acceptgate.pipelines import audit
    path = ledger.prepare(tmp_path / "w.duckdb")
    row = audit.Run("twice", "user", "humaneval", "HumanEval.jsonl.gz", "c" * 64, "local", 2).frame()
    times = []
    for _ in range(2):
        with AUDIT.run(path, "twice", row=row):
            pass
        with warehouse.connect(path, read_only=True) as con:
            times.append(con.execute("select first_started_at, started_at, attempts, status from runs").fetchone())
    assert [a[2] for a in _attempts(path, "twice")] == ["ok", "ok"]
    (first, started, attempts, status), (first2, started2, attempts2, status2) = times
    assert (attempts, status, attempts2, status2) == (1, "ok", 2, "ok")
    assert first2 == first and started2 > started


# -- (d) stats and judge reach the snapshot through the commands --------------------------------------

@pytest.mark.prefect
def test_stats_and_judge_rows_are_in_the_snapshot_after_their_commands(prefect_harness, tmp_path, capsys):
    from acceptgate.cli import main
    from test_judge_core import INPUTS

    wh = str(tmp_path / "wh.duckdb")
    assert main(["judge", "--records", INPUTS.records, "--cards", INPUTS.cards, "--memory", INPUTS.memory,
                 "--backend", "replay", "--replay", INPUTS.replay, "--human-labels", INPUTS.human_labels,
                 "--embedder", "hashing", "--warehouse", wh]) == 0
    judge_run = capsys.readouterr().out.splitlines()[0].split()[2].rstrip(":")
    assert main(["stats", "--judge-run", judge_run, "--warehouse", wh, "--resamples", "1000"]) == 0
    capsys.readouterr()

    def sql(query: str) -> list[dict]:
        assert main(["sql", "--warehouse", wh, "--format", "json", query]) == 0
        return json.loads(capsys.readouterr().out)

    assert sql("select count(*) as n from judge_verdicts")[0]["n"] == 32
    assert sql("select count(*) as n from stats_effects where source_run_id = "
               f"'{judge_run}'")[0]["n"] == 2
    assert sql("select count(*) as n from agent_resources where source = 'judge'")[0]["n"] > 0
    attempts = sql("select flow, status, published_at is not null as published from run_attempts order by flow")
    assert attempts == [{"flow": "judge", "status": "ok", "published": True},
                        {"flow": "stats", "status": "ok", "published": True}]
    assert {r["flow"] for r in sql("select flow from latest_runs")} == {"judge", "stats"}


def test_the_judge_records_its_attempt_before_judging_and_publishes(tmp_path):
    from acceptgate.pipelines import judge as judge_pipeline
    from acceptgate.pipelines.requests import JudgeRequest
    from test_judge_core import INPUTS

    path = ledger.prepare(tmp_path / "w.duckdb")
    request = JudgeRequest(records=INPUTS.records, cards=INPUTS.cards, memory=INPUTS.memory, replay=INPUTS.replay,
                           backend="replay", embedder="hashing")
    run = judge_pipeline.judge(path, request)
    assert run.run_id == request.derive_run_id(run.hashes)  # named by the request
    assert [a[:4] for a in _attempts(path, run.run_id)] == [(1, "judge", "running", None)]
    rows, snapshot = judge_pipeline.record(path, run)
    assert rows["judge_verdicts"] == len(run.judged) > 0
    assert [a[:4] for a in _attempts(path, run.run_id)] == [(1, "judge", "ok", None)]
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select count(*) from judge_verdicts where run_id = ?", [run.run_id]).fetchone() == (
            len(run.judged),)
        assert con.execute("select trajectories from judge_runs").fetchall() == [(len(run.judged),)]


def test_a_stopped_run_commands_line_names_the_attempt_it_marked_or_that_none_was_recorded(tmp_path, monkeypatch):
    """The CLI's one line after a stop claims an 'interrupted' attempt only when this process marked one."""
    import argparse

    from acceptgate.cli import stopped_line

    monkeypatch.setattr(ledger, "STOPPED", [])
    monkeypatch.setattr(ledger, "STARTED", [])
    args = argparse.Namespace(command="audit")
    line = stopped_line(args, signal.SIGTERM)
    assert line == ("acceptgate audit: stopped by SIGTERM: stopped before its run was recorded: nothing was "
                    "written to the warehouse")
    path = ledger.prepare(tmp_path / "w.duckdb")
    gate_run = _gate_run("stopped-line")
    with pytest.raises(Interrupted):
        with GATE.run(path, gate_run.run_id, row=gate_run.frame()) as run:
            with run.guard("deliveries"):
                raise Interrupted(signal.SIGTERM)
    assert ledger.STOPPED == ["stopped-line"]
    assert ("stopped by SIGTERM: the attempt of run stopped-line is marked 'interrupted' and nothing of it was "
            "published") in stopped_line(args, signal.SIGTERM)
