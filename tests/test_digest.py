"""Huge expected values: ints in hex, the python-call+digest/1 dialect, its bounds, and their import."""

from __future__ import annotations

import json
import hashlib
import math
import random
import time

import pytest

from acceptgate.suites import dialects, literals, render, suitespec
from acceptgate.datasets.importers import common, humanevalplus
from acceptgate.datasets.importers.report import coverage_line, summary
from acceptgate.sandbox import answers
from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import execute, run_calls
from acceptgate.datasets.task import HIDDEN

HUGE = 7 ** 400_000  # 337,000 decimal digits: beyond CPython's decimal limit


# ---------------------------------------------------------------------------------------------
# ints beyond the decimal limit


def test_huge_ints_are_spelled_in_hex_and_read_back():
    for value in (HUGE, -HUGE, 1 << literals.DECIMAL_INT_BITS + 1):
        text = literals.canonical(value)
        assert text.startswith(("0x", "-0x")) and text == hex(value)
        assert literals.parse(text) == value and answers.parse(text) == value
        assert literals.canonical(literals.parse(f"[{text}, ({text},)]")) == f"[{text}, ({text},)]"


def test_ints_within_the_limit_keep_their_decimal_spelling():
    edge = (1 << literals.DECIMAL_INT_BITS) - 1
    for value in (0, -5, 10 ** 300, edge):
        assert literals.canonical(value) == str(value)
    assert literals.parse("0x10") == 16 and literals.canonical(literals.parse("0x10")) == "16"


def test_hex_conversion_is_linear():
    big = 3 ** 4_000_000  # 6.3 million bits
    started = time.monotonic()
    assert answers.parse(literals.canonical(big)) == big
    assert time.monotonic() - started < 5


def test_decimal_spellings_stay_bounded():
    with pytest.raises(literals.LiteralError):
        literals.parse("1" * 5000)  # CPython refuses to convert it: say so, do not hang
    assert answers.parse("9" * 4300) == int("9" * 4300)  # the longest decimal repr writes
    with pytest.raises(literals.LiteralError, match="too large"):
        answers.parse("9" * 4301)


def test_the_runner_spells_huge_ints_in_hex_inside_containers(local_backend):
    source = "def f(n):\n    return [{1: (10 ** n,)}, -10 ** n, {10 ** n}, 'x']\n"
    got, detail = run_calls("f", [((5,), {}), ((300_000,), {})], source, local_backend)
    assert detail == "" and [o.status for o in got] == ["ok", "ok"]
    big = 10 ** 300_000
    assert got[0].value == [{1: (10 ** 5,)}, -10 ** 5, {10 ** 5}, "x"]
    assert got[1].value == [{1: (big,)}, -big, {big}, "x"]


# ---------------------------------------------------------------------------------------------
# flat number lists: the fast path reads what the token loop reads


def test_flat_number_lists_read_as_the_general_parser_reads_them():
    rng = random.Random(9)
    pool = [lambda: rng.randint(-10 ** 12, 10 ** 12), lambda: rng.random() * 10 ** rng.randint(-5, 20),
            lambda: float(rng.randint(-99, 99)), lambda: math.inf, lambda: -math.inf, lambda: 1e300,
            lambda: 5e-324, lambda: -0.0, lambda: 10 ** 4000]
    for _ in range(8):
        values = [rng.choice(pool)() for _ in range(rng.randint(1, 3000))]
        text = repr(values)
        flat = answers.parse(text)
        general = answers.parse(" " + text)  # a leading space: not the fast path
        assert repr(flat) == repr(general) == text
    nan = answers.parse(repr([math.nan] * 2000))
    assert len(nan) == 2000 and all(math.isnan(x) for x in nan)
    with pytest.raises(literals.LiteralError):
        answers.parse("[" + "1, " * 3000 + "x]")
    for text in ("[" + "1, " * 3000 + "]", "[" + "1," * 3000 + "1]", "[" + "1, " * 3000 + " -0x1]"):
        assert answers.parse(text) == answers.parse(" " + text)  # not the fast path's: the same value


