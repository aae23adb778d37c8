"""V4V task certification end to end on the first three HumanEval+ tasks, in the real sandbox: labels
from construction only, GT's disagreements as findings with witnesses, a held-out part per run, and
every other verifier measured on the certified tasks."""

from __future__ import annotations

import dataclasses
import json

import pytest

from acceptgate.sandbox.executor import execute
from acceptgate.v4v import certify as C
from acceptgate.v4v import gates, heldout, pools, taskcert
from acceptgate.v4v.candidates import HELD_OUT, ILLEGAL, LEGAL, PUBLISHED, UNLABELLED, make
from acceptgate.v4v.external import ExternalVerifier
from acceptgate.v4v.pools import PoolSettings
from acceptgate.v4v.verifiers import ERROR, FAIL, PASS, SuiteVerifier

SEED = "0123456789abcdef0123456789abcdef"
SETTINGS = C.Settings(pool=PoolSettings(samples_per_task=4), repeat_sample=1, heldout_seed=SEED)
LEGAL_KINDS, ILLEGAL_KINDS = {"gold", "surface", "restructure"}, {"no-op", "near-miss", "regression", "attack"}


@pytest.fixture(scope="module")
def suites_3(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

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


def test_tasks_are_certified_with_gt_and_the_others_are_measured(cert):
    assert [c.task_id for c in cert.certificates] == [m.task_id for m in cert.materials]
    assert all(c.certified for c in cert.certificates), [c.reason for c in cert.certificates]
    gt = _report(cert, "GT")
    assert (gt.role, gt.gates_passed, gt.gates_applicable) == ("source", 6, 6)
    accept, reject = _report(cert, "always-accept").summary, _report(cert, "always-reject").summary
    gold, v = _report(cert, "gold-exact-match").summary, _report(cert, "V").summary
    assert (accept.tnr, accept.ba_norm) == (0.0, 0.0)
    assert (reject.tpr, reject.ba_norm, reject.diagnosis) == (0.0, 0.0, "all-reject")
    assert "gold-only" in gold.diagnosis and gold.tpr < 50
    assert v.fpr_attack > 0 and v.tnr < 100  # the gap a gate on V depends on, measured
    for name in ("V", "always-accept", "always-reject", "gold-exact-match"):
        rep = _report(cert, name)
        # a measured verifier is not expected to pass replay: it is checked for repeatability and provenance
        assert (rep.role, rep.gates_applicable) == ("measured", 2), name
        assert "replay" not in {g.gate for t in cert.verdicts if t.verifier == name for g in t.gates}
    assert reject.false_rejections > 0 and reject.all_reject_share == 1.0
    assert v.samples > 0 and 0 <= v.samples_accepted <= v.samples  # model samples: measured apart
    table = C.format_table(cert.reports, cert.certificates, cert.findings)
    assert table.startswith("task certification (GT, the source verifier, against the construction labels): "
                            "3 of 3 tasks certified")
    assert "measured verifiers only (baselines and the source left out)" in table


def test_labels_come_from_construction_and_no_candidate_is_relabelled(cert):
    """Every label is its kind's (model samples: unlabelled), whatever GT decided; where GT disagrees
    there is a finding with its witness, and the candidate is either excluded with it or left as it was."""
    for pool in cert.proposed:
        kept = {c.candidate_id: c for c in cert.kept[pool.task_id]}
        for c in pool.candidates:
            want = LEGAL if c.kind in LEGAL_KINDS else ILLEGAL if c.kind in ILLEGAL_KINDS else UNLABELLED
            assert c.label == want, c.candidate_id
            if c.candidate_id in kept:
                assert kept[c.candidate_id] == c  # the same object: kind, label, text
    classes = {c.cls for pool in cert.kept.values() for c in pool}
    assert classes == {"gold", "legal-variant", "ordinary-wrong", "attack", "model-sample"}
    kept_ids = {c.candidate_id for p in cert.kept.values() for c in p}
    for m in cert.materials:
        gt = C.source_decisions(m, cert.kept[m.task_id], cert.runs)
        for c in cert.kept[m.task_id]:
            if c.labelled:  # a certified task: GT agrees with every label left
                assert gt[c.candidate_id].outcome == (PASS if c.label == LEGAL else FAIL), c.candidate_id
    for f in cert.findings:
        assert f.finding in taskcert.FINDINGS
        assert (f.action == "excluded") == (f.candidate_id not in kept_ids), f


def test_pools_are_deterministic_and_the_held_out_part_follows_its_seed(materials, cert):
    again = C.propose_pools(materials, SETTINGS)
    assert [[(c.candidate_id, c.sha256) for c in p.candidates] for p in again] == \
        [[(c.candidate_id, c.sha256) for c in p.candidates] for p in cert.proposed]
    other = C.propose_pools(materials, dataclasses.replace(SETTINGS, heldout_seed=heldout.new_seed()))
    for a, b in zip(cert.proposed, other):
        pub = lambda p: {(c.candidate_id, c.sha256) for c in p.candidates if c.part == PUBLISHED}  # noqa: E731
        held = lambda p: {c.sha256 for c in p.candidates if c.part == HELD_OUT}  # noqa: E731
        assert pub(a) == pub(b) and held(a) and held(b) and held(a).isdisjoint(held(b))
        assert held(a).isdisjoint({c.sha256 for c in a.candidates if c.part == PUBLISHED})
        assert {c.label for c in a.candidates if c.part == HELD_OUT} == {LEGAL, ILLEGAL}


def test_a_finding_settles_a_disagreement_by_differential_testing_never_by_gt(materials, local_backend):
    """An equivalent 'wrong' program is excluded (equal to the reference on N random inputs); a wrong
    program a weakened GT lets through fails the task, with the input where it differs."""
    m = materials[0]  # HumanEval/0, has_close_elements(numbers, threshold)
    equivalent = make(m.task_id, "near-miss", "unused-constant", ILLEGAL,
                      m.gold + "\n\n_NEVER_READ = 1\n")
    wrong = make(m.task_id, "near-miss", "always-false-on-long", ILLEGAL,
                 m.gold.replace("def has_close_elements", "def _honest") +
                 "\n\ndef has_close_elements(numbers, threshold):\n"
                 "    return False if len(numbers) > 6 else _honest(numbers, threshold)\n")
    from acceptgate.suites import render, suitespec
    h = m.harnesses["hidden"]
    short = [(a, k, w) for a, k, w in h.cases if len(a[0]) <= 6]  # a GT that never tries a long list
    weak_gt = suitespec.build(h.dialect, m.entry_point, short)
    weak = dataclasses.replace(m, suites={**m.suites, "hidden": weak_gt},
                               harnesses={**m.harnesses, "hidden": render.harness_for(weak_gt)})
    pool = [make(m.task_id, "gold", "canonical", LEGAL, m.gold), equivalent, wrong]
    from acceptgate.v4v import runs as R

    gt_runs = {c.candidate_id: R.collect(weak.harnesses["hidden"], c.source, c.sha256, local_backend) for c in pool}
    gt = {cid: SuiteVerifier("GT", "hidden").decide(c, weak, gt_runs[cid]) for cid, c in
          ((c.candidate_id, c) for c in pool)}
    assert gt[equivalent.candidate_id].outcome == PASS and gt[wrong.candidate_id].outcome == PASS
    kept, findings = taskcert.check_construction(weak, pool, gt, gt_runs, local_backend, n=60)
    by = {f.candidate_id: f for f in findings}
    eq, weak_f = by[equivalent.candidate_id], by[wrong.candidate_id]
    assert (eq.finding, eq.action, eq.label) == ("construction-wrong", "excluded", ILLEGAL)
    assert eq.inputs_tried > 0 and f"equal to the reference on {eq.inputs_tried} inputs" in eq.reason
    assert (weak_f.finding, weak_f.action, weak_f.label) == ("gt-weak", "task-fails", ILLEGAL)
    witness = json.loads(weak_f.witness)
    assert witness["origin"] == "random input" and witness["candidate"] == "False"
    assert [c.candidate_id for c in kept] == [pool[0].candidate_id, wrong.candidate_id]  # nothing relabelled
    assert all(c.label == d.label for c, d in zip(kept, [pool[0], wrong]))


def test_a_task_whose_gt_rejects_the_gold_fails_certification(materials, local_backend):
    m = materials[1]
    h = m.harnesses["hidden"]
    args, kwargs, want = h.cases[0]
    from acceptgate.suites import render, suitespec
    broken = suitespec.build(h.dialect, m.entry_point, [(args, kwargs, ("wrong", want))] + list(h.cases[1:20]))
    bad = dataclasses.replace(m, suites={**m.suites, "hidden": broken},
                              harnesses={**m.harnesses, "hidden": render.harness_for(broken)})
    cert = C.certify([bad], local_backend, dataclasses.replace(SETTINGS, verifiers=("GT",)))
    (c,) = cert.certificates
    assert not c.certified and "replay" in c.failed_gates
    gold = next(f for f in cert.findings if f.kind == "gold")
    assert (gold.finding, gold.action) == ("gt-wrong", "task-fails")
    assert "GT rejects a program equal to the reference" in c.reason


MEMORISER = '''import hashlib

TABLE = {table!r}


def verify(candidate):
    return TABLE.get(hashlib.sha256(candidate.encode()).hexdigest(), "PASS")
'''


def test_a_memoriser_of_the_published_pool_is_all_accept_on_the_held_out_part(cert, materials, local_backend):
    """A verifier that looks up the sha256 of the published programs (and accepts everything else) scores
    BA_norm 100 on the published part; on the held-out part, made from this run's secret seed, it
    accepts everything, and is diagnosed a memoriser."""
    table = {c.sha256: ("PASS" if c.label == LEGAL else "FAIL") for p in cert.proposed for c in p.candidates
             if c.part == PUBLISHED and c.labelled}
    memo = ExternalVerifier("ext:memoriser.py", MEMORISER.format(table=table))
    memo.backend = local_backend
    settings = dataclasses.replace(SETTINGS, heldout_seed=heldout.new_seed(), verifiers=("GT",), repeat_sample=0)
    two = materials[:2]
    proposed = C.propose_pools(two, settings)
    runs = C.execute_pools(two, proposed, local_backend, settings)
    kept, findings = C.check_construction(two, proposed, runs, local_backend, settings)
    runs.update(C.repeat_runs(two, kept, local_backend, settings))
    verifiers = C.make_verifiers(("GT",), local_backend, settings.limits) + [memo]
    _, verdicts, reports, certificates = C.evaluate(two, kept, runs, verifiers, settings, findings=findings)
    rep = next(r for r in reports if r.name == "ext:memoriser.py").summary
    assert rep.heldout_tnr == 0.0 and rep.heldout_tpr == 100.0 and rep.heldout_ba_norm == 0.0
    assert "memoriser" in rep.diagnosis
    published = [t.metrics[0] for t in verdicts if t.verifier == "ext:memoriser.py"]
    assert all(t.published_ba_norm == 100.0 for t in published)
    assert rep.ba_norm < 100.0  # the held-out part is in its figures: it no longer ranks above GT
    gt = next(r for r in reports if r.name == "GT").summary
    assert gt.heldout_ba_norm == 100.0 and "memoriser" not in gt.diagnosis


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
    assert ok.role == "source" and set(status.values()) == {"pass"} and len(status) == 6
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
    # the certificate follows GT's gates: one failed gate, and the task is not certified
    failing = [dataclasses.replace(g, status="fail") if g.gate == "replay" else g for g in ok.gates]
    c = taskcert.certificate(m, pool, failing, [], "0" * 64)
    assert not c.certified and c.failed_gates == ("replay",)


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
    (c,) = [c for c in cert.certificates if c.task_id == m.task_id]
    assert c.pool_key == m.pool_key and c.hidden_spec_hash == m.suites["hidden"].spec_hash


def test_measured_verifiers_count_only_certified_tasks(cert):
    v = next(x for x in C.make_verifiers(("V",), None, SETTINGS.limits))
    every = C.verifier_reports([v], cert.verdicts)[0].summary
    two = C.verifier_reports([v], cert.verdicts, {cert.materials[0].task_id, cert.materials[1].task_id})[0].summary
    assert (every.tasks, two.tasks) == (3, 2)
    gt = next(x for x in C.make_verifiers(("GT",), None, SETTINGS.limits))
    assert C.verifier_reports([gt], cert.verdicts, set())[0].summary.tasks == 3  # the source: every task


def test_a_task_without_a_visible_suite_is_not_counted_against_v(cert, materials):
    m = materials[0]
    bare = dataclasses.replace(m, suites={"hidden": m.suites["hidden"]}, harnesses={"hidden": m.harnesses["hidden"]})
    verifiers = C.make_verifiers(("V", "GT"), None, SETTINGS.limits)
    _, verdicts, reports, _ = C.evaluate([bare], {m.task_id: cert.kept[m.task_id]}, cert.runs, verifiers, SETTINGS)
    assert [r.name for r in reports] == ["GT"] and {v.verifier for v in verdicts} == {"GT"}


def test_pool_candidates_include_a_point_fault_and_a_delegating_variant(materials):
    (pool,) = C.propose_pools(materials[:1], SETTINGS)
    kinds = {(c.kind, c.recipe.split("@")[0]) for c in pool.candidates if c.part == PUBLISHED}
    assert ("near-miss", "point-fault") in kinds and ("restructure", "delegate") in kinds
    assert pools.fault_cases(materials[0])
