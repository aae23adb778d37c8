"""V4V certification end to end on the first three HumanEval+ tasks, in the real sandbox."""

from __future__ import annotations

import dataclasses

import pytest

from acceptgate.sandbox.executor import execute
from acceptgate.v4v import certify as C
from acceptgate.v4v import gates, pools
from acceptgate.v4v.external import ExternalVerifier
from acceptgate.v4v.pools import PoolSettings
from acceptgate.v4v.verifiers import ERROR, FAIL, PASS, SuiteVerifier

SETTINGS = C.Settings(pool=PoolSettings(samples_per_task=4), repeat_sample=1)


@pytest.fixture(scope="module")
def suites_3(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate import suitefiles
    from acceptgate.importers import humanevalplus

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=3)
    return suitefiles.write_suites(result, tmp_path_factory.mktemp("v4v") / "suites")


@pytest.fixture(scope="module")
def materials(suites_3, humanevalplus_path, codet_samples_path):
    return C.load_materials(str(suites_3), str(humanevalplus_path), str(codet_samples_path))


@pytest.fixture(scope="module")
def cert(materials, local_backend):
    return C.certify(materials, local_backend, SETTINGS)


def _report(cert, name):
    return next(r for r in cert.reports if r.name == name)


def test_the_table_tells_the_verifiers_apart(cert):
    accept, reject = _report(cert, "always-accept").summary, _report(cert, "always-reject").summary
    gold, gt, v = _report(cert, "gold-exact-match").summary, _report(cert, "GT").summary, _report(cert, "V").summary
    assert (accept.tnr, accept.ba_norm) == (0.0, 0.0)
    assert (reject.tpr, reject.ba_norm, reject.diagnosis) == (0.0, 0.0, "all-reject")
    assert "gold-only" in gold.diagnosis and gold.tpr < 50
    assert gt.ba_norm >= 90 and gt.fpr_attack == 0.0
    assert v.fpr_attack > gt.fpr_attack and v.tnr < gt.tnr  # the gap the gate depends on
    for name in ("always-accept", "always-reject", "gold-exact-match"):
        failed = _report(cert, name).failed_gates
        assert failed.get("replay") == 3 and failed.get("trivial-baselines") == 3, name
    # every false rejection of always-reject is an all-reject one; GT rejects no legal candidate
    assert reject.false_rejections > 0 and reject.all_reject_share == 1.0
    assert gt.false_rejections == 0 and gt.all_reject_share is None
    # the repeat sample leaves candidates un-re-run: their copies are marked and rank no round
    assert v.copied > 0 and "excluded" in v.basis
    table = C.format_table(cert.reports)
    assert "false rejections (valid FAIL on a legal candidate) from all-reject verifier-task pairs" in table


def test_pools_hold_every_class_checked_by_gt(cert):
    for tid, pool in cert.kept.items():
        classes = {c.cls for c in pool}
        assert classes == {"gold", "legal-variant", "ordinary-wrong", "attack"}, tid
    checks = {c.candidate_id: c for c in cert.checks}
    assert all(c.action in ("kept", "relabelled", "dropped") for c in checks.values())
    # every kept candidate's label is what GT decided
    for m in cert.materials:
        decided = C.oracle_decisions(m, cert.kept[m.task_id], cert.runs)
        for c in cert.kept[m.task_id]:
            assert decided[c.candidate_id].outcome == (PASS if c.label == pools.LEGAL else FAIL), c.candidate_id


def test_pools_are_deterministic(materials, cert):
    again = C.propose_pools(materials, SETTINGS)
    assert [[(c.candidate_id, c.sha256) for c in p.candidates] for p in again] == \
        [[(c.candidate_id, c.sha256) for c in p.candidates] for p in cert.proposed]


def test_derived_decisions_agree_with_the_executor(cert, local_backend):
    """A suite verifier decides from stored outputs; execute() on the same candidate gives the same answer."""
    m = cert.materials[0]
    expected = {"pass": PASS, "fail": FAIL, "error": FAIL, "protocol": FAIL, "timeout": ERROR, "memory": ERROR,
                "crash": ERROR}
    for suite, name in (("visible", "V"), ("hidden", "GT")):
        v = SuiteVerifier(name, suite)
        for c in cert.kept[m.task_id]:
            derived = v.decide(c, m, cert.runs[(m.task_id, c.sha256, suite, 0)])
            verdict = execute(m.harnesses[suite], c.source, local_backend).verdict
            assert derived.outcome == expected[verdict], (c.candidate_id, suite, verdict, derived)


