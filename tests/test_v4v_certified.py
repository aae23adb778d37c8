"""A verifier gates only with a passing certification for its version and the suites' hashes."""

from __future__ import annotations

import json

import pytest

from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate.errors import InvalidInput
from acceptgate.pipelines import certify as certified

VERSION = certified.GATE_VERIFIERS["V"][1]
HASHES = {"T/0": "a" * 64, "T/1": "b" * 64}


def _certification(path, run_id, *, passed=True, hashes=HASHES, version=VERSION, status="ok"):
    warehouse.migrate(path)
    with warehouse.transaction(path) as con:
        con.execute("insert into v4v_runs (run_id, run_id_origin, pipeline, acceptgate_version, suites_from, "
                    "dataset_from, inputs_sha256, settings, task_count, verifiers, k, backend, status, started_at, "
                    "finished_at) values (?, 'user', 'certify/1', '0', 's', 'd', 'h', '{}', 2, 'V', 3, 'local', ?, "
                    "now(), now())", [run_id, status])
        con.execute("insert into v4v_verifier_summary (run_id, verifier, family, tasks, gates_passed, "
                    "gates_applicable, failed_gates, median_round, rounds, round_ba, passes, fails, errors_crash, "
                    "errors_timeout, errors_malformed, fails_by_exception, diagnosis) values (?, 'V', 'suite', 2, ?, "
                    "6, ?, 0, 3, '[]', 1, 1, 0, 0, 0, 0, '-')",
                    [run_id, 6 if passed else 5, "{}" if passed else json.dumps({"mutation": 2})])
        for task, spec in hashes.items():
            con.execute("insert into v4v_decisions (run_id, task_id, verifier, candidate_id, round, decision, "
                        "reason, by_exception, verifier_version, spec_hash) values (?, ?, 'V', ?, 0, 'PASS', '', "
                        "false, ?, ?)", [run_id, task, f"{task}:gold", version, spec])


def test_no_certification_is_refused_with_the_command_to_run(tmp_path):
    with pytest.raises(InvalidInput, match="no warehouse, so no certification of V: certify it first"):
        certified.require(tmp_path / "none.duckdb", "V", HASHES)
    path = tmp_path / "w.duckdb"
    _certification(path, "c-fail", passed=False)
    with pytest.raises(InvalidInput, match=r"no passing certification \(run c-fail failed gates"):
        certified.require(path, "V", HASHES)
    with pytest.raises(InvalidInput, match="not 'cmd:x'"):
        certified.require(path, "cmd:x", HASHES)


def test_a_passing_certification_counts_only_for_the_same_suites_and_version(tmp_path):
    path = tmp_path / "w.duckdb"
    _certification(path, "c-other", hashes={"T/0": "a" * 64, "T/1": "c" * 64})
    with pytest.raises(InvalidInput, match=r"does not cover 1 of 2 tasks .*T/1"):
        certified.require(path, "V", HASHES)
    _certification(path, "c-old", version="acceptgate-v4v/0:suite")
    with pytest.raises(InvalidInput, match="best: run c-other"):  # c-old covers nothing: another version
        certified.require(path, "V", HASHES)
    _certification(path, "c-running", status="running")
    with pytest.raises(InvalidInput):
        certified.require(path, "V", HASHES)
    _certification(path, "c-good")
    got = certified.require(path, "V", HASHES)
    assert (got.run_id, got.tasks, got.version) == ("c-good", 2, VERSION)
    assert certified.require(path, "V", {"T/1": "b" * 64}).run_id == "c-good"  # a subset is covered


def test_gate_cli_refuses_an_uncertified_verifier_before_any_work(tmp_path, capsys, humanevalplus_path,
                                                                 codet_samples_path, local_backend):
    from acceptgate import suitefiles
    from acceptgate.importers import humanevalplus

    suites = suitefiles.write_suites(humanevalplus.load(humanevalplus_path, local_backend, limit=2), tmp_path / "s")
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    code = main(["gate", "--arm", "conform", "--source", f"codet:{codet_samples_path}", "--suites", str(suites),
                 "--verifier", "V", "--warehouse", str(path)])
    assert code == 2
    assert "V has no passing certification: certify it first" in capsys.readouterr().err
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select count(*) from gate_runs").fetchone()[0] == 0  # nothing ran
    code = main(["gate", "--arm", "conform", "--source", f"codet:{codet_samples_path}", "--humanevalplus",
                 str(humanevalplus_path), "--verifier", "V", "--warehouse", str(path)])
    assert code == 2 and "pass --suites" in capsys.readouterr().err
