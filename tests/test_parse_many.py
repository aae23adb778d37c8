"""literals.parse_many: the batch reader gives exactly what parse() and canonical() give, text by text."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptgate.suites import literals
def expected(text):
    """What parse_many must give for one text: parse's value and its canonical spelling, or parse's error."""
    try:
        value = literals.parse(text)
    except literals.LiteralError as exc:
        return exc
    return value, literals.canonical(value)


def same(got, want) -> bool:
    if isinstance(want, literals.LiteralError):
        return isinstance(got, literals.LiteralError) and str(got) == str(want)
    if isinstance(got, literals.LiteralError):
        return False
    # canonical spellings compare types and values exactly (NaN included, -0.0 apart from 0.0)
    return got[1] == want[1] and literals.canonical(got[0]) == want[1]


def check(texts):
    got = literals.parse_many(texts)
    assert len(got) == len(texts)
    for text, result in zip(texts, got):
        assert same(result, expected(text)), (text, result, expected(text))
    return got


# Texts where JSON and Python read the same characters differently, or where one reads and the other
# refuses: every one must come out as parse() says.
TRICKY = [
    "(5)", "((1, 2))", "(1,)", "()", "(,)", "( )", "(1, )", "[1,]", "[1, 2]", "[1,2]", " 5", "5 ", "1 2",
    "[1] [2]", "-0", "-0.0", "0.0", "1e400", "-1e400", "1e5", "1E5", "100000.0", "inf", "-inf", "nan", "-nan",
    "Infinity", "-Infinity", "NaN", "null", "true", "false", "None", "True", "False", "-True", "--1", "- 1",
    "'a'", "'a' 'b'", "\"a\"", "'it\\'s'", "\"it's\"", "'say \"hi\"'", "'a\\/b'", "'\\x41'", "'\\\\x41'",
    "'\\u00e9'", "'\\xe9'", "'é'", "'\\ud83d\\ude00'", "'\\ud800'", "'\\U0001f600'", "'\\N{BULLET}'",
    "'\\b'", "'\\f'", "'\\0'", "'\\a'", "'\\q'", "'a\\\nb'", "'\\t'", "'\t'", "'\\x7f'", "'\x7f'", "'\\x00'",
    "b'x'", "f'x'", "r'x'", "u'x'", "'''x'''", "set()", "{1, 2}", "{'b', 'a'}", "{}", "{'a': 1}",
    "{1: 2}", "{'a': 1, 'a': 2}", "{'\\x03': [1]}", "{'\\x03': [1], 'b': 2}", "{'\\x03': 5}",
    "[None, True, False, inf, nan]", "[Nonee]", "(1+2j)", "complex(inf, 1.0)", "2j", "0x10", "-0x10",
    "[1, [2, (3, {'k': (4,)})]]", "'", "", "[", "]", "(", "1)", "[)", "(]", "{'a': 1,}", "[1, 2][0]",
    "x", "__import__('os')", "().__class__", "lambda: 1", "[i for i in ()]", "1 + 2", "1if 1else 2",
]


def test_tricky_texts_one_batch_and_alone():
    check(TRICKY)
    for text in TRICKY:
        check([text])


def test_texts_that_merge_across_the_batch_are_read_alone():
    check(["[1", "2]"])
    check(["1],[2", "3"])
    check(["(1", "2)", "'a", "b'"])
    check(["'a\x00b'", "1"])
    check(["[1]", "\x01", "[2]"])


def test_duplicate_and_colliding_dict_keys():
    same_key = "{" + ", ".join("'a': 1" for _ in range(17)) + "}"
    check([same_key, "{" + ", ".join(f"'k{i}': {i}" for i in range(40)) + "}"])
    assert isinstance(literals.parse_many([same_key])[0], literals.LiteralError)


def test_depth_at_the_limit():
    for depth in (99, 100, 101, 150):
        check(["[" * depth + "1" + "]" * depth, "[" * depth + "]" * depth, "(" * depth + "1," + ",)" * depth])
    deep = "[" * 101 + "1" + "]" * 101
    long_flat = "[" + ", ".join("[1]" for _ in range(200)) + "]"  # many brackets, depth 2
    got = check([deep, long_flat])
    assert isinstance(got[0], literals.LiteralError) and got[1][1] == long_flat


def test_long_ints():
    for digits in (3999, 4000, 4010, 4300, 4301):
        text = "9" * digits
        got = check([text, "[" + text + "]"])
        if digits <= 4300:
            assert got[0][0] == int(text)
    # beyond the decimal limit the canonical spelling is hex
    assert literals.parse_many(["9" * 4200])[0][1].startswith("0x")


def test_non_strings_and_too_long():
    assert isinstance(literals.parse_many([5])[0], literals.LiteralError)
    big = "[" + ", ".join(["1"] * (literals.MAX_TEXT_CHARS // 3 + 1)) + "]"
    got = literals.parse_many([big, "1"])
    assert isinstance(got[0], literals.LiteralError) and got[0].construct == "text too long"
    assert got[1] == (1, "1")


def test_values_are_the_exact_types():
    (value, text), = literals.parse_many(["[(1,), {'a': (2.0, -0.0)}, 'x', None, True, -inf, nan]"])
    assert type(value) is list and type(value[0]) is tuple and type(value[1]) is dict
    assert math.copysign(1.0, value[1]["a"][1]) < 0 and math.isnan(value[6]) and value[5] == -math.inf
    assert text == "[(1,), {'a': (2.0, -0.0)}, 'x', None, True, -inf, nan]"


def test_canonical_texts_take_the_batch_path(monkeypatch):
    """A suite file's texts (canonical, without a set, complex, bytes, hex int or \\U escape) never reach parse()."""
    texts = ["(1, [2.5, -0.0], {'a': (None,)})", "{}", "'it\\'s \"q\" \\xe9 \\x00'", "[inf, -inf, nan, True]",
             "('\\ud800',)", "[" + ", ".join(map(str, range(500))) + "]"]
    want = [literals.parse(t) for t in texts]
    monkeypatch.setattr(literals, "parse", lambda text, **_: pytest.fail(f"parse() called for {text!r}"))
    got = literals.parse_many(texts)
    assert [t for _, t in got] == texts
    assert [literals.canonical(v) for v, _ in got] == [literals.canonical(v) for v in want]


