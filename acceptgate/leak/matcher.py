"""Exact multi-pattern matching: every occurrence of every needle, overlapping, with CHARACTER offsets.

The default is an Aho-Corasick automaton (pyahocorasick, built for ``str``, so its indices are code
point offsets): one pass over a text finds every needle, including a needle inside a longer one (a
regex alternation misses those). ``polars`` uses ``str.extract_many``/``find_many`` (Aho-Corasick in
Rust) and converts its byte offsets to character offsets; it exists to be measured against the
default (``bench/bench_leak.py``). ``disabled`` finds nothing: it is what a broken matcher looks like,
and the positive control must catch it.
"""

from __future__ import annotations

import abc
import importlib.util
from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class Match:
    start: int  # character offset of the first character
    end: int  # character offset one past the last character
    needle: int  # index into the needle list the matcher was built from


class Matcher(abc.ABC):
    """Built once from a needle list; ``find`` returns every occurrence in one text."""

    name = "?"

    def __init__(self, needles: Sequence[str]) -> None:
        self.needles = list(needles)

    @abc.abstractmethod
    def find(self, text: str) -> list[Match]:
        """Every (start, end, needle) with ``text[start:end] == needles[needle]``, overlapping."""

    def find_many(self, texts: Sequence[str]) -> list[list[Match]]:
        return [self.find(t) for t in texts]


class AhoCorasickMatcher(Matcher):
    name = "aho"

    def __init__(self, needles: Sequence[str]) -> None:
        super().__init__(needles)
        import ahocorasick

        # Values are plain ints (STORE_INTS: half the memory of a Python object per word); a text given
        # several times maps its first index to all of them.
        self._automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
        first: dict[str, int] = {}
        self._more: dict[int, tuple[int, ...]] = {}
        for i, needle in enumerate(self.needles):
            if not needle:
                continue
            if needle in first:
                j = first[needle]
                self._more[j] = self._more.get(j, (j,)) + (i,)
            else:
                first[needle] = i
                self._automaton.add_word(needle, i)
        self._lengths = [len(n) for n in self.needles]
        self._empty = not first
        if not self._empty:
            self._automaton.make_automaton()

    def find(self, text: str) -> list[Match]:
        if self._empty or not text:
            return []
        out = []
        lengths, more = self._lengths, self._more
        for last, i in self._automaton.iter(text):
            start = last + 1 - lengths[i]
            ids = more.get(i)
            if ids is None:
                out.append(Match(start, last + 1, i))
            else:
                out.extend(Match(start, last + 1, j) for j in ids)
        return out


class PolarsMatcher(Matcher):
    """polars' Aho-Corasick; offsets come back in bytes and are converted to characters."""

    name = "polars"

    def __init__(self, needles: Sequence[str]) -> None:
        super().__init__(needles)
        self._ids: dict[str, list[int]] = {}
        for i, needle in enumerate(self.needles):
            if needle:
                self._ids.setdefault(needle, []).append(i)
        self._patterns = list(self._ids)

    def find(self, text: str) -> list[Match]:
        return self.find_many([text])[0]

    def find_many(self, texts: Sequence[str]) -> list[list[Match]]:
        import polars as pl

        if not self._patterns:
            return [[] for _ in texts]
        series = pl.Series(list(texts), dtype=pl.String)
        found = pl.DataFrame({
            "what": series.str.extract_many(self._patterns, overlapping=True),
            "where": series.str.find_many(self._patterns, overlapping=True),
        })
        out: list[list[Match]] = []
        for text, whats, wheres in zip(texts, found["what"].to_list(), found["where"].to_list()):
            chars = _byte_to_char(text) if not text.isascii() else None
            matches = []
            for needle, byte_start in zip(whats or (), wheres or ()):
                start = byte_start if chars is None else chars[byte_start]
                matches.extend(Match(start, start + len(needle), i) for i in self._ids[needle])
            out.append(matches)
        return out


def _byte_to_char(text: str) -> dict[int, int]:
    """UTF-8 byte offset of each character's first byte -> its character offset."""
    table, at = {}, 0
    for i, ch in enumerate(text):
        table[at] = i
        at += len(ch.encode("utf-8", "surrogatepass"))
    table[at] = len(text)
    return table


class DisabledMatcher(Matcher):
    """Finds nothing. A scan with it must fail its positive control (and its records be unverifiable)."""

    name = "disabled"

    def find(self, text: str) -> list[Match]:
        return []


MATCHERS: dict[str, type[Matcher]] = {m.name: m for m in (AhoCorasickMatcher, PolarsMatcher, DisabledMatcher)}
DEFAULT = "aho"


def check_name(name: str) -> str:
    if name not in MATCHERS:
        raise ValueError(f"unknown matcher {name!r}; valid matchers: {', '.join(MATCHERS)}")
    if name == PolarsMatcher.name and importlib.util.find_spec("polars") is None:
        # polars (180 MB installed) is only the default's measured alternative: not a main dependency
        raise ValueError("the polars matcher needs polars, which acceptgate does not install (pip install "
                         f"polars==2.1.0, or the test extra); the default {DEFAULT!r} finds the same hits")
    return name


def build(name: str, needles: Iterable[str]) -> Matcher:
    return MATCHERS[check_name(name)](list(needles))
