"""The certify flow into DuckDB (Prefect's test server), and the CLI's input checks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate.v4v import certify as C
from acceptgate.v4v.pools import PoolSettings
from acceptgate.pipelines.requests import CertifyRequest


@pytest.fixture(scope="module")
def suites_2(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=2)
    return suitefiles.write_suites(result, tmp_path_factory.mktemp("v4vflow") / "suites")


def test_certify_flow_writes_the_v4v_tables(prefect_harness, tmp_path, suites_2, humanevalplus_path,
                                             codet_samples_path):
    from acceptgate.flows.certify import certify

    path = tmp_path / "w.duckdb"
    settings = C.Settings(pool=PoolSettings(samples_per_task=2), repeat_sample=0)
    judge = Path(__file__).resolve().parent / "judges" / "defines_entry.py"
    summary = certify(CertifyRequest(suites_dir=str(suites_2), dataset=str(humanevalplus_path),
                                     samples=str(codet_samples_path), warehouse=str(path), settings=settings,
                                     verifier_commands=[f"python3 {judge} {{file}} {{entry_point}}"]))
    text = "\n".join(summary.lines())
    assert "always-reject" in text and "all-reject" in text and "BA_norm" in text
    # where the time went (what --verbose prints)
    assert summary.timing.startswith("certify: time: ") and all(
        f"{phase} " in summary.timing for phase in ("load", "gauge", "execute", "write")), summary.timing
    assert f"cmd:python3 {judge}" in text and "task certification (GT" in text
    with warehouse.connect(path, read_only=True) as con:
        status, k, committed = con.execute("select status, k, heldout_seed_sha256 from v4v_runs").fetchone()
        assert (status, k) == ("ok", 3)
        # the held-out part's seed: committed (sha256) at the start, published at the end
        seed, seed_sha, held = con.execute("select heldout_seed, heldout_seed_sha256, candidates from v4v_heldout").fetchone()
        assert seed_sha == committed == hashlib.sha256(seed.encode()).hexdigest() and held > 0
        assert summary.certification.settings.heldout_seed == seed and f"held-out seed (published" in text
        rows = dict(con.execute("select verifier, diagnosis from v4v_verifier_summary").fetchall())
        assert rows["always-reject"] == "all-reject" and rows["gold-exact-match"].startswith("gold-only")
        roles = dict(con.execute("select verifier, role from v4v_verifier_summary").fetchall())
        assert roles.pop("GT") == "source" and set(roles.values()) == {"measured"}
        gates = con.execute("select count(*), count(distinct gate) from v4v_gates").fetchone()
        assert gates == (2 * (6 + 5 * 2), 6)  # 2 tasks x (GT's six gates + 5 measured verifiers x 2 checks)
        ext = con.execute("select family, gates_applicable from v4v_verifier_summary where verifier like 'cmd:%'").fetchall()
        assert ext == [("external", 2)]
        cert = dict(con.execute("select verifier, bool_and(certified) from v4v_certificates group by verifier").fetchall())
        assert cert["GT"] is True and cert["always-accept"] is False and cert["V"] is False
        tasks = con.execute("select task_id, certified, pool_key from v4v_task_certificates order by 1").fetchall()
        assert [(t, ok) for t, ok, _ in tasks] == [("HumanEval/0", True), ("HumanEval/1", True)]
        kinds = {r[0] for r in con.execute("select class from v4v_pool_composition").fetchall()}
        assert kinds == {"gold", "legal-variant", "ordinary-wrong", "attack", "model-sample"}
        parts = {r[0] for r in con.execute("select part from v4v_candidates").fetchall()}
        assert parts == {"published", "held-out"}
        outputs = con.execute("select count(*) from v4v_executions where round = 0 and outputs_json is null").fetchone()
        assert outputs == (0,)
        spent = dict(con.execute("select task_id, sum(wall_seconds) from v4v_executions group by 1").fetchall())
    # what a sharded certify of the same tasks orders its shards by: this finished run's times per task
    from acceptgate.pipelines import certify as certify_io

    history = certify_io.task_seconds(path, sorted(spent) + ["HumanEval/999"])
    assert history.keys() == spent.keys() and all(history[t] == pytest.approx(spent[t]) and spent[t] > 0 for t in spent)
    assert certify_io.task_seconds(tmp_path / "none.duckdb", sorted(spent)) == {}


@pytest.mark.parametrize("extra, fragment", [
    (["--verifier", "nope"], "unknown verifier 'nope'"),
    (["--verifier", "ext:/nonexistent/v.py"], "cannot read the verifier program"),
    (["--k", "0"], "--k"),
    (["--dataset", "/nonexistent.jsonl"], "not found"),
    (["--verifier-command", "python3 j.py", "--verifier-mount", "/nonexistent/dir"], "--verifier-mount"),
    (["--verifier-command", "python3 'unclosed"], "cannot split the command"),
    (["--evalplus-venv", "/nonexistent/venv"], "no evalplus==0.3.1"),
    (["--heldout-seed", "not-hex"], "--heldout-seed"),
])
def test_certify_cli_invalid_input_exits_2_and_writes_nothing(extra, fragment, tmp_path, suites_2,
                                                             humanevalplus_path, capsys):
    path = tmp_path / "w.duckdb"
    argv = ["certify", "--suites", str(suites_2), "--dataset", str(humanevalplus_path), "--warehouse", str(path)]
    assert main(argv + extra) == 2
    assert fragment in capsys.readouterr().err
    assert not path.exists()


def test_certify_cli_unwritable_warehouse_exits_2_before_work(tmp_path, suites_2, humanevalplus_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    argv = ["certify", "--suites", str(suites_2), "--dataset", str(humanevalplus_path),
            "--warehouse", str(blocker / "w.duckdb")]
    assert main(argv) == 2
    assert str(blocker) in capsys.readouterr().err
