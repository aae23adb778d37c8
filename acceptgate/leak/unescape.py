"""A text's JSON-unescaped view, with offsets back into the text: how the scanners find a hidden value
in any JSON spelling of it.

A JSON writer may spell one string many ways: ``json.dumps`` writes ``"\\u00e9clair"`` by default
(``ensure_ascii``) and ``"éclair"`` without it; astral characters become surrogate pairs
(``"\\ud83d\\ude00"``), hex digits may be upper case, ``/`` may be written ``\\/``, and a string inside a
JSON string is escaped again (``\\"``, ``\\\\u00e9``). Listing the spellings as needles would never end;
decoding the text instead (every ``\\uXXXX``, surrogate pairs joined, and ``\\" \\\\ \\/ \\b \\f \\n \\r
\\t``, up to ``LEVELS`` times for nested encodings) gives one view in which each of them reads as the
value itself, so the needles the material already has (canonical, JSON, bare) match it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LEVELS = 3  # a value JSON-encoded inside JSON inside JSON is still found
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([\"\\/bfnrt]))")
_HIGH = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})")
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass(frozen=True)
class View:
    """``text`` decoded; character ``i`` of it came from ``source[starts[i]:ends[i]]``."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The source offsets of the view's characters ``start:end`` (end > start)."""
        return self.starts[start], self.ends[end - 1]


def has_escapes(text: str) -> bool:
    return "\\" in text and _ESCAPE.search(text) is not None


def _decode_once(text: str) -> tuple[str, list[int], list[int]] | None:
    """One level of decoding with each output character's source span, or None when nothing decodes."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    changed = False
    while True:
        m = _ESCAPE.search(text, at)
        if m is None:
            break
        for i in range(at, m.start()):
            out.append(text[i])
            starts.append(i)
            ends.append(i + 1)
        pair = _HIGH.match(text, m.start())
        if pair is not None:  # a surrogate pair: one astral character
            high, low = int(pair.group(1), 16), int(pair.group(2), 16)
            out.append(chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)))
            end = pair.end()
        else:
            out.append(chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE[m.group(2)])
            end = m.end()
        starts.append(m.start())
        ends.append(end)
        at = end
        changed = True
    if not changed:
        return None
    for i in range(at, len(text)):
        out.append(text[i])
        starts.append(i)
        ends.append(i + 1)
    return "".join(out), starts, ends


def views(text: str) -> list[View]:
    """The decoded views of ``text`` (one per level that changed something), offsets into ``text``."""
    out: list[View] = []
    current, starts, ends = text, list(range(len(text))), list(range(1, len(text) + 1))
    for _ in range(LEVELS):
        if not has_escapes(current):
            break
        decoded = _decode_once(current)
        if decoded is None:
            break
        current, inner_starts, inner_ends = decoded
        starts = [starts[s] for s in inner_starts]
        ends = [ends[e - 1] for e in inner_ends]
        out.append(View(current, tuple(starts), tuple(ends)))
    return out
