"""SuiteSpec: literal-only grammar, smuggling attempts rejected with case/field/construct, canonical hash."""

from __future__ import annotations

import json

import pytest

from acceptgate.suites import literals, suitespec
from acceptgate.suites.suitespec import SpecError


def spec_doc(*cases, dialect="python-call/1", entry_point="f", **extra):
    doc = {"dialect": dialect, "entry_point": entry_point, "cases": list(cases)}
    doc.update(extra)
    return doc


def case(args="[1]", expected="1", **kw):
    return {"args": args, "expected": expected, **kw}


SMUGGLED = [
    ("__import__('os').system('id')", "call"),
    ("open('/etc/passwd').read()", "call"),
    ("os", "name"),
    ("x.y", "attribute access"),
    ("(1).real", "attribute access"),
    ("lambda: 0", "lambda"),
    ("[x for x in range(3)]", "comprehension"),
    ("{x: 1 for x in 'ab'}", "comprehension"),
    ("(x for x in ())", "generator expression"),
    ("f'{1+1}'", "f-string"),
    ("1 + 2", "operator"),
    ("2 ** 100000", "operator"),
    ("not 1", "UnaryOp"),
    ("~1", "UnaryOp"),
    ("-'a'", "unary minus on a non-number"),
    ("1j + 1", "operator"),
    ("-(1+2j)", "unary minus on a non-number"),
    ("complex(1, 'a')", "complex() of a non-number"),
    ("complex(1)", "call"),
    ("...", "constant of type ellipsis"),
    ("[1][0]", "subscript"),
    ("1 if True else 2", "conditional expression"),
    ("(y := 1)", "assignment expression"),
    ("[*[1]]", "starred expression"),
    ("{**{}}", "dict unpacking"),
    ("1 < 2", "comparison"),
    ("True and False", "operator"),
    ("frozenset()", "call"),
    ("set([1])", "call"),
    ("getattr", "name"),
    ("{[1, 2]}", "unhashable"),
    ("{[1]: 2}", "unhashable"),
    ("1; import os", "syntax error"),
    ("import os", "syntax error"),
]


@pytest.mark.parametrize("text,construct", SMUGGLED)
@pytest.mark.parametrize("field", ["args", "kwargs", "expected"])
def test_smuggled_code_is_rejected_naming_case_field_and_construct(text, construct, field):
    good = case()
    bad = dict(case(), **{field: text if field != "args" else f"[{text}]"})
    if field == "kwargs":
        bad["kwargs"] = "{'k': " + text + "}"
    with pytest.raises(SpecError) as err:
        suitespec.from_dict(spec_doc(good, bad), source="suite.json")
    e = err.value
    assert e.case == 1
    assert e.field == field
    assert construct in str(e), str(e)
    assert "suite.json" in str(e) and "case 1" in str(e)


@pytest.mark.parametrize("item", ["%d", "%d: 0"], ids=["set", "dict"])
def test_hash_colliding_elements_are_refused_before_building(item):
    """40,000 ints that all hash to 0 in a set or dict literal: building it would compare each with
    every earlier one (tens of seconds); the spec is refused at once, naming the construct."""
    import time

    text = "{" + ", ".join(item % (k * (2 ** 61 - 1)) for k in range(1, 40_001)) + "}"
    started = time.process_time()
    with pytest.raises(SpecError) as err:
        suitespec.from_dict(spec_doc(dict(case(), expected=text)), source="suite.json")
    assert "colliding hashes" in str(err.value) and err.value.field == "expected"
    assert time.process_time() - started < 5.0  # CPU time: the machine's load does not count
    few = "{" + ", ".join(item % k for k in (1, 2, -1, -2)) + "}"  # -1 and -2 share a hash: fine
    assert len(suitespec.from_dict(spec_doc(dict(case(), expected=few))).cases[0].expected) == 4


def test_huge_nesting_is_rejected_without_crashing():
    for depth in (150, 1000, 100_000):
        text = "[" * depth + "]" * depth
        with pytest.raises(SpecError) as err:
            suitespec.from_dict(spec_doc(case(args=f"[{text}]")))
        assert err.value.case == 0 and err.value.field == "args"
        assert "nest" in str(err.value)


def test_deep_json_is_rejected():
    raw = '{"dialect": "python-call/1", "entry_point": "f", "cases": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(SpecError):
        suitespec.loads(raw.encode())


def test_non_utf8_bytes_are_rejected():
    raw = json.dumps(spec_doc(case())).encode().replace(b'"1"', b'"\xff"')
    with pytest.raises(SpecError) as err:
        suitespec.loads(raw, source="bad.json")
    assert "UTF-8" in str(err.value) and "bad.json" in str(err.value)