def test_short_answers_read_as_the_token_loop_reads_them():
    # the fast paths for one name, int or plain string, and for short flat lists of numbers
    texts = ["True", "False", "None", "0", "-0", "007", "-12", "9" * 60, "''", "'ab c'", '"a\'b"', "'a\\nb'",
             "'\\'", "'\u00e9'", "'a'b'", "-", "--1", "1_0", "\u0661", " 1", "1 ", "[1]", "[1, 2.5, -0.0]",
             "[1e5, 1., -inf, nan]", "[]", "[1,2]", "[1, ]", "[01, 2]", "[True]", "tru", "'\\x41'"]
    rng = random.Random(4)
    texts += [repr(rng.choice([rng.randint(-10 ** 9, 10 ** 9), "".join(rng.choice("ab'\"\\\n\t c") for _ in
              range(rng.randint(0, 12))), [rng.randint(-9, 9) for _ in range(rng.randint(1, 6))]]))
              for _ in range(2000)]
    for text in texts:
        assert repr(_reading(answers.parse, text)) == repr(_reading(answers.parse_tokens, text)), text


def _reading(parse, text):
    try:
        return "ok", parse(text)
    except literals.LiteralError:
        return ("error",)


# ---------------------------------------------------------------------------------------------
# the equality form


def test_the_equality_digest_follows_python_equality():
    same = [
        ([1, 2.0, True], [1.0, 2, 1]),
        ({1: "a", 2: "b"}, {2: "b", 1.0: "a"}),
        ({3, 1, 2}, {2.0, 3, 1}),
        ([math.nan, -0.0], [float("nan"), 0]),
        ((HUGE, 1e300), (HUGE, int(1e300))),
    ]
    for a, b in same:
        assert dialects.equality_digest(a) == dialects.equality_digest(b), (a, b)
    different = [([1, 2], (1, 2)), ("ab", b"ab"), ([1], [1.5]), ("a", "a\x00"), ([[1], 2], [[1, 2]]),
                 ({1: 2}, {2: 1}), ([None], [[]]), (HUGE, HUGE + 1), (0.1, 0.1 + 1e-17 * 2)]
    for a, b in different:
        if a != b:
            assert dialects.equality_digest(a) != dialects.equality_digest(b), (a, b)


def test_the_list_fast_paths_give_the_generic_form():
    ns = dialects._digest_namespace()
    rng = random.Random(3)
    ints = [rng.randint(-10 ** 30, 10 ** 30) for _ in range(10_000)]
    numbers = [rng.choice([rng.random(), float(rng.randint(0, 9)), rng.randint(0, 99), math.inf, math.nan])
               for _ in range(10_000)]
    for values in (ints, numbers):
        generic = b"[" + b"".join(ns["_acceptgate_number_form"](v) for v in values) + b"]"
        assert ns["_acceptgate_equality_bytes"](values) == generic


def _plain_form(value) -> bytes:
    """The equality form by its definition, one value at a time (no fast path, no memo)."""
    t = type(value)
    if value is None:
        return b"N"
    if t in (int, float, bool):
        if t is float and value != value:
            return b"fnan;"
        if t is float and math.isinf(value):
            return b"finf;" if value > 0 else b"f-inf;"
        if t is float and not value.is_integer():
            return b"f" + repr(value).encode() + b";"
        n = int(value)
        return b"i" + (str(n) if abs(n) < 1 << 13000 else hex(n)).encode() + b";"
    if t is str:
        data = value.encode("utf-8", "surrogatepass")
        return b"s%d:" % len(data) + data
    if t is bytes:
        return b"b%d:" % len(value) + value
    if t in (list, tuple):
        inner = b"".join(_plain_form(v) for v in value)
        return (b"[" + inner + b"]") if t is list else (b"(" + inner + b")")
    if t is set:
        return b"{" + b"".join(sorted(_plain_form(v) for v in value)) + b"}"
    return b"<" + b"".join(sorted(_plain_form(k) + _plain_form(v) for k, v in value.items())) + b">"


