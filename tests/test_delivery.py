"""Delivery scoring on GT, rates with named denominators, paired table, the seed's arithmetic."""

from __future__ import annotations

import pytest

from acceptgate.suites import suitespec
from acceptgate.gates.delivery import (
    ArmSummary, DeliveryRow, format_summary, paired_table, relative_reduction, score_deliveries,
    seed_self_check, summarize,
)
from acceptgate.gates import run_gate
from acceptgate.sources.base import PublicTask
from acceptgate.sources.replay import ReplaySource
from acceptgate.datasets.samples import Sample, SampleFile

PROMPT = 'def absval(x):\n    """>>> absval(-2)\n    2\n    """\n'
VIS = suitespec.build("python-call/1", "absval", [((-2,), {}, 2), ((3,), {}, 3)])
GT = suitespec.build("python-call/1", "absval", [((-2,), {}, 2), ((3,), {}, 3), ((0,), {}, 0), ((-7,), {}, 7)])


def test_seed_self_check_reproduces_r532():
    checks = seed_self_check()
    assert all(c.ok for c in checks), [(c.claim, c.computed, c.expected) for c in checks]
    assert [c.computed for c in checks] == ["14.4%", "14.8%", "25.2%", "43%", "False"]


def test_rates_name_their_denominators():
    s = ArmSummary("conform", tasks=836, delivered=811, refused=25, false_deliveries=120)
    row = s.as_row()
    assert row["false_rate_over_all_tasks"] == pytest.approx(120 / 836)
    assert row["false_rate_over_delivered"] == pytest.approx(120 / 811)
    off = ArmSummary("off", 836, 836, 0, 211)
    assert relative_reduction(s.false_rate_over_all_tasks, off.false_rate_over_all_tasks) == pytest.approx(1 - 120 / 211)
    text = format_summary({"conform": s, "off": off})
    assert "false / all tasks" in text and "false / delivered" in text
    assert "14.4%" in text and "14.8%" in text and "25.2%" in text
    assert "conform vs off: 43.1%" in text
    with pytest.raises(ZeroDivisionError):
        relative_reduction(0.1, 0.0)


def _outcomes(local_backend):
    samples = {  # task -> bodies
        "T/right": ["    return abs(x)\n"],
        "T/narrow": ["    return -x if x < 0 else x if x > 0 else 1\n", "    return abs(x)\n"],
        "T/fixed": ["    return x\n", "    return abs(x)\n"],
        "T/never": ["    return 0\n"] * 5,
    }
    rows = [Sample(t, 0, i, b, "completion") for t, bodies in samples.items() for i, b in enumerate(bodies)]
    src = ReplaySource(SampleFile("m", rows, []))
    tasks = [PublicTask(t, "absval", PROMPT, VIS) for t in samples]
    return [run_gate(arm, t, src, local_backend) for arm in ("conform", "off") for t in tasks]


def test_score_deliveries_and_paired_table(local_backend):
    outcomes = _outcomes(local_backend)
    hidden = {o.task_id: GT for o in outcomes}
    rows = score_deliveries(outcomes, hidden, local_backend)
    got = {(r.arm, r.task_id): (r.delivered, r.attempts_used, r.gt_verdict, r.false_delivery) for r in rows}
    assert got == {
        ("conform", "T/right"): (True, 1, "pass", False),
        ("conform", "T/narrow"): (True, 1, "fail", True),  # passes V, fails GT at x == 0
        ("conform", "T/fixed"): (True, 2, "pass", False),
        ("conform", "T/never"): (False, 5, None, False),
        ("off", "T/right"): (True, 1, "pass", False),
        ("off", "T/narrow"): (True, 1, "fail", True),
        ("off", "T/fixed"): (True, 1, "fail", True),
        ("off", "T/never"): (True, 1, "fail", True),
    }
    narrow = next(r for r in rows if r.task_id == "T/narrow")
    assert narrow.gt_first_failure == 2 and narrow.gt_cases_total == 4
    summary = summarize(rows)
    assert summary["conform"].as_row() | {} == {
        "arm": "conform", "tasks": 4, "delivered": 3, "refused": 1, "false_deliveries": 1,
        "false_rate_over_all_tasks": 0.25, "false_rate_over_delivered": 1 / 3}
    assert (summary["off"].delivered, summary["off"].false_deliveries) == (4, 3)
    table = paired_table(rows, ("conform", "off"))
    assert [r["task_id"] for r in table] == ["T/fixed", "T/narrow", "T/never", "T/right"]
    fixed = table[0]
    assert (fixed["conform_false_delivery"], fixed["off_false_delivery"], fixed["same_program"]) == (False, True, False)
    assert table[3]["same_program"] is True
    with pytest.raises(ValueError, match="unpaired"):
        paired_table(rows[:-1], ("conform", "off"))
    with pytest.raises(KeyError, match="no hidden suite"):
        score_deliveries(outcomes, {}, local_backend)


def test_delivery_row_is_flat():
    row = DeliveryRow("T", "off", False, True, 0, None, None, "h", None, None, 3, False).as_row()
    assert set(row) >= {"task_id", "arm", "delivered", "refused", "attempts_used", "gt_verdict", "false_delivery"}


def test_score_deliveries_under_the_evalplus_profile(local_backend):
    """The evalplus profile gives each GT input max(1 s, 4 x the reference's time): a delivered program
    that needs 1.1 s of CPU per input passes the default profile's 10 s per execution and times out here."""
    from acceptgate.scoring.profiles import MissingTiming

    body = "    import time\n    t = time.process_time()\n    while time.process_time() - t < 1.1: pass\n    return abs(x)\n"
    src = ReplaySource(SampleFile("m", [Sample("T/slow", 0, 0, body, "completion")], []))
    outcome = run_gate("off", PublicTask("T/slow", "absval", PROMPT, VIS), src, local_backend)
    hidden = {"T/slow": VIS}
    default = score_deliveries([outcome], hidden, local_backend)
    evalplus = score_deliveries([outcome], hidden, local_backend, profile="evalplus",
                                reference_seconds={"T/slow": [0.001, 0.001]})
    assert (default[0].gt_verdict, default[0].gt_profile, default[0].false_delivery) == ("pass", "default", False)
    assert (evalplus[0].gt_verdict, evalplus[0].gt_profile, evalplus[0].false_delivery) == ("timeout", "evalplus", True)
    with pytest.raises(MissingTiming):
        score_deliveries([outcome], hidden, local_backend, profile="evalplus")
    with pytest.raises(ValueError, match="unknown profile"):
        score_deliveries([outcome], hidden, local_backend, profile="fast")