def test_a_wrong_proposal_is_never_accepted(monkeypatch):
    """The check that guards the batch path: a proposal whose canonical spelling is not the text is
    refused and the text read by parse(). Sabotage the JSON path to propose wrong values."""
    texts = ["[1, 2]", "(1,)", "'a'", "{'k': 1}", "5", "[[1, 2], [3]]", "{}", "((1, 2), [3])"]
    real = literals._propose

    def wrong(batch):
        values, plain, joined = real(batch)
        return [[0] if not isinstance(v, list) else [v, 0] for v in values], plain, joined

    monkeypatch.setattr(literals, "_propose", wrong)
    got = check(texts)
    assert [r[0] for r in got] == [[1, 2], (1,), "a", {"k": 1}, 5, [[1, 2], [3]], {}, ((1, 2), [3])]


def test_the_ascii_shortcut_conditions_each_refuse():
    """ascii() spells like canonical() only under _plain_code's conditions; each one can say no."""
    assert literals._plain_code("[1, 2, (3,)]")
    assert not literals._plain_code('["it\'s"]')  # a double-quoted str: ascii() is not canonical
    assert not literals._plain_code("[" + "7" * 4000 + "]")  # decimal beyond the limit
    assert not literals._plain_code("[" * 101 + "]" * 101)  # nesting parse refuses
    assert literals._plain_code("[" * 100 + "]" * 100)
    # and without them ascii() would accept what canonical() spells otherwise:
    assert ascii("it's") != literals.canonical("it's")
    assert ascii(10 ** 4010) != literals.canonical(10 ** 4010)


_scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10 ** 4100), max_value=10 ** 4100)
            | st.floats(allow_nan=True, allow_infinity=True) | st.complex_numbers(allow_nan=True)
            | st.text(st.characters(codec=None, exclude_categories=())) | st.text("ab'\"\\\n\t\x03é")
            | st.binary(max_size=8))
_keys = st.none() | st.booleans() | st.integers() | st.text("ab'\"\\\x03é", max_size=4) | st.floats(allow_nan=False)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
                       | st.dictionaries(_keys, inner, max_size=4) | st.sets(_keys, max_size=4), max_leaves=20)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_values, min_size=1, max_size=6))
def test_canonical_and_repr_spellings_of_any_literal(values):
    """Canonical spellings (what a suite file holds) and repr() spellings (often not canonical)."""
    texts = [literals.canonical(v) for v in values]
    got = check(texts)
    assert [r[1] for r in got] == texts
    reprs = []
    for v in values:
        try:
            reprs.append(repr(v))
        except ValueError:  # an int beyond CPython's decimal limit
            pass
    check(reprs)
