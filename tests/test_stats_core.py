"""The statistics library against its references: scipy's bootstrap and permutation_test, statsmodels'
Holm, sklearn's Cohen's kappa, and hand-computed cases. Small data, so exact enumeration is possible."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

from acceptgate.stats import (
    PairedData, Rate, accuracy, cohen_kappa, compare_judges, er_mean_of_runs, er_of_averaged_rates, holm,
    paired_effects, run_stability,
)
from acceptgate.stats import resampling as rs
from acceptgate.stats.stability import interaction_test
from acceptgate.stats.tidy import IncompleteDesign, paired_from_tidy


def _binary(rng, n, runs, p):
    return (rng.random((n, runs)) < p).astype(float)


def _config(name, n=60, runs=3, pa=0.2, pb=0.45, seed=1):
    rng = np.random.default_rng(seed)
    return PairedData(name, tuple(f"u{i}" for i in range(n)), _binary(rng, n, runs, pa), _binary(rng, n, runs, pb))


# -- rates -----------------------------------------------------------------------------------------

def test_rate_names_its_denominator_and_refuses_nonsense():
    r = Rate(17, 153, "all tasks")
    assert r.value == pytest.approx(17 / 153)
    assert str(r) == "11.1% (17/153 all tasks)"
    assert np.isnan(Rate(0, 0, "delivered tasks").value)
    with pytest.raises(ValueError):
        Rate(5, 4, "tasks")


# -- eq. 5 and ER ----------------------------------------------------------------------------------

def test_runs_are_averaged_within_a_unit_first():
    # unit 0: a = (1,1,0), b = (1,1,1) -> +1/3; unit 1: a = (0,0,0), b = (1,0,0) -> +1/3
    d = PairedData("c", ("p0", "p1"), [[1, 1, 0], [0, 0, 0]], [[1, 1, 1], [1, 0, 0]])
    assert d.unit_deltas() == pytest.approx([1 / 3, 1 / 3])
    (eff,) = paired_effects([d], resamples=200, seed=0)
    assert eff.delta == pytest.approx(1 / 3)
    assert eff.rate_a == pytest.approx(1 / 3) and eff.rate_b == pytest.approx(2 / 3)


def test_er_both_ways_differ_as_the_seed_says():
    # run 1: rate a 0.2, b 0.4 -> ER 0.5; run 2: a 0.3, b 0.4 -> ER 0.25; mean of runs 0.375
    # averaged rates: a 0.25, b 0.4 -> ER 0.375 ... make them differ: run 2 b = 0.6
    a = np.zeros((10, 2)); b = np.zeros((10, 2))
    a[:2, 0] = 1; b[:4, 0] = 1      # run 1: 0.2 vs 0.4
    a[:3, 1] = 1; b[:6, 1] = 1      # run 2: 0.3 vs 0.6
    assert er_mean_of_runs(a, b) == pytest.approx(0.5)
    assert er_of_averaged_rates(a, b) == pytest.approx(1 - 0.25 / 0.5)
    b2 = b.copy(); b2[:, 1] = 0; b2[:5, 1] = 1  # run 2: 0.3 vs 0.5 -> ER 0.4
    assert er_mean_of_runs(a, b2) == pytest.approx((0.5 + 0.4) / 2)
    assert er_of_averaged_rates(a, b2) == pytest.approx(1 - 0.25 / 0.45)
    assert np.isnan(er_of_averaged_rates(a, np.zeros_like(b)))


# -- bootstrap ---------------------------------------------------------------------------------------

def test_bootstrap_ci_equals_scipy_with_the_same_draws():
    d = _config("c", n=50)
    (eff,) = paired_effects([d], resamples=10_000, seed=7, confidence=0.95)
    ref = sps.bootstrap((d.unit_deltas(),), np.mean, n_resamples=10_000, method="percentile",
                        confidence_level=0.95, rng=rs.generator(7, rs.BOOTSTRAP, d.n))
    assert eff.ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert eff.ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_bootstrap_ci_within_monte_carlo_error_of_an_independent_scipy_run():
    d = _config("c", n=80, seed=3)
    (eff,) = paired_effects([d], resamples=10_000, seed=1)
    ref = sps.bootstrap((d.unit_deltas(),), np.mean, n_resamples=10_000, method="percentile",
                        rng=np.random.default_rng(12345))
    se = d.unit_deltas().std(ddof=1) / np.sqrt(d.n)
    assert abs(eff.ci_low - ref.confidence_interval.low) < 0.15 * se
    assert abs(eff.ci_high - ref.confidence_interval.high) < 0.15 * se


def test_each_configuration_matches_its_own_scipy_bootstrap_when_batched():
    data = [_config(f"c{i}", n=40, seed=i, pb=0.2 + 0.1 * i) for i in range(4)]
    effects = paired_effects(data, resamples=2_000, seed=11)
    for d, e in zip(data, effects):
        ref = sps.bootstrap((d.unit_deltas(),), np.mean, n_resamples=2_000, method="percentile",
                            rng=rs.generator(11, rs.BOOTSTRAP, d.n))
        assert (e.ci_low, e.ci_high) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)


# -- permutation test --------------------------------------------------------------------------------

def _scipy_paired_p(d: PairedData, resamples: int, rng=None) -> float:
    a, b = d.unit_means()
    res = sps.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples",
                               vectorized=True, n_resamples=resamples, alternative="two-sided", rng=rng)
    return res.pvalue


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_permutation_p_equals_scipy(seed):
    d = _config("c", n=10, seed=seed, pa=0.3, pb=0.6)  # 2**10 = 1024 <= resamples: both enumerate
    (eff,) = paired_effects([d], resamples=5_000, seed=0)
    assert eff.exact_test and eff.permutations == 1024
    assert eff.p == pytest.approx(_scipy_paired_p(d, 5_000), abs=1e-12)


def test_sampled_permutation_p_within_monte_carlo_error_of_scipy():
    d = _config("c", n=120, seed=5, pa=0.30, pb=0.36)
    (eff,) = paired_effects([d], resamples=10_000, seed=0)
    ref = _scipy_paired_p(d, 10_000, rng=np.random.default_rng(99))
    assert not eff.exact_test
    assert 0.001 < ref < 0.999
    assert abs(eff.p - ref) < 5 * np.sqrt(2 * ref * (1 - ref) / 10_000) + 1e-3


def test_permutation_swaps_whole_conditions_not_runs():
    # Every unit: a = (1, 0, 0), b = (0, 0, 1): per-run differences exist but the run-averaged ones are 0,
    # so swapping whole conditions never changes anything: p = 1, Delta = 0.
    n = 12
    d = PairedData("c", tuple(map(str, range(n))), np.tile([1, 0, 0], (n, 1)), np.tile([0, 0, 1], (n, 1)))
    (eff,) = paired_effects([d], resamples=1_000, seed=0)
    assert eff.delta == 0 and eff.p == 1.0


# -- Holm --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03, 0.2], [0.5, 0.5, 0.001], [1e-5, 0.9, 0.02, 0.02, 0.049, 0.7, 0.3, 0.011]])
def test_holm_equals_statsmodels(p):
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-15)


def test_holm_keeps_nan_out_of_the_family():
    out = holm([0.01, np.nan, 0.04])
    assert np.isnan(out[1])
    assert out[[0, 2]] == pytest.approx(multipletests([0.01, 0.04], method="holm")[1])


def test_batched_effects_carry_holm_over_all_configurations():
    data = [_config(f"c{i}", n=30, seed=10 + i, pb=0.25 + 0.05 * i) for i in range(8)]
    effects = paired_effects(data, resamples=2_000, seed=3)
    assert [e.p_holm for e in effects] == pytest.approx(list(multipletests([e.p for e in effects], method="holm")[1]))


# -- determinism ------------------------------------------------------------------------------------

def test_same_seed_same_results_other_seed_other_draws():
    data = [_config("x", n=70), _config("y", n=70, seed=9)]
    one = paired_effects(data, resamples=3_000, seed=42)
    assert one == paired_effects(data, resamples=3_000, seed=42)
    other = paired_effects(data, resamples=3_000, seed=43)
    assert [e.delta for e in other] == [e.delta for e in one]
    assert [(e.ci_low, e.ci_high, e.p) for e in other] != [(e.ci_low, e.ci_high, e.p) for e in one]
    assert all(e.seed == 42 and e.resamples == 3_000 for e in one)
    # a configuration's results do not depend on which other configurations are in the batch
    assert paired_effects(data[:1], resamples=3_000, seed=42)[0].ci_low == one[0].ci_low


# -- run stability -------------------------------------------------------------------------------------

def test_interaction_exact_p_equals_scipy_samples_permutation():
    rng = np.random.default_rng(4)
    e = rng.integers(-1, 2, size=(4, 3)).astype(float)  # 4 units x 3 runs: (3!)**4 = 1296 assignments
    stat, p, exact = interaction_test(e, resamples=5_000, seed=0)
    assert exact

    def spread(*runs, axis):
        means = np.stack([np.mean(r, axis=axis) for r in runs])
        return ((means - means.mean(axis=0)) ** 2).sum(axis=0)

    ref = sps.permutation_test(tuple(e.T), spread, permutation_type="samples", vectorized=True,
                               n_resamples=5_000, alternative="greater")
    assert stat[0] == pytest.approx(ref.statistic)
    assert p[0] == pytest.approx(ref.pvalue, abs=1e-12)


def test_run_stability_per_run_pooled_range_and_interaction():
    n = 100
    rng = np.random.default_rng(0)
    a = _binary(rng, n, 3, 0.2)
    b_flat = _binary(rng, n, 3, 0.5)
    b_drift = np.column_stack([_binary(rng, n, 1, 0.2), _binary(rng, n, 1, 0.5), _binary(rng, n, 1, 0.9)])
    flat = PairedData("flat", tuple(map(str, range(n))), a, b_flat)
    drift = PairedData("drift", tuple(map(str, range(n))), a, b_drift)
    s_flat, s_drift = run_stability([flat, drift], resamples=2_000, seed=0)
    per_run = (b_drift - a).mean(axis=0)
    assert s_drift.per_run_delta == pytest.approx(tuple(per_run))
    assert s_drift.pooled_delta == pytest.approx(drift.unit_deltas().mean())
    assert s_drift.delta_range == pytest.approx(per_run.max() - per_run.min())
    assert all(lo <= d <= hi for lo, d, hi in zip(s_drift.per_run_ci_low, s_drift.per_run_delta, s_drift.per_run_ci_high))
    assert s_drift.interaction_p < 0.001 < s_flat.interaction_p
    with pytest.raises(ValueError, match="at least 2 runs"):
        run_stability([PairedData("one", ("u",), [[1]], [[0]])])


# -- agreement ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1])
def test_accuracy_and_kappa_equal_sklearn(seed):
    rng = np.random.default_rng(seed)
    human = rng.choice(["evidence", "generic", "none"], size=200, p=[0.3, 0.2, 0.5])
    judge = np.where(rng.random(200) < 0.85, human, rng.choice(["evidence", "generic", "none"], size=200))
    assert accuracy(human, judge) == pytest.approx(float(np.mean(human == judge)))
    assert cohen_kappa(human, judge) == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    hb, jb = human == "evidence", judge == "evidence"
    assert cohen_kappa(hb, jb) == pytest.approx(cohen_kappa_score(hb, jb), abs=1e-12)


def test_kappa_hand_case_and_degenerate():
    # 2x2: [[20, 5], [10, 15]] -> po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert np.isnan(cohen_kappa([1, 1], [1, 1]))


def test_judge_comparison_centered_differences_and_interaction():
    rng = np.random.default_rng(2)
    n, C = 150, 4
    main = (rng.random((n, C)) < 0.3).astype(float)
    same_shift = np.clip(main + (rng.random((n, C)) < 0.1), 0, 1)  # audit judge a bit stricter everywhere
    cmp = compare_judges(main, same_shift, [f"c{i}" for i in range(C)], resamples=2_000, seed=0)
    diff = (same_shift - main).mean(axis=0)
    assert cmp.difference == pytest.approx(tuple(diff))
    assert cmp.centered == pytest.approx(tuple(diff - diff.mean()))
    assert sum(cmp.centered) == pytest.approx(0, abs=1e-12)
    assert all(lo <= c <= hi for lo, c, hi in zip(cmp.centered_ci_low, cmp.centered, cmp.centered_ci_high))
    shifted = same_shift.copy()
    shifted[:, 0] = np.clip(main[:, 0] + (rng.random(n) < 0.6), 0, 1)  # one configuration judged much stricter
    assert compare_judges(main, shifted, list("abcd"), resamples=2_000, seed=0).interaction_p < 0.001


def test_judge_interaction_with_many_configurations_uses_sampled_permutations():
    rng = np.random.default_rng(3)
    main = (rng.random((50, 8)) < 0.3).astype(float)
    audit = main.copy()
    cmp = compare_judges(main, audit, [f"c{i}" for i in range(8)], resamples=500, seed=0)
    assert cmp.interaction_statistic == 0 and cmp.interaction_p == 1.0


# -- tidy frames ------------------------------------------------------------------------------------

def test_tidy_frame_round_trip_and_holes_named():
    rows = [dict(config=c, unit=f"t{u}", condition=k, run=r, value=float((u + r + (k == "b")) % 2))
            for c in ("m1", "m2") for u in range(5) for k in ("a", "b") for r in (1, 2, 3)]
    frame = pd.DataFrame(rows)
    data = paired_from_tidy(frame, conditions=("a", "b"))
    assert [d.config for d in data] == ["m1", "m2"] and data[0].a.shape == (5, 3)
    with pytest.raises(IncompleteDesign, match="unit t0: no value for condition a, run 1"):
        paired_from_tidy(frame.iloc[1:], conditions=("a", "b"))
    with pytest.raises(IncompleteDesign, match="more than once"):
        paired_from_tidy(pd.concat([frame, frame.iloc[:1]]), conditions=("a", "b"))
