"""Deterministic rendering: golden hashes, and independence from hash seed, locale and set order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acceptgate.suites import render, suitespec
GOLDEN = Path(__file__).parent / "golden"

# Any drift in the canonical form, the renderer or the harness prelude must fail here. If a change is
# intended, it is a new renderer/dialect version: update these with a note in the commit message.
GOLDEN_HASHES = {
    "add.json": ("d3e7d337db8a4cb8f236c54b959d9c9636340e232cf28efda48d42f1264af778",
                 "5680f81a3081cde81179b092bfe85e58d07a07f0227e3a90b05eae38da623c0b"),
    "mixed.json": ("cb66fa16e7c1496b40d952b17f132311c756125d18733689f01f3acd59633e93",
                   "8adc36a1b23f51e8e784291e2bc7b30a3b95f20d0fd482c4f468666899ade188"),
    "tolerance.json": ("f8dcfe623005c48804c219a64e5b11c30727735e8542473a32a690f6958ce62f",
                       "15c9332ab5045686cbd0a2b4968953ccae984e2beb5dec709c4ab75d0dde7ab7"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_HASHES))
def test_golden_hashes(name):
    spec = suitespec.load(GOLDEN / name)
    assert (spec.spec_hash, render.render_hash(render.render(spec))) == GOLDEN_HASHES[name]


_PROBE = """
import json, sys
from acceptgate.suites import render, suitespec
out = {}
for name in sys.argv[1:]:
    spec = suitespec.load(name)
    out[name] = [spec.spec_hash, render.render_hash(render.render(spec))]
print(json.dumps(out, sort_keys=True))
"""


def _hashes_in_subprocess(env_extra: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "LC_ALL", "LANG")}
    env.update(env_extra)
    files = [str(GOLDEN / n) for n in sorted(GOLDEN_HASHES)]
    out = subprocess.run([sys.executable, "-c", _PROBE, *files], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_rendering_does_not_depend_on_hash_seed_or_locale():
    results = [
        _hashes_in_subprocess({"PYTHONHASHSEED": seed, "LC_ALL": loc})
        for seed, loc in [("0", "C"), ("1", "C.UTF-8"), ("12345", "POSIX"), ("4294967295", "C"), ("random", "C.UTF-8")]
    ]
    assert all(r == results[0] for r in results)
    expected = {str(GOLDEN / n): list(h) for n, h in GOLDEN_HASHES.items()}
    assert results[0] == expected


def test_set_spelling_order_does_not_change_render():
    a = suitespec.from_dict({"dialect": "python-call/1", "entry_point": "f",
                             "cases": [{"args": "[{'b', 'c', 'a'}]", "expected": "{3, 2, 1}"}]})
    b = suitespec.from_dict({"dialect": "python-call/1", "entry_point": "f",
                             "cases": [{"args": "[{'a', 'c', 'b'}]", "expected": "{1, 2, 3}"}]})
    assert render.render(a) == render.render(b)


def test_rendered_harness_holds_the_cases_and_the_dialect_comparison():
    spec = suitespec.load(GOLDEN / "tolerance.json")
    h = render.harness_for(spec)
    assert h.entry_point == "mean"
    assert h.cases[0] == ((([1.0, 2.0, 3.0]),), {}, 2.0)
    assert h.compare(2.0000005, 2.0) and not h.compare(2.001, 2.0)
    exact = render.harness_for(suitespec.load(GOLDEN / "add.json"))
    assert exact.compare(3, 3) and not exact.compare(3.0000001, 3)
    assert exact.compare(float("nan"), float("nan"))
    assert not exact.compare([1, 2], (1, 2))


def test_rendered_program_contains_no_code_from_the_spec():
    # The renderer only emits canonical literals: an injection attempt cannot even parse.
    with pytest.raises(suitespec.SpecError):
        suitespec.from_dict({"dialect": "python-call/1", "entry_point": "f",
                             "cases": [{"args": "[1]\nimport os", "expected": "1"}]})
    spec = suitespec.from_dict({"dialect": "python-call/1", "entry_point": "f",
                                "cases": [{"args": "['\\nimport os\\n']", "expected": "'])\\nimport os#'"}]})
    text = render.render(spec)
    assert "\nimport os" not in text.split("CASES = [")[1]


def _evaluated(spec):
    """The harness as the whole rendered program defines it: its CASES evaluated by Python."""
    namespace = {"__name__": "acceptgate_harness"}
    exec(compile(render.render(spec), "<harness>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", sorted(GOLDEN_HASHES))
def test_harness_holds_what_the_rendered_program_evaluates_to(name):
    """harness_for takes CASES from the spec's values instead of evaluating the program's literals: the
    two are the same values (literals' canonical spellings evaluate to exactly what the parser read)."""
    from acceptgate.suites import literals
    spec = suitespec.load(GOLDEN / name)
    harness, program = render.harness_for(spec), _evaluated(spec)
    assert [literals.canonical(c) for c in harness.cases] == [literals.canonical(c) for c in program["CASES"]]
    assert (harness.entry_point, harness.dialect) == (program["ENTRY_POINT"], program["DIALECT"])
    assert harness.render_hash == render.render_hash(render.render(spec)) == GOLDEN_HASHES[name][1]
    # the judging code is the program's own
    assert harness.compare.__code__.co_code == program["compare"].__code__.co_code
    # and the check can fail: a spec whose values were changed behind its texts is told apart
    tampered = suitespec.SuiteSpec(spec.dialect, spec.entry_point, tuple(
        suitespec.Case(c.args, c.kwargs, ("tampered", c.expected), c.args_text, c.kwargs_text, c.expected_text)
        for c in spec.cases))
    assert [literals.canonical(c) for c in render.harness_for(tampered).cases] != \
        [literals.canonical(c) for c in _evaluated(tampered)["CASES"]]
