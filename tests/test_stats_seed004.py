"""Seed 004's tables as views (Tables 2, 3, 5, 15-17, family means) and the overall M.2 interaction test,
on constructed data with known answers, checked against scipy and statsmodels."""

from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from acceptgate.store import warehouse
from acceptgate.stats import resampling as rs
from acceptgate.stats.paired import PairedData
from acceptgate.stats.seed004 import condition_rates, glm_interaction_lr, overall_interaction


def _pd(name, a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return PairedData(name, tuple(f"p{i}" for i in range(len(a))), a, b, "E+", "E-", "task pairs")


# -- Table 3: CIs on each condition's rate ------------------------------------------------------------------

def test_condition_rate_cis_equal_scipy_with_the_same_draws():
    rng = np.random.default_rng(5)
    d = _pd("c", (rng.random((60, 3)) < 0.2), (rng.random((60, 3)) < 0.5))
    plus, minus = condition_rates([d], resamples=5_000, seed=9)
    assert (plus.condition, minus.condition) == ("E+", "E-")
    for r, values in ((plus, d.a.mean(axis=1)), (minus, d.b.mean(axis=1))):
        ref = sps.bootstrap((values,), np.mean, n_resamples=5_000, method="percentile",
                            rng=rs.generator(9, rs.BOOTSTRAP, d.n))
        assert r.rate == pytest.approx(values.mean())
        assert (r.ci_low, r.ci_high) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)


# -- M.2: one condition x run interaction test over all configurations --------------------------------------

def _brute_force_p(data):
    """Every assignment of a run permutation to each unit, applied to all configurations together."""
    E = np.stack([d.b - d.a for d in data], axis=2)  # (n, R, C)
    n, runs, _ = E.shape

    def stat(x):
        m = x.mean(axis=0)  # (R, C)
        return ((m - m.mean(axis=0)) ** 2).sum()

    observed = stat(E)
    perms = list(itertools.permutations(range(runs)))
    null = [stat(np.stack([E[i, list(p)] for i, p in enumerate(choice)]))
            for choice in itertools.product(perms, repeat=n)]
    return observed, np.mean(np.array(null) >= observed - 1e-12)


def test_overall_interaction_exact_p_equals_brute_force_enumeration():
    rng = np.random.default_rng(2)
    data = [_pd(f"c{j}", rng.integers(0, 2, (4, 3)), rng.integers(0, 2, (4, 3))) for j in range(2)]
    o = overall_interaction(data, resamples=5_000, seed=0)  # (3!)**4 = 1296 assignments: exact
    observed, p = _brute_force_p(data)
    assert o.exact_test and o.configs == 2 and o.n_units == 4 and o.runs == 3
    assert o.statistic == pytest.approx(observed) and o.p == pytest.approx(p, abs=1e-12)


def test_overall_interaction_known_answers():
    n = 80
    rng = np.random.default_rng(0)
    a = (rng.random((n, 3)) < 0.2).astype(float)
    same = np.repeat((rng.random((n, 1)) < 0.5).astype(float), 3, axis=1)  # identical runs: no interaction
    flat = overall_interaction([_pd("x", a[:, [0, 0, 0]], same), _pd("y", a[:, [1, 1, 1]], same)], resamples=1_000)
    assert flat.statistic == 0 and flat.p == 1.0
    drift = np.column_stack([(rng.random((n, 1)) < q).astype(float) for q in (0.2, 0.5, 0.9)])
    moving = overall_interaction([_pd("x", a, drift), _pd("y", a, drift)], resamples=2_000)
    assert moving.p < 0.001 and moving.lr_p < 0.001
    # only the task pairs every configuration has are used
    short = PairedData("z", tuple(f"p{i}" for i in range(10)), a[:10], drift[:10], "E+", "E-")
    assert overall_interaction([_pd("x", a, drift), short], resamples=500).n_units == 10