def test_the_fast_paths_and_the_memo_give_the_forms_definition():
    ns = dialects._digest_namespace()
    rng = random.Random(11)

    def scalar():
        return rng.choice([lambda: rng.randint(-5, 5), rng.random, lambda: float(rng.randint(0, 3)),
                           lambda: math.nan, lambda: -math.inf, lambda: -0.0, lambda: True, lambda: None,
                           lambda: rng.choice(["a", "\u00e9", "\ud800", "", "Dog" * rng.randint(0, 200)]),
                           lambda: rng.choice([b"", b"ab"]), lambda: 10 ** rng.randint(1, 5000),
                           lambda: -(1 << 13000)])()

    def value(depth=0):
        if depth > 3 or rng.random() < 0.3:
            return scalar()
        kind = rng.choice(["list", "tuple", "set", "dict", "flat", "rows"])
        n = rng.randint(0, 6)
        if kind == "list":
            return [value(depth + 1) for _ in range(n)]
        if kind == "tuple":
            return tuple(value(depth + 1) for _ in range(n))
        if kind == "flat":  # short, and now and then longer than one slice of 4096
            return [scalar() for _ in range(rng.choice([n, n, n, 4100]))]
        if kind == "rows":  # combinations_colors's table: rows of a few strings (and equal numbers)
            return [tuple(rng.choice(["Dog", "Cat", 1, True, 1.0, b"x"]) for _ in range(3)) for _ in range(n * 50)]
        if kind == "set":
            return {rng.choice([1, 2.0, "a", b"b", None, (1, "x")]) for _ in range(n)}
        return {rng.choice([1, "k", (2,), None]): value(depth + 1) for _ in range(n)}

    for _ in range(800):
        v = value()
        assert ns["_acceptgate_equality_bytes"](v) == _plain_form(v), repr(v)[:300]
    table = [tuple(rng.choice(["Dog", "Cat", "Bird"]) for _ in range(7)) for _ in range(20_000)]
    form = _plain_form(table)
    assert ns["acceptgate_equality_digest"](table) == (hashlib.sha256(form).hexdigest(), len(form))


def test_the_digest_of_hash_colliding_scalars_is_linear():
    """Rows of scalars go through the forms memo; ints that all hash alike (k * (2**61 - 1)) made each
    insertion compare with every earlier key (a 1 MiB answer took 40 s of CPU). Numbers are no longer
    kept there. CPU time, not wall clock: the machine's load does not count."""
    colliding = [k * (2 ** 61 - 1) for k in range(1, 40_001)]
    ns = dialects._digest_namespace()
    for value in ([None] + colliding, [(v, "x") for v in colliding[:20_000]], [True] + colliding):
        started = time.process_time()
        digest = ns["acceptgate_equality_digest"](value)
        assert time.process_time() - started < 5.0
        form = _plain_form(value)
        assert digest == (hashlib.sha256(form).hexdigest(), len(form))


# ---------------------------------------------------------------------------------------------
# the dialect: spec shape, render, judging, bounds


def digest_spec(cases):
    return suitespec.build(dialects.DIGEST, "f", cases)


def test_digest_specs_are_data_and_checked():
    text = "x" * 300_000
    spec = digest_spec([((0,), {}, ("value", 1)), ((1,), {}, ("sha256", *dialects.equality_digest(text)))])
    rendered = render.render(spec)
    assert "def acceptgate_equality_digest" in rendered  # the rule's source is in the render and its hash
    assert suitespec.loads(spec.to_json()).spec_hash == spec.spec_hash
    for bad in (1, ("value",), ("sha256", "ab", 3), ("sha256", "0" * 64, 0), ["value", 1]):
        with pytest.raises(suitespec.SpecError, match="invalid expected value") as exc:
            digest_spec([((0,), {}, ("value", 1)), ((1,), {}, bad)])
        assert exc.value.case == 1 and exc.value.field == "expected"


