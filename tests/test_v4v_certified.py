"""A gate decides only on certified tasks (seed 002: six gates first, then the agent): each task needs a
certification record for its exact suites and pool, a task that failed certification is excluded with
its reason, V's FPR_h measured there is reported beside every false-delivery rate, and a policy refuses
tasks whose V is too weak."""

from __future__ import annotations

import pytest

from acceptgate.cli import main
from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines import certify as certified
from acceptgate.store import warehouse


@pytest.fixture(scope="module")
def suites_3(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=3)
    return suitefiles.write_suites(result, tmp_path_factory.mktemp("certified") / "suites")


@pytest.fixture(scope="module")
def tasks_3(suites_3):
    from acceptgate.gates import run as core

    return core.load_task_set(backend=None, suites_dir=str(suites_3)).tasks


def _certificate(path, run_id, task, *, ok=True, status="ok", pool_key=None, fpr=100 / 3, when="now()"):
    """A certification run's row and one task's certificate, as ``acceptgate certify`` writes them."""
    warehouse.migrate(path)
    visible, hidden, key = certified.task_key(task)
    with warehouse.transaction(path) as con:
        con.execute("insert or replace into v4v_runs (run_id, run_id_origin, pipeline, acceptgate_version, suites_from, "
                    "dataset_from, inputs_sha256, settings, task_count, verifiers, k, backend, status, started_at, "
                    f"finished_at) values (?, 'user', 'certify/2', '0', 's', 'd', 'h', '{{}}', 1, 'GT,V', 3, 'local', ?, "
                    f"{when}, {when})", [run_id, status])
        con.execute("insert into v4v_task_certificates (run_id, task_id, certified, failed_gates, reason, "
                    "visible_spec_hash, hidden_spec_hash, reference_sha256, pool_key, pool_sha256, candidates, held_out, "
                    "findings, excluded, v_fpr_h) values (?, ?, ?, ?, ?, ?, ?, 'r', ?, ?, 30, 6, 0, 0, ?)",
                    [run_id, task.task_id, ok, "[]" if ok else '["replay"]',
                     "GT passes the six gates" if ok else "GT fails replay: crafted", visible, hidden,
                     pool_key or key, "p" * 64, fpr])


def test_a_task_needs_a_record_for_its_exact_suites_and_pool(tmp_path, tasks_3):
    path = tmp_path / "w.duckdb"
    with pytest.raises(InvalidInput, match=r"task HumanEval/0 has no certification record for its exact suites and "
                                           r"pool in this warehouse \(and 2 more of 3 tasks\): certify them first"):
        certified.require_tasks(path, tasks_3)
    t0, t1, t2 = tasks_3
    _certificate(path, "c-other-pool", t0, pool_key="0" * 64)  # another reference or pool version
    _certificate(path, "c-running", t1, status="running")  # not finished: no record yet
    with pytest.raises(InvalidInput, match="task HumanEval/0 has no certification record"):
        certified.require_tasks(path, tasks_3)
    _certificate(path, "c-old", t0, ok=False, when="now() - interval 1 day")
    _certificate(path, "c-new", t0, fpr=50.0)
    _certificate(path, "c-new", t1)
    _certificate(path, "c-failed", t2, ok=False)
    found = certified.require_tasks(path, tasks_3)
    assert {t: (c.run_id, c.certified) for t, c in found.items()} == {
        "HumanEval/0": ("c-new", True), "HumanEval/1": ("c-new", True), "HumanEval/2": ("c-failed", False)}
    assert found["HumanEval/0"].v_fpr_h == 50.0  # the newest finished record for the exact key