def test_glm_likelihood_ratio_equals_statsmodels_logit_on_the_trajectories():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(3)
    data = [_pd(f"c{j}", rng.random((50, 3)) < 0.25, rng.random((50, 3)) < 0.35 + 0.1 * j) for j in range(2)]
    stat, df, p = glm_interaction_lr(data)
    rows = [{"config": d.config, "condition": cond, "run": r, "y": int(v)}
            for d in data for cond, m in (("E+", d.a), ("E-", d.b)) for r in range(3) for v in m[:, r]]
    frame = pd.DataFrame(rows)
    full = smf.logit("y ~ C(config) * C(condition) * C(run)", frame).fit(disp=0)
    reduced = smf.logit("y ~ C(config) * C(condition) + C(config) * C(run)", frame).fit(disp=0)
    assert df == 4  # 2 configurations x (3 runs - 1)
    assert stat == pytest.approx(2 * (full.llf - reduced.llf), rel=1e-6)
    assert p == pytest.approx(sps.chi2.sf(stat, 4))


# -- the views on constructed verdicts ----------------------------------------------------------------------

def _verdict(run_id, config, run, condition, disposition, v_p, passed=True, status="valid", i=[0]):
    i[0] += 1
    return {"run_id": run_id, "trajectory_id": f"t{i[0]}", "task_id": f"task-{disposition}", "pair_id": "p",
            "config": config, "run": run, "condition": condition, "disposition": disposition, "status": status,
            "invalid_reason": None if status == "valid" else "x", "raw_output": "", "prompt_sha256": "h",
            "record_sha256": "h", "kind": None if status != "valid" else ("evidence" if v_p else "none"),
            "v_p": v_p if status == "valid" else None, "oracle_passed": passed, "tokens_in": 0, "tokens_out": 0,
            "runtime_seconds": 0.0, "judge_tokens_in": 0, "judge_tokens_out": 0, "constructed": True}


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    path = tmp_path_factory.mktemp("seed004") / "w.duckdb"
    warehouse.migrate(path)
    rows = []
    # config claude-a, run 1: accept E+ 1/4, E- 2/4; avoid E+ 1/2, E- 1/2. run 2: accept E+ 0/4, E- 2/4; avoid E+ 0/2, E- 1/2
    spec = {("claude-a", 1): {"accept": (1, 4, 2, 4), "avoid": (1, 2, 1, 2)},
            ("claude-a", 2): {"accept": (0, 4, 2, 4), "avoid": (0, 2, 1, 2)},
            ("claude-b", 1): {"accept": (2, 4, 4, 4), "avoid": (0, 2, 2, 2)},
            ("claude-b", 2): {"accept": (2, 4, 4, 4), "avoid": (0, 2, 2, 2)},
            ("gpt-x", 1): {"accept": (3, 4, 3, 4), "avoid": (1, 2, 2, 2)},
            ("gpt-x", 2): {"accept": (3, 4, 3, 4), "avoid": (1, 2, 2, 2)}}
    for (config, run), by_disp in spec.items():
        for disp, (kp, np_, km, nm) in by_disp.items():
            rows += [_verdict("J", config, run, "E+", disp, int(k < kp), passed=k != 0) for k in range(np_)]
            rows += [_verdict("J", config, run, "E-", disp, int(k < km)) for k in range(nm)]
        rows.append(_verdict("J", config, run, "E+", "accept", 1, status="invalid"))  # stays out of VR
    frame = pd.DataFrame(rows)
    with warehouse.transaction(path) as con:
        con.register("f", frame)
        con.execute("insert into judge_verdicts by name select * from f")
    con = duckdb.connect(str(path), read_only=True)
    yield con
    con.close()


def test_per_run_tables_15_to_17(views):
    got = views.execute("select * from seed004_per_run where config = 'claude-a' order by run").df()
    r1, r2 = got.iloc[0], got.iloc[1]
    assert r1.vr == pytest.approx(2 / 6) and r1.e_minus_rate == pytest.approx(3 / 6)
    assert r1.er == pytest.approx(1 - (2 / 6) / (3 / 6)) and r1.er_accept == pytest.approx(1 - 0.25 / 0.5)
    assert r1.er_avoid == pytest.approx(0.0) and pd.isna(r1.er_transfer)  # no transfer tasks
    assert r2.vr == 0 and r2.er == pytest.approx(1.0)
    assert r1.invalid_verdicts == 1 and r1.trajectories == 13
    # TSR over all trajectories, and split by condition (the first E+ trajectory of each block failed)
    assert r1.tsr_e_plus == pytest.approx(5 / 7) and r1.tsr_e_minus == 1.0 and r1.tsr == pytest.approx(11 / 13)


