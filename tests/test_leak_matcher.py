"""Exact matchers: every occurrence, overlapping, needles inside needles, character offsets."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptgate.leak.matcher import MATCHERS, build, check_name


def naive(needles: list[str], text: str) -> set[tuple[int, int, int]]:
    out = set()
    for i, n in enumerate(needles):
        at = text.find(n)
        while at != -1:
            out.add((at, at + len(n), i))
            at = text.find(n, at + 1)
    return out


@pytest.mark.parametrize("name", ["aho", "polars"])
def test_overlapping_nested_and_duplicate_needles_with_character_offsets(name):
    needles = ["ab", "b", "éb", "abc", "ab", "aa"]
    text = "xéabc éb aaa"
    got = {(m.start, m.end, m.needle) for m in build(name, needles).find(text)}
    assert got == naive(needles, text)
    assert (2, 4, 0) in got and (2, 4, 4) in got and (9, 11, 5) in got and (10, 12, 5) in got


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab→é", min_size=1, max_size=4), min_size=1, max_size=8),
       st.lists(st.text(alphabet="ab→é ", max_size=30), min_size=1, max_size=4))
def test_both_matchers_agree_with_str_find(needles, texts):
    want = [naive(needles, t) for t in texts]
    for name in ("aho", "polars"):
        got = [{(m.start, m.end, m.needle) for m in ms} for ms in build(name, needles).find_many(texts)]
        assert got == want, name


def test_disabled_finds_nothing_and_unknown_names_list_the_valid_ones():
    assert build("disabled", ["a"]).find("aaa") == []
    with pytest.raises(ValueError, match="valid matchers: aho, polars, disabled"):
        check_name("regex")
    assert set(MATCHERS) == {"aho", "polars", "disabled"}


def test_planted_recall_is_complete_on_a_random_corpus():
    rng = random.Random(7)
    needles = ["".join(rng.choice("abcdefgh(),' 0123") for _ in range(rng.randint(3, 12))) for _ in range(200)]
    texts = ["".join(rng.choice("ijklmnop ") for _ in range(300)) for _ in range(50)]
    planted = set()
    for t_i in range(len(texts)):
        n_i = rng.randrange(len(needles))
        at = rng.randrange(len(texts[t_i]))
        texts[t_i] = texts[t_i][:at] + needles[n_i] + texts[t_i][at:]
        planted.add((t_i, at, n_i))
    found = build("aho", needles).find_many(texts)
    hits = {(t_i, m.start, m.needle) for t_i, ms in enumerate(found) for m in ms}
    assert planted <= hits


def test_the_polars_matcher_without_polars_says_how_to_install_it(monkeypatch):
    """polars is not a main dependency: asking for its matcher without it is a clear error, not an ImportError."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "polars" else real(name, *a))
    with pytest.raises(ValueError, match=r"pip install polars==2\.1\.0"):
        check_name("polars")
    assert check_name("aho") == "aho"


def test_polars_is_not_a_main_dependency():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith(("polars", "matplotlib"))]
