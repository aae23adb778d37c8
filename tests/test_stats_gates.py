"""``acceptgate stats`` over real gate results: CONFORM and OFF on CodeT's first five samples for the first
10 HumanEval+ tasks (the gate's own core functions, no Prefect), then the stats pipeline, then the CLI
through the Prefect flow."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate.gates.delivery import score_deliveries
from acceptgate._util.errors import InvalidInput
from acceptgate.gates import public_tasks, run_arm
from acceptgate.gates import run as gates
from acceptgate.pipelines.families import GATE
from acceptgate.sources.codet import CodetSource
from acceptgate.pipelines import stats as stats_io
from acceptgate.pipelines.requests import StatsRequest
from acceptgate.stats import pipeline


@pytest.fixture(scope="module")
def gate_warehouse(tmp_path_factory, humanevalplus_path, codet_samples_path, local_backend):
    from acceptgate.datasets.importers import humanevalplus

    path = tmp_path_factory.mktemp("stats") / "wh.duckdb"
    tasks = gates.gradeable(humanevalplus.load(humanevalplus_path, local_backend, limit=10).tasks)
    source = f"codet:{codet_samples_path}"
    run = gates.make_run(source=source, tasks=tasks, tasks_from="test", arms=["conform", "off"], per_task=5,
                         backend="local", run_id="gate-stats-test")
    warehouse.migrate(path)
    recorded = GATE.start(path, run.run_id, row=run.frame())
    outcomes = []
    for arm in ("conform", "off"):
        outcomes += run_arm(arm, public_tasks(tasks), CodetSource(codet_samples_path), local_backend)
    recorded.write_stage("gate", gates.gate_frames(run, outcomes))
    rows = score_deliveries(outcomes, gates.hidden_suites(tasks), local_backend)
    recorded.write_stage("deliveries", gates.delivery_frames(run, rows), related=gates.gate_frames(run, outcomes))
    recorded.finish(wall_seconds=1.0)
    return path, run.run_id


def _counts(path, run_id):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("select task_id, arm, false_delivery, delivered from deliveries where run_id = ? "
                           "order by task_id, arm", [run_id]).fetchall()


def _named(settings: pipeline.Settings):
    """The stats command's derivation of the run id under these settings."""
    return StatsRequest(seed=settings.seed, resamples=settings.resamples, confidence=settings.confidence).derive_run_id


def test_gate_stats_pair_by_task_and_write_reproducible_rows(gate_warehouse):
    path, gate_run = gate_warehouse
    source_run, measured = stats_io.gate_inputs(path)  # the latest finished gate run
    assert source_run == gate_run
    rows = _counts(path, gate_run)
    by = {(t, a): (f, d) for t, a, f, d in rows}
    tasks = sorted({t for t, _ in by})
    off_false = np.array([by[(t, "off")][0] for t in tasks], float)
    conform_false = np.array([by[(t, "conform")][0] for t in tasks], float)

    settings = pipeline.Settings(seed=5, resamples=2_000)
    result = pipeline.compute("gate", source_run, measured, settings, name_run=_named(settings))
    (fd,) = result.effects["false_delivery"]
    assert (fd.config, fd.a_name, fd.b_name, fd.n_units) == ("conform", "conform", "off", len(tasks))
    assert fd.rate_a == pytest.approx(conform_false.mean()) and fd.rate_b == pytest.approx(off_false.mean())
    assert fd.delta == pytest.approx((off_false - conform_false).mean())  # over ALL tasks, refusals included
    assert fd.ci_low <= fd.delta <= fd.ci_high and 0 < fd.p <= 1 and fd.p_holm == fd.p  # one arm: Holm = p
    assert result.stability == {}  # one gate run = one run per condition

    written = stats_io.write(path, result, conditions="arm,off")
    assert written["stats_effects"] == 2
    with duckdb.connect(str(path), read_only=True) as con:
        stored = con.execute("select estimate, ci_low, ci_high, p, p_holm, n_units, resamples, seed, input_sha256 "
                             "from stats_effects where run_id = ? and measure = 'false_delivery'",
                             [result.run_id]).fetchone()
        run_row = con.execute("select kind, source_run_id, seed, resamples from stats_runs where run_id = ?",
                              [result.run_id]).fetchone()
        view = con.execute("select delta_pp from stats_report where run_id = ? and measure = 'false_delivery'",
                           [result.run_id]).fetchone()
    assert stored == pytest.approx((fd.delta, fd.ci_low, fd.ci_high, fd.p, fd.p_holm, len(tasks), 2_000, 5,
                                    result.input_sha256))
    assert run_row == ("gate", gate_run, 5, 2_000)
    assert view[0] == pytest.approx(round(100 * fd.delta, 2))

    again = pipeline.compute("gate", source_run, stats_io.gate_inputs(path, gate_run)[1], settings,
                             name_run=_named(settings))
    assert again.run_id == result.run_id and again.effects == result.effects  # the seed reproduces the table
    stats_io.write(path, again, conditions="arm,off")
    assert warehouse.duplicate_keys(path, "stats_effects") == 0
    other = pipeline.compute("gate", source_run, measured, pipeline.Settings(seed=6, resamples=2_000),
                             name_run=_named(pipeline.Settings(seed=6, resamples=2_000)))
    assert other.run_id != result.run_id


def test_gate_stats_refuses_unknown_runs_and_arms(gate_warehouse):
    path, gate_run = gate_warehouse
    with pytest.raises(InvalidInput, match="no deliveries"):
        stats_io.gate_inputs(path, "gate-nope")
    with pytest.raises(InvalidInput, match="cannot compare hmix"):
        stats_io.gate_inputs(path, gate_run, arms=["hmix"])
    with pytest.raises(InvalidInput, match="resamples"):
        pipeline.Settings(resamples=10).check()


@pytest.mark.prefect
def test_stats_cli_prints_conform_vs_off_false_delivery(prefect_harness, gate_warehouse, capsys):
    path, gate_run = gate_warehouse
    assert main(["stats", "--warehouse", str(path), "--gate-run", gate_run, "--resamples", "1000"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("false delivery:"))
    assert "CONFORM" in line and "OFF" in line and "Delta (OFF - CONFORM)" in line
    assert "95% CI [" in line and "paired permutation p =" in line and "Holm p =" in line
    assert main(["stats", "--warehouse", str(path / "missing.duckdb")]) == 2


def test_the_demonstration_arm_carries_its_caveat():
    """hmix-leaky-gt sees GT, so its false delivery looks best; stats must never print it bare."""
    from acceptgate.stats.paired import PairedData

    units = tuple(f"T/{i}" for i in range(8))
    leaky, off = np.zeros(8), np.array([1, 1, 1, 0, 1, 1, 0, 1], float)
    measured = [pipeline.Measured("false_delivery", [PairedData("hmix-leaky-gt", units, leaky, off, "hmix-leaky-gt",
                                                                "off", "tasks")], "task")]
    result = pipeline.compute("gate", "gate-x", measured, pipeline.Settings(seed=1, resamples=2_000),
                              name_run=_named(pipeline.Settings(seed=1, resamples=2_000)))
    text = "\n".join(pipeline.format_effects(result))
    assert "HMIX-LEAKY-GT (DEMONSTRATION arm, deliberately broken) 0.0% vs OFF 75.0%" in text
    assert "caveat: hmix-leaky-gt is a DEMONSTRATION arm" in text