def test_per_case_answer_bounds_come_from_the_recorded_length():
    length = 3_000_000
    spec = digest_spec([((0,), {}, ("value", 1)), ((1,), {}, ("sha256", "0" * 64, length))])
    h = render.harness_for(spec)
    assert h.result_limits == (render.RESULT_FLOOR, 8 * length) and h.result_limit == 8 * length
    exact = render.harness_for(suitespec.build("python-call/1", "f", [((0,), {}, 1), ((1,), {}, "abc")]))
    assert exact.result_limits == (render.RESULT_FLOOR, render.RESULT_FLOOR)


def test_digest_cases_pass_exactly_when_the_result_equals(local_backend):
    def want(n):
        return "x" * n if n % 2 == 0 else [i / 2 for i in range(n)]

    cases = [((n,), {}, ("sha256", *dialects.equality_digest(want(n)))) for n in (400_000, 300_001)]
    h = render.harness_for(digest_spec([((4,), {}, ("value", "xxxx")), *cases]))
    limits = Limits(wall_seconds=30, cpu_seconds=31)
    right = "def f(n):\n    return 'x' * n if n % 2 == 0 else [i / 2 for i in range(n)]\n"
    as_floats = "def f(n):\n    return 'x' * n if n % 2 == 0 else [float(i) / 2 for i in range(n)]\n"
    # equal under == though spelled differently (ints where the reference has 1.0, 2.0, ...)
    as_ints = ("def f(n):\n    return 'x' * n if n % 2 == 0 else "
               "[i // 2 if i % 2 == 0 else i / 2 for i in range(n)]\n")
    off_by_one = "def f(n):\n    return 'x' * (n + (n > 10)) if n % 2 == 0 else [i / 2 for i in range(n)]\n"
    last_wrong = "def f(n):\n    return 'x' * n if n % 2 == 0 else [i / 2 for i in range(n - 1)] + [0]\n"
    for source in (right, as_floats, as_ints):
        result = execute(h, source, local_backend, limits=limits)
        assert result.verdict == "pass", (source, result.as_dict())
    for source, failing in ((off_by_one, 1), (last_wrong, 2)):
        result = execute(h, source, local_backend, limits=limits)
        assert result.verdict == "fail" and result.first_failure.index == failing, result.as_dict()


def test_a_long_answer_is_judged_once_per_distinct_text(local_backend, monkeypatch):
    """Long answers are parsed and compared once per text and case (executor._judge_once): a later
    execution sending the same text gets the same CaseResult; a verdict the harness's CPU budget
    decided is never kept."""
    from acceptgate.sandbox import executor

    n = 300_000  # a long value the harness holds in full (a digested case is digested in the sandbox)
    h = render.harness_for(digest_spec([((n,), {}, ("value", "x" * n))]))
    limits = Limits(wall_seconds=30, cpu_seconds=31)
    right, wrong = "def f(n):\n    return 'x' * n\n", "def f(n):\n    return 'y' * n\n"
    judged = executor._prepare(h).judged
    monkeypatch.setattr(executor, "JUDGE_CPU_SECONDS", 0.0)  # no budget: the parse gives up at once
    result = execute(h, right, local_backend, limits=limits)
    assert result.verdict == "fail" and executor.TOO_COSTLY in result.cases[0].got, result.as_dict()
    assert not judged.get(0), "a verdict of the budget is not kept"
    monkeypatch.undo()
    first = [execute(h, source, local_backend, limits=limits) for source in (right, wrong)]
    assert [r.verdict for r in first] == ["pass", "fail"] and len(judged[0]) == 2
    again = [execute(h, source, local_backend, limits=limits) for source in (right, wrong)]
    assert [r.cases for r in again] == [r.cases for r in first] and len(judged[0]) == 2
    assert again[1].cases[0].got == first[1].cases[0].got and again[1].cases[0].got.startswith("'yyyy")