def test_gate_refuses_uncertified_tasks_before_any_work(tmp_path, capsys, suites_3, codet_samples_path):
    path = tmp_path / "w.duckdb"
    argv = ["gate", "--arm", "conform", "--source", f"codet:{codet_samples_path}", "--suites", str(suites_3),
            "--warehouse", str(path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "task HumanEval/0 has no certification record for its exact suites and pool" in err
    assert "acceptgate certify" in err and "--no-certify" in err
    assert not path.exists()  # nothing ran, nothing written


@pytest.mark.prefect
def test_after_certify_the_gate_runs_and_reports_v_fpr_h_beside_each_rate(prefect_harness, tmp_path, capsys, suites_3,
                                                                          tasks_3, humanevalplus_path,
                                                                          codet_samples_path):
    path = tmp_path / "w.duckdb"
    source = f"codet:{codet_samples_path}"
    assert main(["certify", "--suites", str(suites_3), "--dataset", str(humanevalplus_path), "--samples",
                 str(codet_samples_path), "--samples-per-task", "2", "--repeat-sample", "0", "--quiet",
                 "--warehouse", str(path)]) == 0
    capsys.readouterr()
    with warehouse.connect(path, read_only=True) as con:
        cert_run = con.execute("select run_id from v4v_runs").fetchone()[0]
        fpr = dict(con.execute("select task_id, v_fpr_h from v4v_task_certificates where certified").fetchall())
    assert set(fpr) == {t.task_id for t in tasks_3}, "the first three tasks are certifiable"
    assert main(["gate", "--arm", "conform,off", "--source", source, "--suites", str(suites_3), "--per-task", "2",
                 "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "certification: every task gated has a certification record" in out
    mean = sum(fpr.values()) / len(fpr)
    conform_line = next(line for line in out.splitlines() if line.startswith("conform "))
    assert conform_line.rstrip().endswith(f"{mean:.1f}% (3 tasks)"), out
    assert next(line for line in out.splitlines() if line.startswith("off ")).rstrip().endswith("- (no V)")
    with warehouse.connect(path, read_only=True) as con:
        rows = con.execute("select arm, certification, v_fpr_h from gate_decisions order by arm, task_id").fetchall()
        assert {(a, c) for a, c, _ in rows} == {("conform", cert_run), ("off", cert_run)}
        rates = dict(con.execute("select arm, v_fpr_h from gate_rates").fetchall())
        assert rates["conform"] == pytest.approx(mean) and rates["off"] is None
        assert con.execute("select certify, max_fpr_attack from gate_runs").fetchone() == ("checked", 50.0)
    # the policy: a V that accepts more than 10 % of the attacks gates nothing; OFF delivers as ever
    assert main(["gate", "--arm", "conform,off", "--source", source, "--suites", str(suites_3), "--per-task", "2",
                 "--max-fpr-attack", "10", "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    with warehouse.connect(path, read_only=True) as con:
        run = con.execute("select run_id from gate_runs where max_fpr_attack = 10").fetchone()[0]
        refused = con.execute("select arm, decision, stop_reason from gate_decisions where run_id = ? order by arm",
                              [run]).fetchall()
    assert {(a, d) for a, d, _ in refused} == {("conform", "refused"), ("off", "delivered")}
    assert all("V too weak to gate" in why and "over --max-fpr-attack 10%" in why for a, _, why in refused
               if a == "conform")
    # a task whose newest certificate says it failed is excluded, with its reason, and the rest go on
    _certificate(path, "c-failed-later", tasks_3[1], ok=False, when="now() + interval 1 minute")
    assert main(["gate", "--arm", "conform", "--source", source, "--suites", str(suites_3), "--per-task", "1",
                 "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "excluded before any gate: 1 tasks: HumanEval/1 (certification: not certified (run c-failed-later)" in out
    with warehouse.connect(path, read_only=True) as con:
        run = con.execute("select run_id from gate_exclusions").fetchone()[0]
        assert con.execute("select count(*) from deliveries where run_id = ?", [run]).fetchone() == (2,)
        assert con.execute("select task_id, stage from gate_exclusions").fetchall() == [("HumanEval/1", "certification")]
    # --no-certify: the same tasks, no record needed, and every decision says so
    assert main(["gate", "--no-certify", "--arm", "conform", "--source", source, "--suites", str(suites_3),
                 "--per-task", "1", "--warehouse", str(tmp_path / "loose.duckdb")]) == 0
    with warehouse.connect(tmp_path / "loose.duckdb", read_only=True) as con:
        assert con.execute("select distinct certification, v_fpr_h from gate_decisions").fetchall() == [("skipped", None)]
        assert con.execute("select certify from gate_runs").fetchall() == [("skipped",)]
