"""Replay sources (EvalPlus jsonl, CodeT layout) and code extraction."""

from __future__ import annotations

import gzip
import json

import pytest

from acceptgate.suites import suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate.sources import open_source
from acceptgate.sources.base import DrawContext, PublicTask, SourceExhausted
from acceptgate.sources.codet import CodetSource, humaneval_prompts, match_rows
from acceptgate.sources.extract import assemble, extract_code
from acceptgate.sources.replay import ReplaySource
from acceptgate.datasets.samples import read_samples, require_valid

PROMPT = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum.\n    >>> total([1, 2])\n    3\n    """\n'
TASK = PublicTask("T/0", "total", PROMPT, suitespec.build("python-call/1", "total", [(([1, 2],), {}, 3)]))
CTX = DrawContext(arm="conform")


def write_jsonl(path, rows, raw_lines=()):
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
        for line in raw_lines:
            fh.write(line + "\n")
    return path


def test_replay_solution_and_completion_in_file_order(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "T/0", "completion": "    return 0\n"},
        {"task_id": "T/1", "solution": "def f():\n    return 1\n"},
        {"task_id": "T/0", "solution": "def total(xs):\n    return sum(xs)\n"},
    ])
    src = ReplaySource.from_path(path)
    first, second = src.draw(TASK, 1, CTX), src.draw(TASK, 2, CTX)
    assert first.program == PROMPT + "    return 0\n" and first.sample_index == 0
    assert first.meta["line"] == 1 and first.extraction == "completion"
    assert second.program == "def total(xs):\n    return sum(xs)\n" and second.meta["line"] == 3
    assert src.available("T/0") == 2 and src.task_ids() == {"T/0", "T/1"}
    with pytest.raises(SourceExhausted):
        src.draw(TASK, 3, CTX)


def test_replay_reports_invalid_lines_by_number(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "T/0", "completion": "x"}],
                       raw_lines=['{"task_id": "T/0"}', "not json", '{"solution": "x"}',
                                  '{"task_id": "T/0", "solution": "a", "completion": "b"}',
                                  '{"task_id": "T/0", "completion": 7}', "[1]"])
    sf = read_samples(path)
    assert len(sf.samples) == 1
    assert [(p.line, p.field) for p in sf.problems] == [
        (2, "solution"), (3, None), (4, "task_id"), (5, "solution"), (6, "completion"), (7, None)]
    with pytest.raises(InvalidInput) as exc:
        require_valid(sf)
    assert "line 2" in str(exc.value) and "5 more invalid lines" in str(exc.value)


def test_replay_gz_and_bad_files(tmp_path):
    gz = tmp_path / "s.jsonl.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write(json.dumps({"task_id": "T/0", "completion": "    return 1\n"}) + "\n")
    assert len(read_samples(gz).samples) == 1
    with pytest.raises(InvalidInput, match="not found"):
        read_samples(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InvalidInput, match="no valid samples"):
        require_valid(read_samples(tmp_path / "empty.jsonl"))
    (tmp_path / "bad.jsonl.gz").write_bytes(b"not gzip")
    with pytest.raises(InvalidInput, match="cannot read"):
        read_samples(tmp_path / "bad.jsonl.gz")
    with pytest.raises(InvalidInput, match="unknown source"):
        open_source("nope:x")


def test_codet_rows_matched_by_function_name(codet_samples_path):
    prompts = humaneval_prompts()
    src = CodetSource(codet_samples_path, prompts=prompts)
    assert len(src.rows) == 164 and src.available("HumanEval/13") == 5
    # rows are in string order of task ids: row 2 is HumanEval/10 (make_palindrome, after is_palindrome)
    assert src.rows["HumanEval/10"]["line"] == 3 and src.rows["HumanEval/100"]["line"] == 4
    task = PublicTask("HumanEval/13", "greatest_common_divisor", "(HumanEval+ prompt)",
                      suitespec.build("python-call/1", "greatest_common_divisor", [((3, 5), {}, 1)]))
    cand = src.draw(task, 1, CTX)
    assert cand.raw == "    return gcd(a, b)\n"
    assert cand.program == prompts["HumanEval/13"][0] + cand.raw  # the ORIGINAL HumanEval prompt
    assert cand.origin == "replay:codet" and cand.sample_index == 0
    with pytest.raises(SourceExhausted):
        src.draw(task, 6, CTX)
    first20 = src.solutions(20)
    assert len(first20) == 164 * 20 and first20[0]["task_id"] == "HumanEval/0"


def test_codet_unmatched_row_is_named(tmp_path):
    path = tmp_path / "c.jsonl"
    write_jsonl(path, [{"prompt": "def nobody_has_this(x):\n    pass\n", "samples": ["  return 1\n"]}])
    with pytest.raises(InvalidInput) as exc:
        CodetSource(path, prompts={"T/0": ("def total(xs):\n", "total")})
    assert "line 1" in str(exc.value) and "'nobody_has_this' matches 0 tasks" in str(exc.value)
    write_jsonl(path, [{"prompt": "def total(x):\n", "samples": "oops"}])
    with pytest.raises(InvalidInput, match="field 'samples'"):
        CodetSource(path, prompts={"T/0": ("def total(xs):\n", "total")})


def test_codet_duplicate_rows_rejected():
    rows = [{"line": 1, "prompt": "def total(x):\n"}, {"line": 2, "prompt": "def total(x):\n"}]
    with pytest.raises(InvalidInput, match="second row for T/0"):
        match_rows(rows, {"T/0": ("", "total")}, "c.jsonl")


@pytest.mark.parametrize("reply, method, expect", [
    ("```python\ndef total(xs):\n    return sum(xs)\n```", "fenced", "def total(xs):\n    return sum(xs)\n"),
    ("Sure!\n```\nimport math\ndef total(xs):\n    return sum(xs)\n```\nDone.", "fenced",
     "import math\ndef total(xs):\n    return sum(xs)\n"),
    ("```python\ndef helper(): pass\n```\nthen\n```python\ndef total(xs):\n    return 1\n```", "fenced",
     "def total(xs):\n    return 1\n"),
    ("def total(xs):\n    return sum(xs)", "bare", "def total(xs):\n    return sum(xs)\n"),
    ("Here is the code:\ndef total(xs):\n    return sum(xs)\nThis sums.", "bare-trimmed",
     "def total(xs):\n    return sum(xs)\n"),
    ("", "none", ""),
])
def test_extract_code(reply, method, expect):
    got = extract_code(reply, "total")
    assert (got.method, got.code) == (method, expect)


def test_assemble_adds_prompt_imports_and_helpers_or_appends_body():
    program, how = assemble(PROMPT, "total", "def total(xs: List[int]) -> int:\n    return sum(xs)\n")
    assert how == "prompt-preamble+code"
    assert program.startswith("from typing import List\n") and "def total(xs: List[int])" in program
    assert program.count("def total") == 1
    body, how = assemble(PROMPT, "total", "    return sum(xs)\n")
    assert (body, how) == (PROMPT + "    return sum(xs)\n", "prompt+body")
    helpers = 'def helper(x):\n    return x\n\n\ndef total(xs):\n    """Doc."""\n'
    program, _ = assemble(helpers, "total", "def total(xs):\n    return helper(sum(xs))\n")
    assert program.startswith("def helper(x):") and program.count("def total") == 1