def test_huge_integer_is_rejected():
    with pytest.raises(SpecError) as err:
        suitespec.from_dict(spec_doc(case(expected="9" * 5000)))
    assert err.value.field == "expected"


@pytest.mark.parametrize("doc,field", [
    (spec_doc(case(), extra_key=1), "extra_key"),
    (spec_doc(dict(case(), code="print(1)")), "code"),
    (spec_doc(case(), entry_point="os.system"), "entry_point"),
    (spec_doc(case(), entry_point="class"), "entry_point"),
    (spec_doc(case(), dialect="python-exec/1"), "dialect"),
    (spec_doc(), "cases"),
    (spec_doc(case(args="1")), "args"),
    (spec_doc(case(kwargs="{1: 2}")), "kwargs"),
    (spec_doc(case(kwargs="[]")), "kwargs"),
    (spec_doc({"args": ["not", "a", "string"], "expected": "1"}), "args"),
    (spec_doc({"args": "[1]"}), "expected"),
])
def test_structural_errors_name_the_field(doc, field):
    with pytest.raises(SpecError) as err:
        suitespec.from_dict(doc, source="s.json")
    assert field in str(err.value)


def written(*cases, **doc):
    """A document as ``to_json`` spells it: every case's three keys, in order (the reader's quick path)."""
    return spec_doc(*({"args": a, "kwargs": k, "expected": e} for a, k, e in cases), **doc)


@pytest.mark.parametrize("doc,field", [
    (written(("(1,)", "{}", "1"), extra_key=1), "extra_key"),
    (written(("(1,)", "{}", "1"), entry_point="os.system"), "entry_point"),
    (written(("(1,)", "{}", "1"), entry_point="f\u00e9"), "entry_point"),
    (written(("(1,)", "{}", "1"), entry_point=1), "entry_point"),
    (written(("(1,)", "{}", "1"), dialect="python-exec/1"), "dialect"),
    (written(("(1,)", "{}", "1"), dialect=["python-call/1"]), "dialect"),
    (written(), "cases"),
    (dict(written(("(1,)", "{}", "1")), cases={"args": "(1,)", "kwargs": "{}", "expected": "1"}), "cases"),
    (written(("(1,)", "{}", "1"), ("(2,)", 1, "2")), "kwargs"),
    (written(("(1,)", "{}", "1"), ("(2,)", "{}", None)), "expected"),
    (spec_doc({"args": "(1,)", "kwargs": "{}", "expected": "1"}, ["(1,)", "{}", "1"]), "case 1"),
    (spec_doc({"args": "(1,)", "kwargs": "{}", "expected": "1", "code": "print(1)"}), "code"),
    (spec_doc({"args": "(1,)", "kwargs": "{}", "expected": "1"}, {"args": "(1,)", "expected": "1",
                                                                   "kwargs": "{1: 2}"}), "kwargs"),
])
def test_written_documents_are_refused_as_the_model_refuses_them(doc, field):
    with pytest.raises(SpecError) as err:
        suitespec.from_dict(doc, source="s.json")
    assert field in str(err.value)


def test_written_documents_read_as_any_other_spelling():
    doc = written(("(1, [2])", "{'k': 1}", "{1, 2}"), ("(3,)", "{}", "(4, 'x')"), entry_point="g")
    reordered = dict(reversed(list(doc.items())), cases=[dict(reversed(list(c.items()))) for c in doc["cases"]])
    a, b = suitespec.from_dict(doc), suitespec.from_dict(reordered)
    assert a == b and a.spec_hash == b.spec_hash and a.cases[0].kwargs == {"k": 1}


def test_literals_round_trip_and_keep_types():
    text = "[None, True, -3, 2.5, -0.0, inf, -inf, nan, 'a\\u00e9\\U0001f600\\n', b'\\x00\\xff', (1,), [], {2, 1}, set(), {5: 'x', '5': 'y'}]"
    value = literals.parse(text)
    assert type(value[2]) is int and type(value[3]) is float
    assert value[-1] == {5: "x", "5": "y"}  # int and str keys stay distinct (HumanEval/95)
    again = literals.parse(literals.canonical(value))
    assert literals.canonical(again) == literals.canonical(value)
    assert literals.canonical(value[8]) == "'a\\xe9\\U0001f600\\n'"


def test_canonical_form_ignores_spelling_and_set_order():
    a = suitespec.from_dict(spec_doc(case(args="[{3, 1, 2}, 'x']", expected='{"b", "a"}')))
    b = suitespec.from_dict(spec_doc(case(args='( {2,3,1} , "x" )', expected="{'a','b'}")))
    assert a.spec_hash == b.spec_hash
    assert a.cases[0].args_text == "({1, 2, 3}, 'x')"