def test_a_digested_case_is_digested_in_the_sandbox(local_backend, monkeypatch):
    """The runner answers a digested case with the result's digest: a result beyond the 16 MiB answer
    frame, or one whose spelling would not fit the sandbox's memory, is judged all the same."""
    from acceptgate.sandbox import executor

    big, rows = "x" * 20_000_000, ["a" * 60] * 1_000_000  # a 20 MB repr; a 64 MB repr in 128 MiB
    h = render.harness_for(digest_spec([((0,), {}, ("value", 1)),
                                        ((1,), {}, ("sha256", *dialects.equality_digest(big))),
                                        ((2,), {}, ("sha256", *dialects.equality_digest(rows)))]))
    assert executor._prepare(h).digests == {1, 2}
    limits = Limits(wall_seconds=60, cpu_seconds=61)
    right = "def f(n):\n    return 1 if n == 0 else 'x' * 20_000_000 if n == 1 else ['a' * 60] * 1_000_000\n"
    wrong = "def f(n):\n    return 1 if n == 0 else 'x' * 20_000_001 if n == 1 else ['a' * 60] * 1_000_000\n"
    result = execute(h, right, local_backend, limits=limits)
    assert result.verdict == "pass" and result.cases_passed == 3, result.as_dict()
    failed = execute(h, wrong, local_backend, limits=limits)
    assert [c.status for c in failed.cases] == ["pass", "fail", "pass"], failed.as_dict()
    assert "equality form is 20000011 bytes" in failed.cases[1].got
    # the check that makes it work: without the dcall, the runner ships the results, and both fail
    monkeypatch.setattr(executor, "_is_digest", lambda want: False)
    executor._prepared.clear()
    shipped = execute(h, right, local_backend, limits=limits)
    assert shipped.verdict != "pass" and shipped.cases[1].status != "pass", shipped.as_dict()


def test_a_digest_answer_to_a_case_that_holds_its_value_is_a_protocol_error(local_backend):
    from acceptgate.sandbox import executor

    h = render.harness_for(digest_spec([((0,), {}, ("value", 1))]))
    with pytest.raises(executor.ProtocolViolation, match="a digest answer to a case that holds its value"):
        executor._assess_digest(0, b"ab 3", h.cases[0][2])
    with pytest.raises(executor.ProtocolViolation, match="malformed"):
        executor._assess_digest(0, b"nonsense", ("sha256", "0" * 64, 3))


# ---------------------------------------------------------------------------------------------
# import: a too-large output becomes a digest case, never an exclusion


TINY = [
    {"task_id": "Tiny/0", "entry_point": "big",
     "prompt": 'def big(n):\n    """A string or a power of ten.\n    >>> big(3)\n    1000\n    """\n',
     "canonical_solution": "    return 'x' * n if n % 2 == 0 else 10 ** n\n",
     "base_input": [[3], [4]], "plus_input": [[200_000], [300_001], [5001]], "atol": 0, "contract": ""},
    {"task_id": "Tiny/1", "entry_point": "halves",
     "prompt": 'def halves(n):\n    """n halves.\n    >>> halves(2)\n    [0.5, 0.5]\n    """\n',
     "canonical_solution": "    return [0.5] * n\n",
     "base_input": [[2]], "plus_input": [[60_000]], "atol": 0, "contract": ""},
]


