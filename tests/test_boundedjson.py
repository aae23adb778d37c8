"""The bounded JSON reader: every bound is an error naming where, never a traceback, in linear time."""

from __future__ import annotations

import json
import time

import pytest

from acceptgate._util import boundedjson
from acceptgate._util.boundedjson import JSONInputError


def test_reads_what_json_reads():
    for doc in ({"a": [1, 2.5, None, True, 'x"y'], "b": {"c": []}}, [], "s", 10 ** 4000, -1.5e300):
        assert boundedjson.loads(json.dumps(doc)) == doc
    assert boundedjson.loads(json.dumps({"k": "v"}).encode()) == {"k": "v"}


@pytest.mark.parametrize("text, said", [
    ("[" * 100_000 + "]" * 100_000, "nested 100000 levels deep, limit 100"),
    ('{"n": ' + "9" * 5000 + "}", "an integer of 5000 digits, limit 4300 at line 1 column 7"),
    ("[1,\n -" + "9" * 4301 + "]", "an integer of 4301 digits, limit 4300 at line 2 column 2"),
    ("[1, 2", "not JSON: Expecting ',' delimiter at line 1 column 6"),
    (b"[\"\xff\"]", "not UTF-8 (byte 2)"),
    ('{"task_id": "HumanEval/0", "completion": "x', "not JSON: Unterminated string starting at line 1 column 42"),
    ('["a\tb"]', "not JSON: Invalid control character at line 1 column 4"),
], ids=["deep", "long-int", "long-negative-int", "invalid", "not-utf8", "unterminated", "control-char"])
def test_every_bound_is_one_error_naming_where(text, said):
    with pytest.raises(JSONInputError) as err:
        boundedjson.loads(text)
    assert said in str(err.value) and " at at " not in str(err.value)


def test_brackets_inside_strings_are_not_nesting():
    deep_text = json.dumps(["[" * 1000, {"k": "{" * 1000}])
    assert boundedjson.loads(deep_text)[0] == "[" * 1000
    assert boundedjson.nesting_depth(deep_text) == 2
    with pytest.raises(JSONInputError, match="nested 4 levels deep, limit 3"):
        boundedjson.loads("[[[[]]]]", max_depth=3)
    # escaped quotes and backslashes do not end a string early, nor hide real nesting
    for value, depth in ((["a\\", "[[[", {"b\"[": ["\\\"{{"]}], 3), ([[["\\"]], "]]]\\"], 3),
                         ({"k": '\\"[[[[[[', "l": [[[[1]]]]}, 5)):
        text = json.dumps(value)
        assert boundedjson.nesting_depth(text) == depth, text
        with pytest.raises(JSONInputError, match=f"nested {depth} levels deep"):
            boundedjson.loads(text, max_depth=depth - 1)


def test_size_bound_and_hostile_strings_are_linear():
    with pytest.raises(JSONInputError, match="23 characters, limit 10"):
        boundedjson.loads("[" + "1," * 10 + "1]", max_chars=10)
    # unterminated strings full of escaped quotes: a scan that restarted at each quote would be quadratic
    for text in ('"' + '\\"' * 2_000_000, '"' + '\\"' * 2_000_000 + "\\", "[" + '"\\"' * 1_000_000):
        started = time.process_time()
        with pytest.raises(JSONInputError):
            boundedjson.loads(text)
        assert time.process_time() - started < 5.0  # CPU time: linear takes ~0.05 s here


def test_load_path_refuses_a_file_beyond_the_bound_unread(tmp_path):
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 1000 + "0]")
    with pytest.raises(JSONInputError, match="bytes, limit 100 characters"):
        boundedjson.load_path(path, max_chars=100)
    assert len(boundedjson.load_path(path)) == 1001


@pytest.mark.parametrize("interpreter_limit", [0, 100_000])
def test_the_integer_bound_holds_whatever_the_interpreter_allows(interpreter_limit):
    """The fast path leans on CPython's own int limit; where that limit is off or higher, the bound still
    holds (the per-integer check runs)."""
    import sys

    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(interpreter_limit)
    try:
        with pytest.raises(JSONInputError, match="an integer of 5000 digits, limit 4300 at line 1 column 5"):
            boundedjson.loads("[1, " + "9" * 5000 + "]")
        assert boundedjson.loads("[" + "7" * 4300 + "]") == [int("7" * 4300)]
    finally:
        sys.set_int_max_str_digits(before)
