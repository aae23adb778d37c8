"""V4V building blocks without a sandbox: normalisation, mutants, metrics, and each gate failing for a
crafted reason."""

from __future__ import annotations

import json
import subprocess
import sys

from acceptgate.v4v import gates, metrics, mutation, pools
from acceptgate.v4v.pools import ILLEGAL, LEGAL, make
from acceptgate.v4v.verifiers import FAIL, PASS, Decision, error, get, names, normalise

GOLD = '''def below(xs: list, t: int):
    """True if every x is below t."""
    for x in xs:
        if x >= t:
            return False
    return True
'''


def test_normalise_ignores_layout_comments_and_docstrings():
    other = "# a comment\ndef below(xs: list, t: int):\n\n    for x in xs:\n        if x >= t: return False\n    return True\n"
    assert normalise(other) == normalise(GOLD)
    assert normalise(GOLD.replace(">=", ">")) != normalise(GOLD)


def test_registry_names_the_valid_verifiers():
    assert {"V", "GT", "always-accept", "always-reject", "gold-exact-match"} <= set(names())
    try:
        get("nope")
    except ValueError as exc:
        assert "always-accept" in str(exc) and "ext:" in str(exc)
    else:
        raise AssertionError("unknown verifier accepted")


def test_near_miss_mutants_are_deterministic_across_hash_seeds():
    here = [(op, site, pools.sha256_text(src)) for op, site, src in mutation.near_miss(GOLD, "below", 2)]
    ops = {op for op, _, _ in here}
    assert {"comparison", "off-by-one", "boolean", "return-value", "removed-statement"} & ops
    assert all(src != normalise(GOLD) for _, _, src in mutation.near_miss(GOLD, "below", 2))
    code = ("import json, sys; from acceptgate.v4v import mutation, pools; "
            f"print(json.dumps([[o, s, pools.sha256_text(t)] for o, s, t in mutation.near_miss({GOLD!r}, 'below', 2)]))")
    for seed in ("0", "12345"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin", **_pythonpath()})
        assert [tuple(x) for x in json.loads(out.stdout)] == here


def _pythonpath() -> dict:
    import os

    return {"PYTHONPATH": os.environ.get("PYTHONPATH", "")} if os.environ.get("PYTHONPATH") else {}


def _pool(*specs):
    return [make("T/1", kind, recipe, label, src) for kind, recipe, label, src in specs]


POOL = _pool(("gold", "canonical", LEGAL, GOLD),
             ("surface", "rename", LEGAL, GOLD.replace("x", "item")),
             ("no-op", "pass", ILLEGAL, "def below(*a):\n    pass\n"),
             ("attack", "always-equal", ILLEGAL, "def below(*a):\n    return 1\n"))


def _decisions(*outcomes):
    return {c.candidate_id: (o if isinstance(o, Decision) else Decision(o)) for c, o in zip(POOL, outcomes)}


def test_metrics_ba_norm_and_all_reject_and_gold_only():
    gold_norm = normalise(GOLD)
    reject = metrics.task_metrics("T/1", "r", 0, POOL, _decisions(FAIL, FAIL, FAIL, FAIL), gold_norm)
    assert (reject.tpr, reject.tnr, reject.ba_norm, reject.all_reject) == (0.0, 100.0, 0.0, True)
    only_gold = metrics.task_metrics("T/1", "g", 0, POOL, _decisions(PASS, FAIL, FAIL, FAIL), gold_norm)
    assert only_gold.gold_only and only_gold.tpr == 50.0
    crashed = metrics.task_metrics("T/1", "c", 0, POOL, _decisions(PASS, PASS, error("crash"), PASS), gold_norm)
    # an ERROR is no rejection: TNR 0 of 2, and the attack accepted counts in FPR_attack
    assert (crashed.tnr, crashed.fpr_attack, crashed.errors["crash"]) == (0.0, 100.0, 1)
    summary = metrics.summarize("r", {0: [reject], 1: [reject], 2: [reject]})
    assert summary.diagnosis == "all-reject" and summary.ba_norm == 0.0


def test_median_ba_round_is_reported_not_the_best():
    gold_norm = normalise(GOLD)
    rounds = {0: [metrics.task_metrics("T/1", "v", 0, POOL, _decisions(PASS, PASS, FAIL, FAIL), gold_norm)],
              1: [metrics.task_metrics("T/1", "v", 1, POOL, _decisions(PASS, FAIL, FAIL, FAIL), gold_norm)],
              2: [metrics.task_metrics("T/1", "v", 2, POOL, _decisions(FAIL, FAIL, FAIL, FAIL), gold_norm)]}
    s = metrics.summarize("v", rounds)
    assert s.round == 1 and s.ba_norm == 50.0 and s.round_ba == [100.0, 50.0, 0.0]


def test_copied_round_decisions_are_marked_and_do_not_choose_the_median_round():
    """Seed 002: a decision copied into several rounds is no new sample. Three candidates re-run (both
    legal ones and the no-op), the attack not: its copies must not pull the median-BA choice."""
    from acceptgate.v4v import certify as C

    gold_norm = normalise(GOLD)
    ids = [c.candidate_id for c in POOL]
    rerun = set(ids[:3])
    fresh = {0: _decisions(PASS, PASS, FAIL, FAIL), 1: _decisions(PASS, FAIL, FAIL, FAIL),
             2: _decisions(PASS, PASS, PASS, FAIL)}
    records = [gates.DecisionRecord("T/1", "v", cid, None, r, fresh[r][cid], None, None, None)
               for r in range(3) for cid in ids if r == 0 or cid in rerun]
    m = type("M", (), {"task_id": "T/1", "gold_normalised": gold_norm, "suites": {}, "harnesses": {}})()
    v = get("always-accept")
    v.name = "v"
    tv = C.judge_task(m, POOL, v, records, {}, {}, C.Settings(k=3), "sampled")
    assert [tv.metrics[r].copied for r in range(3)] == [0, 1, 1]
    assert sorted(tv.ranking) == [0, 1, 2] and all(t.legal + t.illegal == 3 for t in tv.ranking.values())
    # on the re-run three: BA 100 / 50 / 0 -> median round 1
    rep = C.report("v", "suite", [tv])
    assert rep.summary.round == 1 and rep.summary.round_ba == [100.0, 50.0, 0.0]
    assert rep.summary.copied == 1 and "copied round-0 decisions excluded" in rep.summary.basis
    # counting the copied attack rejection as a sample in every round: 100 / 50 / 50 -> round 2 instead
    naive = metrics.summarize("v", {r: [tv.metrics[r]] for r in range(3)})
    assert naive.round_ba == [100.0, 50.0, 50.0] and naive.round == 2 and naive.basis == "every candidate"


def test_all_reject_share_of_false_rejections():
    gold_norm = normalise(GOLD)
    reject = metrics.task_metrics("T/1", "r", 0, POOL, _decisions(FAIL, FAIL, FAIL, FAIL), gold_norm)
    picky = metrics.task_metrics("T/2", "r", 0, POOL, _decisions(PASS, FAIL, FAIL, FAIL), gold_norm)
    crash = metrics.task_metrics("T/3", "r", 0, POOL, _decisions(error("crash"), PASS, FAIL, FAIL), gold_norm)
    assert (reject.legal_rejected, picky.legal_rejected, crash.legal_rejected) == (2, 1, 0)  # an ERROR is none
    s = metrics.summarize("r", {0: [reject, picky, crash]})
    assert (s.false_rejections, s.all_reject_false_rejections) == (3, 2) and s.all_reject_share == 2 / 3
    other = metrics.summarize("o", {0: [picky]})
    assert metrics.all_reject_share([s, other]) == (2, 4, 0.5)


def test_replay_fails_on_a_decision_against_its_label():
    ok = gates.replay("T/1", "v", POOL, _decisions(PASS, PASS, FAIL, FAIL))
    bad = gates.replay("T/1", "v", POOL, _decisions(PASS, PASS, FAIL, PASS))
    assert ok.status == "pass" and bad.status == "fail" and "always-equal" in bad.reason
    assert json.loads(bad.receipt)["mismatches"] == 1 and len(bad.receipt_sha256) == 64


def test_repeatability_fails_for_a_flaky_or_short_record():
    same = {"a": [Decision(PASS)] * 3}
    flaky = {"a": [Decision(PASS), Decision(FAIL), Decision(PASS)]}
    assert gates.repeatability("T/1", "v", same, 3, "all").status == "pass"
    assert gates.repeatability("T/1", "v", flaky, 3, "all").status == "fail"
    assert "k = 2" in gates.repeatability("T/1", "v", {"a": [Decision(PASS)] * 2}, 2, "all").reason


def _records(pool, decisions, **override):
    out = []
    for c in pool:
        fields = dict(candidate_sha256=c.sha256, verifier_version="x/1", spec_hash="s" * 64, render_hash="r" * 64,
                      ran_spec_hash="s" * 64, ran_candidate_sha256=c.sha256)
        if c.kind == "no-op":
            fields.update(override)
        out.append(gates.DecisionRecord("T/1", "v", c.candidate_id, fields.pop("candidate_sha256"), 0,
                                        decisions[c.candidate_id], **fields))
    return out


def test_provenance_fails_for_an_unbound_decision():
    d = _decisions(PASS, PASS, FAIL, FAIL)
    assert gates.provenance("T/1", "v", POOL, _records(POOL, d), True).status == "pass"
    missing = gates.provenance("T/1", "v", POOL, _records(POOL, d, candidate_sha256=None), True)
    assert missing.status == "fail" and "missing candidate_sha256" in missing.reason
    forged = gates.provenance("T/1", "v", POOL, _records(POOL, d, candidate_sha256="0" * 64), True)
    assert forged.status == "fail" and "does not match" in forged.reason
    other_run = gates.provenance("T/1", "v", POOL, _records(POOL, d, ran_spec_hash="t" * 64), True)
    assert other_run.status == "fail" and "another spec" in other_run.reason
    no_version = gates.provenance("T/1", "v", POOL, _records(POOL, d, verifier_version=None), True)
    assert no_version.status == "fail"


def test_input_label_consistency_fails_for_one_text_with_two_labels():
    clash = POOL + _pool(("near-miss", "fake@0", ILLEGAL, "# same program\n" + GOLD))
    assert gates.input_label_consistency("T/1", "v", POOL, None).status == "pass"
    result = gates.input_label_consistency("T/1", "v", clash, None)
    assert result.status == "fail" and "opposite labels" in result.reason


def test_trivial_baselines_fail_without_a_legal_variant_or_for_a_baseline():
    gold_norm = normalise(GOLD)
    d = _decisions(PASS, PASS, FAIL, FAIL)
    base = {"always-accept": _decisions(PASS, PASS, PASS, PASS), "always-reject": _decisions(FAIL, FAIL, FAIL, FAIL),
            "gold-exact-match": _decisions(PASS, FAIL, FAIL, FAIL)}
    assert gates.trivial_baselines("T/1", "v", POOL, d, base, gold_norm).status == "pass"
    no_variant = [c for c in POOL if c.kind != "surface"]
    r = gates.trivial_baselines("T/1", "v", no_variant, d, base, gold_norm)
    assert r.status == "fail" and "gold-exact-match (no legal candidate unlike the gold)" in r.reason
    no_legal = [c for c in POOL if c.label == ILLEGAL]
    r = gates.trivial_baselines("T/1", "v", no_legal, d, base, gold_norm)
    assert r.status == "fail" and "always-reject (no legal candidate)" in r.reason
    r = gates.trivial_baselines("T/1", "always-accept", POOL, base["always-accept"], base, gold_norm)
    assert r.status == "fail" and "decides exactly like always-accept" in r.reason


def test_an_erroring_verifier_fails_trivial_baselines_and_is_diagnosed():
    """ERROR is never evidence of discrimination (issue 22): a verifier that answers ERROR on everything
    used to 'differ' from every baseline."""
    gold_norm = normalise(GOLD)
    base = {"always-accept": _decisions(PASS, PASS, PASS, PASS), "always-reject": _decisions(FAIL, FAIL, FAIL, FAIL),
            "gold-exact-match": _decisions(PASS, FAIL, FAIL, FAIL)}
    crash = error("crash", "bwrap: Can't find source path")
    all_error = _decisions(crash, crash, crash, crash)
    r = gates.trivial_baselines("T/1", "v", POOL, all_error, base, gold_norm)
    assert r.status == "fail" and "mostly ERROR: 4 of 4" in r.reason
    # one valid PASS on the gold, the rest ERROR: still mostly errors
    r = gates.trivial_baselines("T/1", "v", POOL, _decisions(PASS, crash, crash, crash), base, gold_norm)
    assert r.status == "fail" and "mostly ERROR: 3 of 4" in r.reason
    # half errors: only valid decisions may differ; PASS on the two legal ones equals always-accept there,
    # and the ERRORs on the illegal ones do not count as rejecting them
    r = gates.trivial_baselines("T/1", "v", POOL, _decisions(PASS, PASS, crash, crash), base, gold_norm)
    assert r.status == "fail" and "always-accept" in r.reason and json.loads(r.receipt)["errors"] == 2
    per_task = [metrics.task_metrics("T/1", "v", 0, POOL, all_error, gold_norm)]
    assert metrics.summarize("v", {0: per_task}).diagnosis == "mostly-error"
    ok = [metrics.task_metrics("T/1", "v", 0, POOL, _decisions(PASS, PASS, crash, FAIL), gold_norm)]
    assert metrics.summarize("v", {0: ok}).diagnosis == "-"


def test_mutation_detection_ignores_crashes_and_needs_every_operator():
    original = _decisions(PASS, PASS, FAIL, FAIL)
    crash_only = _decisions(PASS, PASS, error("crash"), FAIL)
    assert gates.detect(POOL, original, crash_only) is None
    changed = _decisions(PASS, PASS, FAIL, PASS)
    assert gates.detect(POOL, original, changed) == POOL[3].candidate_id
    outcomes = [gates.MutantOutcome("drop:0", "drop-case", False, None),
                gates.MutantOutcome("perturb:0:abcd0123", "perturb-expected", True, "x"),
                gates.MutantOutcome("weaken:truthiness", "weaken-comparison", True, "x")]
    r = gates.mutation("T/1", "v", outcomes, mutation.MUTATION_OPERATORS)
    assert r.status == "fail" and "drop-case" in r.reason
    assert json.loads(r.receipt)["score"] == 2 / 3
    assert gates.mutation("T/1", "b", None, mutation.MUTATION_OPERATORS).status == "n/a"


def test_perturbed_values_differ_from_the_original():
    for value in (0, 1.5, "a", b"x", [1], (), {"a": 1}, {1}, None, True, float("nan")):
        assert mutation.perturb(value) != value or value != value


def test_perturbed_numbers_leave_any_tolerance():
    """A perturbed expected value no comparison could take for the original (HumanEval/4's 1e8 + 1.0
    was within the float dialect's tolerance, so even the gold could not tell that mutant apart)."""
    import math

    for value in (1e8, 1e17, -3e20, 10**30, -7, 0.0, float("inf")):
        new = mutation.perturb(value)
        assert type(new) in (int, float) and not math.isclose(new, value, rel_tol=1e-3, abs_tol=0.5)


def test_digest_suites_get_mutants_of_their_own_shape_and_total_comparisons():
    """A digest suite's perturbed expected value keeps the dialect's shape (its compare would raise on
    a bare perturbed tuple), and a comparison that raises is a mismatch, never a crash."""
    from acceptgate.suites import dialects, literals, render, suitespec
    from acceptgate.v4v import mutation, verifiers

    text = "x" * 300_000
    spec = suitespec.build(dialects.DIGEST, "f", [((0,), {}, ("value", 1)),
                                                 ((1,), {}, ("sha256", *dialects.equality_digest(text)))])
    harness = render.harness_for(spec)
    perturbed = [m for m in mutation.suite_mutations(harness) if m.operator == "perturb-expected"]
    values = [literals.parse(m.expected_text) for m in perturbed]
    assert values[0] == ("value", 2)
    assert values[1][0] == "sha256" and values[1][1] != harness.cases[1][2][1] and values[1][2] == harness.cases[1][2][2]
    for value, (_, _, want) in zip(values, harness.cases):
        assert harness.compare(text if want[0] == "sha256" else 1, want)  # the right answers pass
        assert not harness.compare(text if want[0] == "sha256" else 1, value)  # the mutants are detected
    assert verifiers._total(lambda got, want: want[5], 1, ()) is False


def test_held_out_metrics_and_the_memoriser_diagnosis():
    """The held-out part has its own rates; a verifier right on the published part and one answer for
    the whole held-out part is a memoriser (a baseline that is all-accept everywhere is not)."""
    from acceptgate.v4v.candidates import HELD_OUT, UNLABELLED

    held = [make("T/1", "surface", "held-out-0-rename", LEGAL, GOLD.replace("t:", "limit:").replace("< t", "< limit"),
                 part=HELD_OUT),
            make("T/1", "near-miss", "held-out-1-comparison@0", ILLEGAL, GOLD.replace(">=", ">"), part=HELD_OUT),
            make("T/1", "model-sample", "3", UNLABELLED, "def below(xs, t):\n    return all(x < t for x in xs)\n")]
    pool = POOL + held
    gold_norm = normalise(GOLD)
    memo = {c.candidate_id: Decision(PASS if c.part == HELD_OUT or c.label == LEGAL else FAIL) for c in pool}
    m = metrics.task_metrics("T/1", "memo", 0, pool, memo, gold_norm)
    assert (m.heldout_tpr, m.heldout_tnr, m.heldout_ba_norm, m.published_ba_norm) == (100.0, 0.0, 0.0, 100.0)
    assert m.memorised and (m.legal, m.illegal, m.samples, m.samples_accepted) == (3, 3, 1, 0)
    assert metrics.summarize("memo", {0: [m]}).diagnosis == "memoriser"
    honest = {c.candidate_id: Decision(PASS if c.label in (LEGAL, UNLABELLED) else FAIL) for c in pool}
    h = metrics.task_metrics("T/1", "h", 0, pool, honest, gold_norm)
    assert not h.memorised and metrics.summarize("h", {0: [h]}).diagnosis == "-"
    accept = metrics.task_metrics("T/1", "a", 0, pool, {c.candidate_id: Decision(PASS) for c in pool}, gold_norm)
    assert accept.memorised is False and metrics.summarize("a", {0: [accept]}).diagnosis == "all-accept"
