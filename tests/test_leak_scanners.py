"""The leak scanners, controls and verdicts on in-memory records (no warehouse, no Prefect).

One task: ``sort_words(text)``. Its statement shows one example; V holds that example; GT adds hidden
cases, one of them with a long input and one with short values that need context.
"""

from __future__ import annotations

import pytest

from acceptgate import suitespec
from acceptgate.leak.controls import run_controls
from acceptgate.leak.material import material_for
from acceptgate.leak.records import LeakRecord, RecordMessage
from acceptgate.leak.scanners import TaskScanner
from acceptgate.leak.verdicts import judge

PROMPT = ('def sort_words(text, n):\n    """Sort the first n words of text.\n'
          "    >>> sort_words('pear apple fig', 3)\n    'apple fig pear'\n    \"\"\"\n")
PUBLIC = (("pear apple fig", 3), {}, "apple fig pear")
LONG = ("zebra quokka narwhal axolotl wombat pangolin tapir okapi dugong", 9)
HIDDEN_ONLY = [(LONG, {}, "axolotl dugong narwhal okapi pangolin quokka tapir wombat zebra"),
               (("", 5), {}, ""),  # short values: evidence only together
               (("kiwi lime mango", 2), {}, "kiwi lime")]
VIS = suitespec.build("python-call/1", "sort_words", [PUBLIC])
GT = suitespec.build("python-call/1", "sort_words", [PUBLIC] + HIDDEN_ONLY)
MATERIAL = material_for("T/sort", PROMPT, GT, VIS)


def record(*harness_texts: str, model: str = "def sort_words(text, n): ...", task: str = PROMPT,
           finished: bool = True, stop: bool = True, author_lost: bool = False) -> LeakRecord:
    msgs = [RecordMessage(0, 1, "task", "generation", "user", task),
            RecordMessage(1, 1, None if author_lost else "harness", "generation", "user", "Complete the function."),
            RecordMessage(2, 1, "model", "generation", "assistant", model)]
    for text in harness_texts:
        msgs.append(RecordMessage(len(msgs), 1, "harness", "revision_feedback", "user", text))
    if stop:
        msgs.append(RecordMessage(len(msgs), 1, "harness", "stop_decision", "none", "refused: cap reached"))
    return LeakRecord("R1", "hmix", "", "T/sort", None, finished, "refused", 1, tuple(msgs))


def verdict_of(rec: LeakRecord, matcher: str = "aho"):
    scanner = TaskScanner(MATERIAL, matcher)
    control = run_controls([rec], lambda task_id: scanner)
    return judge(rec, MATERIAL, scanner, control, matcher)


def test_v1_flags_a_public_statement_literal_that_v2_clears():
    # The harness quotes the statement's own example (also a V case): v1's keyword match fires, v2 knows
    # it is public.
    rec = record("AssertionError: args=('pear apple fig', 3) got='fig' want='apple fig pear'")
    v = verdict_of(rec)
    keyword = v.v1.rules["keyword"]
    assert 3 in keyword.messages and "'apple fig pear'" in keyword.needles and v.v1.count == keyword.hits
    assert v.verdict == "clean" and not v.v2.violations, v.reasons


def test_v1_flags_a_model_written_literal_that_v2_clears():
    # The model itself wrote a hidden-only value (e.g. in its own test): found by both, a violation for neither
    # v2 (not harness text) -- v1 calls it a leak.
    rec = record(model="assert sort_words('kiwi lime mango', 2) == 'kiwi lime'")
    v = verdict_of(rec)
    assert 2 in v.v1.rules["keyword"].messages
    model_hits = [h for h in v.v2.hits if h.seq == 2]
    assert model_hits and all(not h.violation and h.why_not == "model-written" for h in model_hits)
    assert v.verdict == "clean", v.reasons


def test_v2_flags_hidden_material_in_harness_text_with_offsets():
    text = "AssertionError: args=('kiwi lime mango', 2) got='kiwi' want='kiwi lime'"
    v = verdict_of(record(text))
    assert v.verdict == "violation"
    hit = next(h for h in v.v2.violations if h.needle == "('kiwi lime mango', 2)")
    assert text[hit.start:hit.end] == hit.needle and hit.start == text.index("(") and hit.rule == "hidden-literal"


def test_v2_finds_a_truncated_piece_of_a_long_value_and_counts_offsets_in_characters():
    # Feedback cuts values at 120 characters; an accented prefix shifts byte offsets but not character ones.
    long_value = repr(HIDDEN_ONLY[0][2])[:40] + "… (30 more characters)"
    text = f"Ärger: got=None want={long_value}"
    v = verdict_of(record(text))
    pieces = [h for h in v.v2.violations if h.rule == "piece"]
    assert pieces and all(text[h.start:h.end] == h.needle for h in pieces)


def test_short_literals_need_context():
    # ('', 5) and '' are short: alone they prove nothing, the input/expected pair together does.
    alone = verdict_of(record("attempt 1: visible suite fail (0/5 cases); want=''", "args=('', 5)"))
    assert alone.verdict == "clean" and not alone.v2.hits
    pair = verdict_of(record("AssertionError: args=('', 5) got='a' want=''"))
    assert pair.verdict == "violation" and {h.rule for h in pair.v2.violations} == {"pair"}


def test_the_got_value_is_the_candidates_output_not_a_leak():
    # The candidate printed a hidden-only value on a visible input: the harness quotes it after got=.
    text = "AssertionError: args=('pear apple fig', 3) got='kiwi lime' want='apple fig pear'"
    hidden = "sort_words('kiwi lime mango', 2)"
    v = verdict_of(record(text, model=f"print({hidden})"))
    assert v.verdict == "clean", v.reasons


def test_disabled_matcher_fails_the_control_and_makes_records_unverifiable():
    rec = record("AssertionError: args=('pear apple fig', 3) got='fig' want='apple fig pear'")
    v = verdict_of(rec, matcher="disabled")
    assert v.verdict == "unverifiable"
    assert any(r.startswith("positive control failed: planted") for r in v.reasons), v.reasons
    assert "disabled matcher reported no violation" in " ".join(v.reasons)


def test_negative_control_plants_in_model_and_task_text():
    scanner = TaskScanner(MATERIAL)
    control = run_controls([record()], lambda task_id: scanner)
    assert control.passed and control.negative_passed and control.valid
    assert control.planted == "sort_words('zebra quokka narwhal axolotl wombat pangolin tapir okapi dugong', 9)"


@pytest.mark.parametrize("broken, reason", [
    (dict(stop=False), "record truncated"),
    (dict(finished=False), "record not closed"),
    (dict(author_lost=True), "author missing for message seq 1"),
])
def test_incomplete_records_are_unverifiable(broken, reason):
    v = verdict_of(record(**broken))
    assert v.verdict == "unverifiable" and any(r.startswith(reason) for r in v.reasons), v.reasons


def test_a_leak_in_an_unfinished_record_is_still_a_violation():
    v = verdict_of(record("want='axolotl dugong narwhal okapi pangolin quokka tapir wombat zebra'", finished=False))
    assert v.verdict == "violation" and any(r.startswith("record not closed") for r in v.reasons)


def test_material_public_marks():
    public = {n.text for n in MATERIAL.needles if n.public}
    assert "sort_words('pear apple fig', 3)" in public and "'apple fig pear'" in public
    hidden = {n.text for n in MATERIAL.hidden()}
    assert "sort_words('kiwi lime mango', 2)" in hidden
