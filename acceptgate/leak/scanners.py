"""Two scanners over one record's messages, side by side (SYSTEM.md section 4).

**v1 keyword** (the seed's first scanner): any rendering of a hidden case of at least
``V1_MIN_CHARS`` characters, found in any text by anyone, is a hit. It cannot tell a literal the task
statement already shows, or one the model wrote itself, from a leak: that is why it raised false alarms.

**v2 authorship**: looks only for material that is hidden (not in the statement or V, see
``material``), and a hit is a *violation* only in text the harness wrote. Hits in task-author or model
text are stored with their rule and are not violations; so is a hit inside the ``got=`` value of a
revision-feedback line (that value is the candidate program's own output, quoted). Short or common
renderings count only in context: the argument list and the expected rendering of the same hidden case
within ``CONTEXT_CHARS`` of each other in one text (rule ``pair``); lone short matches are counted as
comparison items but are not hits.

Comparison items: (text, needle) pairs compared, i.e. texts scanned x needles of the task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from acceptgate.leak import matcher as matchers
from acceptgate.leak.material import COMMON, Needle, TaskMaterial
from acceptgate.leak.records import RecordMessage

SCANNER_VERSION = "leak-scan/1"
SCANNERS = ("v1", "v2")
V1_MIN_CHARS = 4
CONTEXT_CHARS = 200
_GOT = re.compile(r"got=(.*?) want=", re.DOTALL)
_QUOTED = tuple("'\"[({") + ("b'", 'b"')
RULES = ("keyword", "call-expression", "hidden-literal", "piece", "pair")


@dataclass(frozen=True)
class Hit:
    scanner: str  # v1 | v2
    seq: int  # the message
    author: str | None
    purpose: str
    start: int  # character offsets in the message text
    end: int
    needle: str
    kind: str  # call | args | arg | expected | piece
    case_index: int
    rule: str  # v1: keyword; v2: call-expression | hidden-literal | piece | pair
    violation: bool
    why_not: str = ""  # v2 hit that is no violation: task-written | model-written | author-unknown | model-output


@dataclass
class ScanResult:
    hits: list[Hit] = field(default_factory=list)
    items: int = 0
    texts: int = 0

    @property
    def violations(self) -> list[Hit]:
        return [h for h in self.hits if h.violation]


class TaskScanner:
    """v1 and v2 for one task: the needle lists and their matchers, built once per scan."""

    def __init__(self, material: TaskMaterial, matcher_name: str = matchers.DEFAULT) -> None:
        self.material = material
        self.matcher_name = matcher_name
        self.v1_needles: list[Needle] = [n for n in material.needles if len(n.text) >= V1_MIN_CHARS]
        self.v2_needles: list[Needle] = material.hidden()
        self._v1 = matchers.build(matcher_name, [n.text for n in self.v1_needles])
        self._v2 = matchers.build(matcher_name, [n.text for n in self.v2_needles])
        # The same text recurs (the statement in every attempt, harness boilerplate): match it once.
        self._seen: dict[tuple[int, str], list[matchers.Match]] = {}

    def _find(self, which: int, text: str) -> list[matchers.Match]:
        key = (which, text)
        found = self._seen.get(key)
        if found is None:
            found = self._seen[key] = (self._v1 if which == 1 else self._v2).find(text)
        return found

    def scan_v1(self, messages: Sequence[RecordMessage]) -> ScanResult:
        out = ScanResult()
        for m in messages:
            if m.text is None:
                continue
            out.texts += 1
            out.items += len(self.v1_needles)
            for match in self._find(1, m.text):
                n = self.v1_needles[match.needle]
                out.hits.append(Hit("v1", m.seq, m.author, m.purpose, match.start, match.end, n.text, n.kind,
                                    n.case_index, "keyword", True))
        return out

    def scan_v2(self, messages: Sequence[RecordMessage]) -> ScanResult:
        out = ScanResult()
        for m in messages:
            if m.text is None:
                continue
            out.texts += 1
            out.items += len(self.v2_needles)
            found = self._find(2, m.text)
            if found:
                out.hits += self._judge(m, found)
        return out

    def _judge(self, m: RecordMessage, found: list[matchers.Match]) -> list[Hit]:
        quoted = _quoted_output(m)
        hits: list[Hit] = []
        context: dict[int, list[tuple[matchers.Match, Needle]]] = {}
        for match in found:
            n = self.v2_needles[match.needle]
            if n.alone:
                rule = "call-expression" if n.kind == "call" else "piece" if n.kind == "piece" else "hidden-literal"
                hits.append(_hit(m, match, n, rule, quoted))
            else:
                context.setdefault(n.case_index, []).append((match, n))
        for case_index, matches in context.items():
            pair = _closest_pair(matches)
            if pair is not None:
                hits += [_hit(m, match, n, "pair", quoted) for match, n in pair]
        return hits


def _quoted_output(m: RecordMessage) -> list[tuple[int, int]]:
    if m.author != "harness" or m.purpose != "revision_feedback" or not m.text:
        return []
    return [match.span(1) for match in _GOT.finditer(m.text)]


def _hit(m: RecordMessage, match: matchers.Match, n: Needle, rule: str, quoted: list[tuple[int, int]]) -> Hit:
    if m.author != "harness":
        why = f"{m.author}-written" if m.author else "author-unknown"
    elif any(a <= match.start and match.end <= b for a, b in quoted):
        why = "model-output"
    else:
        why = ""
    return Hit("v2", m.seq, m.author, m.purpose, match.start, match.end, n.text, n.kind, n.case_index, rule,
               not why, why)


def _pairs(n: Needle) -> bool:
    """Can this input-side needle be one half of a pair? The argument list; one argument alone only when
    it is quoted or bracketed (``'ab'``, ``[3]``): a bare ``3`` next to ``5`` is any sentence with numbers."""
    if n.kind == "args":
        return True
    return n.kind == "arg" and n.text not in COMMON and n.text.startswith(_QUOTED)


def _closest_pair(matches: list[tuple[matchers.Match, Needle]]):
    """The input and output match of one case closest together (not overlapping), if within context."""
    inputs = [(mt, n) for mt, n in matches if _pairs(n)]
    outputs = [(mt, n) for mt, n in matches if n.side == "output"]
    best, best_gap = None, CONTEXT_CHARS + 1
    for a in inputs:
        for b in outputs:
            if a[0].start < b[0].end and b[0].start < a[0].end:
                continue  # one inside the other: `(1,)` holds `1`
            gap = max(a[0].start, b[0].start) - min(a[0].end, b[0].end)
            if gap < best_gap:
                best, best_gap = (a, b), gap
    return best