def test_gates_fail_for_crafted_reasons(cert, materials, local_backend):
    m = materials[0]
    pool = cert.kept[m.task_id]
    gt = SuiteVerifier("GT", "hidden")
    records = C.decide_task(m, pool, gt, cert.runs, SETTINGS.k)
    base = {n: {c.candidate_id: v.decide(c, m, None) for c in pool}
            for n, v in ((n, C.get_verifier(n)) for n in C.BASELINES)}
    ok = C.judge_task(m, pool, gt, records, base, cert.runs, SETTINGS, "test")
    status = {g.gate: g.status for g in ok.gates}
    assert status["replay"] == status["provenance"] == status["repeatability"] == "pass"
    assert status["trivial-baselines"] == status["input-label-consistency"] == "pass"
    # a pool without a legal variant cannot expose gold-exact-match
    no_variant = [c for c in pool if c.cls != "legal-variant"]
    r = C.judge_task(m, no_variant, gt, [x for x in records if x.candidate_id in {c.candidate_id for c in no_variant}],
                     base, cert.runs, SETTINGS, "test")
    assert next(g for g in r.gates if g.gate == "trivial-baselines").status == "fail"
    # an unbound decision (its candidate hash lost) fails provenance
    unbound = [dataclasses.replace(x, candidate_sha256=None) if i == 0 else x for i, x in enumerate(records)]
    r = C.judge_task(m, pool, gt, unbound, base, cert.runs, SETTINGS, "test")
    assert next(g for g in r.gates if g.gate == "provenance").status == "fail"
    # a pool of the gold alone: dropping a case or weakening the comparison changes nothing
    gold_only = [c for c in pool if c.kind == "gold"]
    r = C.judge_task(m, gold_only, gt, [x for x in records if x.candidate_id == gold_only[0].candidate_id],
                     base, cert.runs, SETTINGS, "test")
    mut = next(g for g in r.gates if g.gate == "mutation")
    assert mut.status == "fail" and "drop-case" in mut.reason


FLAKY = "import os\n\ndef verify(candidate):\n    return 'PASS' if os.urandom(1)[0] % 2 else 'FAIL'\n"
CHATTY = "def verify(candidate):\n    return 'looks fine to me'\n"


def test_external_verifiers_run_in_the_sandbox(cert, materials, local_backend):
    m = materials[0]
    pool = cert.kept[m.task_id]
    flaky = ExternalVerifier("ext:flaky", FLAKY)
    flaky.backend = local_backend
    records = C.decide_task(m, pool, flaky, cert.runs, 3)
    verdict = C.judge_task(m, pool, flaky, records, {}, cert.runs, SETTINGS, "every candidate")
    rep = next(g for g in verdict.gates if g.gate == "repeatability")
    assert rep.status == "fail" and "changed decision" in rep.reason
    chatty = ExternalVerifier("ext:chatty", CHATTY)
    chatty.backend = local_backend
    d = chatty.decide(pool[0], m, None)
    assert d.outcome == ERROR and d.error_kind == "malformed"
    crashing = ExternalVerifier("ext:crash", "def verify(candidate):\n    raise RuntimeError('boom')\n")
    crashing.backend = local_backend
    assert crashing.decide(pool[0], m, None).error_kind == "crash"


def test_receipts_bind_hashes(cert):
    m = cert.materials[0]
    verdict = next(v for v in cert.verdicts if v.task_id == m.task_id and v.verifier == "V")
    prov = next(g for g in verdict.gates if g.gate == "provenance")
    receipt = gates.receipt_dict(prov)
    assert receipt["bindings"] and receipt["bindings"][0][1] == m.suites["visible"].spec_hash


def test_a_task_without_a_visible_suite_is_not_counted_against_v(cert, materials):
    m = materials[0]
    bare = dataclasses.replace(m, suites={"hidden": m.suites["hidden"]}, harnesses={"hidden": m.harnesses["hidden"]})
    verifiers = C.make_verifiers(("V", "GT"), None, SETTINGS.limits)
    _, verdicts, reports = C.evaluate([bare], {m.task_id: cert.kept[m.task_id]}, cert.runs, verifiers, SETTINGS)
    assert [r.name for r in reports] == ["GT"] and {v.verifier for v in verdicts} == {"GT"}