def test_dict_order_is_data_and_changes_the_hash():
    a = suitespec.from_dict(spec_doc(case(args="[{'a': 1, 'b': 2}]")))
    b = suitespec.from_dict(spec_doc(case(args="[{'b': 2, 'a': 1}]")))
    assert a.spec_hash != b.spec_hash


def test_non_literal_values_cannot_be_spelled():
    class Sneaky(int):
        def __eq__(self, other):
            return True

    class SneakyComplex(complex):
        pass

    from collections import Counter

    for value in (Sneaky(1), object(), [1, Sneaky(2)], {"k": lambda: 0}, frozenset(), SneakyComplex(1j),
                  Counter("ab")):
        with pytest.raises(literals.LiteralError):
            literals.canonical(value)
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(literals.LiteralError):
        literals.canonical(cyclic)


def test_to_json_round_trips_to_the_same_hash(tmp_path):
    spec = suitespec.build("python-call/1", "f", [((1, "a"), {"k": {1, 2}}, [1.5, None])])
    path = tmp_path / "s.json"
    path.write_text(spec.to_json())
    assert suitespec.load(path).spec_hash == spec.spec_hash


def test_to_json_spells_what_the_json_module_would():
    """to_json writes the bytes of json.dumps(indent=1) without its pure-Python encoder."""
    specs = [
        suitespec.build("python-call/1", "f", [((1, "é\u2028\"\\\n\x00"), {"k": [1.5, None]}, {"a": b"\xff"})] * 3),
        suitespec.build("python-call+atol=1e-06/1", "g", [((), {}, float("nan"))]),
    ]
    for spec in specs:
        assert spec.to_json() == json.dumps(spec.as_doc(), indent=1, ensure_ascii=False) + "\n"
        assert suitespec.from_dict(json.loads(spec.to_json())).spec_hash == spec.spec_hash


def test_missing_file_is_invalid_input(tmp_path):
    with pytest.raises(SpecError) as err:
        suitespec.load(tmp_path / "nope.json")
    assert "nope.json" in str(err.value)


def _escape_by_loop(s: str) -> str:
    """The canonical string spelling, code point by code point (the rule literals.py implements)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in "\\'":
            out.append("\\" + ch)
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif o <= 0xFF:
            out.append(f"\\x{o:02x}")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return "'" + "".join(out) + "'"


def test_string_spelling_is_by_code_point_and_round_trips():
    import random

    rng = random.Random(7)
    alphabet = [chr(o) for o in range(0x80)] + ["é", "\x85", "\xa0", "\u2028", "\ud800", "\uffff", "\U0001f600",
                                                "\U0010ffff", "ß", "\u0301"]
    texts = ["", "plain", "it's", "a\\b", "tab\there"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))) for _ in range(3000)]
    for text in texts:
        spelled = literals.canonical(text)
        assert spelled == _escape_by_loop(text), repr(text)
        assert spelled.isascii()
        if "\ud800" not in text:  # a lone surrogate has no UTF-8 form, but spells and parses back
            assert literals.parse(spelled) == text


def test_built_cases_equal_the_parsed_ones():
    """build() spells each value once; reading its file back gives the same values, texts and hash."""
    values = [0, -1, 2 ** 62, 1.5, -0.0, float("inf"), float("nan"), "é\u2028'\\", b"\x00\xff'", None, True,
              (1,), (), [1, [2, (3,)]], {"b": 1, "a": {2, 3}}, set(), frozenset and {(1, "x"), (2, "y")},
              complex(1, -2), complex(-0.0, 1.0)]
    cases = [((v,), {"k": v}, v) for v in values]
    built = suitespec.build("python-call/1", "f", cases)
    read = suitespec.from_dict(json.loads(built.to_json()))
    assert read.spec_hash == built.spec_hash
    for a, b in zip(built.cases, read.cases):
        assert (a.args_text, a.kwargs_text, a.expected_text) == (b.args_text, b.kwargs_text, b.expected_text)
        assert literals.canonical((a.args, a.kwargs, a.expected)) == literals.canonical((b.args, b.kwargs, b.expected))
    with pytest.raises(SpecError, match="identifier keys"):
        suitespec.build("python-call/1", "f", [((1,), {"not id": 1}, 1)])
    with pytest.raises(SpecError, match="at least one case"):
        suitespec.build("python-call/1", "f", [])
    with pytest.raises(literals.LiteralError):
        suitespec.build("python-call/1", "f", [((object(),), {}, 1)])