def test_import_keeps_too_large_outputs_as_digests(tmp_path, local_backend):
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TINY), encoding="utf-8")
    result = humanevalplus.load(path, local_backend)
    tasks = {t.task_id: t for t in result.tasks}
    spec = tasks["Tiny/0"].suites[HIDDEN]
    assert spec.dialect == dialects.DIGEST and len(spec.cases) == 5
    kinds = [c.expected[0] for c in spec.cases]
    assert kinds == ["value", "value", "sha256", "sha256", "value"]
    assert spec.cases[2].expected[1:] == dialects.equality_digest("x" * 200_000)
    assert spec.cases[3].expected[1:] == dialects.equality_digest(10 ** 300_001)
    assert spec.cases[4].expected_text.startswith("('value', 0x")  # 5001 digits: a hex literal
    # a dialect beyond equality (floats: EvalPlus's tolerance) cannot judge a digest: excluded, with why
    halves = tasks["Tiny/1"].suites[HIDDEN]
    assert halves.dialect == dialects.atol_name(1e-6) and len(halves.cases) == 1
    [issue] = [i for i in result.issues if i.task_id == "Tiny/1" and i.suite == HIDDEN]
    assert issue.reason == "output-too-large" and "cannot judge it by its digest" in issue.detail
    assert "hidden cases 6/7" in coverage_line(summary(result))
    h = render.harness_for(spec)
    limits = Limits(wall_seconds=30, cpu_seconds=31)
    right = TINY[0]["prompt"] + TINY[0]["canonical_solution"]
    wrong = TINY[0]["prompt"] + "    return 'x' * n if n % 2 == 0 else 10 ** n + (n > 10 ** 5)\n"
    assert execute(h, right, local_backend, limits=limits).verdict == "pass"
    failed = execute(h, wrong, local_backend, limits=limits)
    assert failed.verdict == "fail" and failed.first_failure.index == 3


def test_reference_memory_is_retried_with_more_then_excluded_with_the_budget(local_backend, monkeypatch):
    hungry = "def f(mib):\n    return len(bytearray(mib * 1024 * 1024))\n"
    run = common.reference_outputs("f", [((1,), {}), ((300,), {}), ((2,), {})], hungry, local_backend)
    assert [o.status for o in run.outcomes] == ["ok", "ok", "ok"]  # 300 MiB: answered by the retry
    assert run.outcomes[1].value == 300 * 1024 * 1024
    monkeypatch.setattr(common, "MEMORY_RETRY_LIMITS", Limits(wall_seconds=10, cpu_seconds=11,
                                                              memory_bytes=200 * 1024 * 1024))
    run = common.reference_outputs("f", [((1,), {}), ((300,), {})], hungry, local_backend)
    assert run.outcomes[1].status == "memory" and "again alone with 200 MiB" in run.outcomes[1].message


def test_inputs_are_spelled_once_and_kept_as_large_as_the_grammar_holds():
    big = {"k": ["x" * 1000] * 150}  # 150,000 characters: the source's data, kept (Mbpp/301 has 102,000)
    draft = common.Draft((big,), {}, 0)
    assert common.validate_draft("T/1", HIDDEN, draft) is None
    assert draft.args_text == literals.canonical((big,)) and draft.kwargs_text == "{}"
    case = common.build_suite("T/1", HIDDEN, "python-call/1", "f", [draft],
                              [common.CallOutcome("ok", 3)]).spec.cases[0]
    assert (case.args_text, case.expected_text) == (draft.args_text, "3")
    huge = common.Draft(("x" * (literals.MAX_TEXT_CHARS + 1),), {}, 7)
    issue = common.validate_draft("T/1", HIDDEN, huge)
    assert (issue.reason, issue.case_index) == ("input-too-large", 7)
    assert common.validate_draft("T/1", HIDDEN, common.Draft((object(),), {}, 8)).reason == "non-literal-input"


def test_a_measured_answer_reads_as_the_general_parser_reads_it():
    rng = random.Random(8)
    outputs = [None, True, -3, 10 ** 50, "it's", "", 1.5, [1, 2.5, -0.0], [], ("a", 1), {1: [2]}, {"x"}, b"\x00"]
    texts = [repr((tag, seconds, out)) for tag in ("ok", "counter", "digest")
             for seconds in (1e-05, 0.25, 3.0, 1.5e-07, rng.random()) for out in outputs]
    texts += ["('ok', 0.5, 1, 2)", "('ok', 0.5, 1,)", "('ok', 1, 2)", "('ok', 0.5, [1])]", "('ok', 0.5, (1)",
              "('ok', 0.5,  1 )", "('ok', 0.5, x)", "('other', 0.5, 1)", "('ok', 1e-05, [1, 2])"]
    for text in texts:
        assert repr(_reading(common.parse_measured, text)) == repr(_reading(answers.parse, text)), text