def test_table2_averages_the_runs_and_er_is_the_mean_of_per_run_ers(views):
    row = views.execute("select * from seed004_table2 where config = 'claude-a'").df().iloc[0]
    assert row.runs == 2 and row.vr == pytest.approx((2 / 6 + 0) / 2)
    assert row.er == pytest.approx(((1 - (2 / 6) / (3 / 6)) + 1.0) / 2)
    assert row.er_accept == pytest.approx((0.5 + 1.0) / 2)


def test_table5_is_the_mean_of_configuration_level_ers(views):
    t2 = views.execute("select config, er_accept, vr_accept, e_minus_accept from seed004_table2").df()
    row = views.execute("select * from seed004_table5 where disposition = 'accept'").df().iloc[0]
    assert row.configs == 3 and row.er == pytest.approx(t2.er_accept.mean())
    # not the ratio of the row's mean rates (M.1)
    assert row.er != pytest.approx(1 - t2.vr_accept.mean() / t2.e_minus_accept.mean())
    assert views.execute("select count(*) from seed004_table5").fetchone()[0] == 2  # accept, avoid


def test_family_means(views):
    fam = views.execute("select * from seed004_family_means order by family").df()
    assert list(fam.family) == ["claude", "gpt"] and list(fam.configs) == [2, 1]
    t2 = views.execute("select * from seed004_table2 where config like 'claude-%'").df()
    assert fam.iloc[0].vr == pytest.approx(t2.vr.mean()) and fam.iloc[0].members == "claude-a,claude-b"


def test_table3_from_a_judge_stats_run(tmp_path):
    """The demo judge run through the stats pipeline: Table 3's rows carry both rates with their CIs."""
    from pathlib import Path

    from acceptgate.pipelines import judge as judge_io
    from acceptgate.judge.run import Inputs
    from test_judge_core import judge_inputs
    from acceptgate.pipelines.judge import write
    from acceptgate.pipelines.stats import write as write_stats
    from acceptgate.pipelines.requests import StatsRequest
    from acceptgate.stats.pipeline import compute

    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "judge"
    inputs = Inputs(*(str(demo / f) for f in ("trajectories.jsonl", "cards.jsonl", "memory.jsonl")))
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    run = judge_inputs(inputs, backend="rules", embedder="hashing")
    write(path, run)
    run_id, measured, extra = judge_io.judge_inputs(path, run.run_id)
    request = StatsRequest(judge_run=run_id, resamples=500)
    result = compute("judge", run_id, measured, request.settings(), name_run=request.derive_run_id)
    write_stats(path, result, conditions="E+,E-")
    with duckdb.connect(str(path), read_only=True) as con:
        t3 = con.execute("select * from seed004_table3").df()
        eff = con.execute("select config, rate_a, rate_b from stats_effects").df()
        overall = con.execute("select * from stats_overall_interaction").df()
    assert len(t3) == len(eff) > 0
    for _, row in t3.iterrows():
        e = eff[eff.config == row.config].iloc[0]
        assert row.rate_e_plus == pytest.approx(e.rate_a) and row.rate_e_minus == pytest.approx(e.rate_b)
        assert row.rate_e_plus_ci_low <= row.rate_e_plus <= row.rate_e_plus_ci_high
        assert row.delta == pytest.approx(row.rate_e_minus - row.rate_e_plus)
    assert measured[0].data[0].runs == 2  # the demo has two runs: M.2's overall test is there
    assert len(overall) == 1 and 0 <= overall.p[0] <= 1 and overall.configs[0] == len(eff)
    # the report shows each table in its own section
    from acceptgate.report import data as report_data

    warehouse.publish(path, [run.run_id, result.run_id])
    sections = {s.key: s for s in report_data.collect(warehouse.snapshot_path(path)).sections}
    for key in ("seed004-table2", "seed004-table3", "seed004-table5", "seed004-per-run", "seed004-families",
                "seed004-m2"):
        assert sections[key].ran, key
    shown = next(iter(sections["seed004-table3"].tables.values()))
    assert shown["E+ rate [CI]"].str.match(r"^\d+\.\d \[\d+\.\d, \d+\.\d\]$").all()
