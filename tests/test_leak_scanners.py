"""The leak scanners, controls and verdicts on in-memory records (no warehouse, no Prefect).

One task: ``sort_words(text)``. Its statement shows one example; V holds that example; GT adds hidden
cases, one of them with a long input and one with short values that need context.
"""

from __future__ import annotations

import re

import pytest

from acceptgate.suites import suitespec
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


# -- every JSON spelling; the harness's own template words ----------------------------------------

from acceptgate.gates.hmix import imports_line  # noqa: E402

SWEET = "crème brûlée/éclair \U0001F600"  # non-ASCII, astral (a surrogate pair in JSON) and a slash
TEMPLATE_WORD = "AssertionError"  # a word of the feedback template, and a hidden input here
PROMPT_WORDS = "standard-library modules"  # words of the generation prompt's import line
DESSERT_PROMPT = 'def dessert(name):\n    """Name a dessert.\n    >>> dessert(\'tart\')\n    \'TART\'\n    """\n'
DESSERT_VIS = suitespec.build("python-call/1", "dessert", [(("tart",), {}, "TART")])
DESSERT_GT = suitespec.build("python-call/1", "dessert", [(("tart",), {}, "TART"), ((SWEET,), {}, "SWEET"),
                                                          ((TEMPLATE_WORD,), {}, "ERR"), ((PROMPT_WORDS,), {}, "LIB")])
DESSERT = material_for("T/dessert", DESSERT_PROMPT, DESSERT_GT, DESSERT_VIS)


def dessert_record(*texts: tuple[str, str, str]) -> LeakRecord:
    """(author, purpose, text) messages between the statement and the stop decision."""
    msgs = [RecordMessage(0, 1, "task", "generation", "user", DESSERT_PROMPT),
            RecordMessage(1, 1, "harness", "generation", "user", imports_line()),
            RecordMessage(2, 1, "model", "generation", "assistant", "def dessert(name): return name.upper()")]
    for author, purpose, text in texts:
        msgs.append(RecordMessage(len(msgs), 1, author, purpose, "user", text))
    msgs.append(RecordMessage(len(msgs), 1, "harness", "stop_decision", "none", "refused: cap reached"))
    return LeakRecord("R1", "hmix", "", "T/dessert", None, True, "refused", 1, tuple(msgs))


def dessert_verdict(rec: LeakRecord):
    scanner = TaskScanner(DESSERT)
    control = run_controls([rec], lambda task_id: scanner)
    assert control.passed and control.negative_passed, control.reason  # the positive control is still caught
    return judge(rec, DESSERT, scanner, control, "aho")


def json_spellings(value) -> dict[str, str]:
    """The ways a JSON writer may spell ``value`` (and the list of it, as an argument list)."""
    import json

    plain = json.dumps(value)  # json.dumps's default: ensure_ascii, \\uXXXX, surrogate pairs
    return {"ensure_ascii": plain, "utf-8": json.dumps(value, ensure_ascii=False),
            "escaped slash": plain.replace("/", "\\/"), "upper-case hex": re.sub(r"\\u[0-9a-f]{4}",
                                                                                 lambda m: m.group().upper().replace("\\U", "\\u"), plain),
            "list": json.dumps([value]), "nested": json.dumps(json.dumps({"args": [value]})),
            "object": json.dumps({"name": value}, ensure_ascii=True).replace("/", "\\/")}


@pytest.mark.parametrize("spelling", list(json_spellings(SWEET)))
def test_every_json_spelling_of_a_hidden_value_is_found(spelling):
    written = json_spellings(SWEET)[spelling]
    assert spelling == "utf-8" or SWEET not in written  # the value itself is not in the text as written
    text = f"TypeError: the harness logged {written} args=('tart',) want='TART'"
    v = dessert_verdict(dessert_record(("harness", "revision_feedback", text)))
    assert v.verdict == "violation", (spelling, text, v.reasons)
    spans = [(h.start, h.end) for h in v.v2.violations]
    at = text.index(written)
    assert any(at <= a and b <= at + len(written) for a, b in spans), (spans, at)  # offsets into the text as written
    # the same spelling written by the model: found, and not a violation
    model = dessert_verdict(dessert_record(("model", "generation", f"print({written})")))
    found = [h for h in model.v2.hits if h.seq == 3]
    assert found and not any(h.violation for h in found) and model.verdict == "clean", model.reasons


def test_the_json_views_can_fail():
    """Without the unescaped views the default json.dumps spelling is missed: what the check above guards."""
    from acceptgate.leak import unescape

    text = f"TypeError: the harness logged {json_spellings(SWEET)['ensure_ascii']} args=('tart',) want='TART'"
    original = unescape.views
    try:
        unescape.views = lambda text: []
        v = dessert_verdict(dessert_record(("harness", "revision_feedback", text)))
    finally:
        unescape.views = original
    assert v.verdict == "clean"


def test_a_hidden_value_that_is_a_template_word_is_judged_only_as_a_value():
    """``AssertionError`` opens every feedback line and ``standard-library modules`` is in every prompt:
    those fixed words are not a leak, even though both are hidden inputs here. Written into a value slot
    they are."""
    feedback = "AssertionError: args=('tart',) got='tart' want='TART'"
    v = dessert_verdict(dessert_record(("harness", "revision_feedback", feedback)))
    excused = [h for h in v.v2.hits if h.why_not == "template-words"]
    assert {h.needle for h in excused} == {TEMPLATE_WORD, PROMPT_WORDS}, v.v2.hits
    assert all(not h.violation for h in excused) and v.verdict == "clean", v.reasons
    for leaked in (f"AssertionError: args=('{TEMPLATE_WORD}',) got='x' want='TART'",
                   f"AssertionError: args=('tart',) got='x' want='TART'\n{TEMPLATE_WORD}",
                   f"TypeError: {TEMPLATE_WORD} args=('tart',) want='TART'"):
        v = dessert_verdict(dessert_record(("harness", "revision_feedback", leaked)))
        assert v.verdict == "violation" and any(h.needle in (TEMPLATE_WORD, repr(TEMPLATE_WORD))
                                                for h in v.v2.violations), (leaked, v.v2.hits)
    for purpose, leaked in (("stop_decision", f"refused: generator failed: {PROMPT_WORDS}"),
                            ("generation", imports_line() + f" Also: {PROMPT_WORDS}.")):
        v = dessert_verdict(dessert_record(("harness", purpose, leaked)))
        assert v.verdict == "violation" and any(h.needle == PROMPT_WORDS and h.seq == 3 for h in v.v2.violations), (
            leaked, v.v2.hits)
