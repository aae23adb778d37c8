"""Two scanners over one record's messages, side by side (SYSTEM.md section 4).

**v1 keyword** (the seed's first scanner): any rendering of a hidden case of at least
``V1_MIN_CHARS`` characters, found in any text by anyone, is a hit. It cannot tell a literal the task
statement already shows, or one the model wrote itself, from a leak: that is why it raised false alarms.

**v2 authorship**: looks only for material that is hidden (not in the statement or V, see
``material``), and a hit is a *violation* only in text the harness wrote. Hits in task-author or model
text are stored with their rule and are not violations; so is a hit inside the ``got=`` value of a
revision-feedback line (that value is the candidate program's own output, quoted), and a match wholly
in the fixed words of the harness's own template (``AssertionError`` of the feedback line: a hidden
value that happens to be a template word, ``templates``); in a value slot of a harness text it is judged
as anywhere else. Every text is also read in its JSON-unescaped views (``unescape``), so every JSON
spelling of a value (``\\u00e9``, surrogate pairs, ``\\/``, nested) is found. Short or common
renderings count only in context: the argument list and the expected rendering of the same hidden case
within ``CONTEXT_CHARS`` of each other in one text (rule ``pair``); lone short matches are counted as
comparison items but are not hits.

Comparison items: (text, needle) pairs compared, i.e. texts scanned x needles of the task.

What is kept (``RuleSummary``, per record, scanner and rule): the places matched (message, offsets,
material; one per place however many hidden cases share the text), violations, messages, hidden
cases, the first ``FIRST_OFFSETS`` places and the distinct material matched. v2 also keeps every hit
(``Hit``, one per place and hidden case); v1's keyword flood (``True`` in every text, shared by
hundreds of cases) is kept only as its summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from acceptgate.leak import matcher as matchers
from acceptgate.leak import templates, unescape
from acceptgate.leak.material import COMMON, Needle, TaskMaterial
from acceptgate.leak.records import RecordMessage

SCANNER_VERSION = "leak-scan/2"  # /2: JSON-unescaped views; a harness template's fixed words excused
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
    #                    | template-words


FIRST_OFFSETS = 5  # places kept per record and rule
NEEDLES_KEPT = 50  # distinct material kept per record and rule (all are counted)


@dataclass
class RuleSummary:
    """One record's matches of one rule."""

    hits: int = 0  # places: (message, offsets, material)
    violations: int = 0
    messages: set[int] = field(default_factory=set)
    cases: set[int] = field(default_factory=set)
    first: list[tuple[int, int, int]] = field(default_factory=list)  # (seq, start, end), first places
    needles: dict[str, None] = field(default_factory=dict)  # distinct material, in order of first match

    def add_place(self, seq: int, start: int, end: int, needle: str) -> None:
        self.hits += 1
        self.messages.add(seq)
        if len(self.first) < FIRST_OFFSETS:
            self.first.append((seq, start, end))
        self.needles.setdefault(needle, None)


@dataclass
class ScanResult:
    hits: list[Hit] = field(default_factory=list)  # v2: every hit; v1: none (its summary only)
    items: int = 0
    texts: int = 0
    rules: dict[str, RuleSummary] = field(default_factory=dict)

    @property
    def violations(self) -> list[Hit]:
        return [h for h in self.hits if h.violation]

    @property
    def count(self) -> int:
        """Places matched (one per message, offsets and material)."""
        return sum(r.hits for r in self.rules.values())


@dataclass(frozen=True)
class _TextMatches:
    """v1's matches in one text, summarised once per text (cached): a record adds them up."""

    places: int
    first: tuple[tuple[int, int], ...]  # (start, end) of the first FIRST_OFFSETS places, in text order
    needles: dict[str, None]  # distinct material, in order of first match
    cases: frozenset[int]


class TaskScanner:
    """v1 and v2 for one task: the needle lists and their matchers, built once per scan."""

    def __init__(self, material: TaskMaterial, matcher_name: str = matchers.DEFAULT) -> None:
        self.material = material
        self.matcher_name = matcher_name
        self.v1_needles: list[Needle] = [n for n in material.needles if len(n.text) >= V1_MIN_CHARS]
        self.v2_needles: list[Needle] = material.hidden()
        # One automaton over the task's distinct texts serves both scanners (one pass per text, half
        # the memory of two): v1 counts a text shared by many hidden cases once, v2 judges per case.
        index: dict[str, int] = {}
        for n in material.needles:
            index.setdefault(n.text, len(index))
        self._texts = list(index)
        v1_cases: list[set[int] | None] = [None] * len(index)
        for n in self.v1_needles:
            i = index[n.text]
            v1_cases[i] = (v1_cases[i] or set()) | {n.case_index}
        self._v1_cases = [frozenset(c) if c is not None else None for c in v1_cases]
        v2_ids: list[list[int]] = [[] for _ in index]
        for j, n in enumerate(self.v2_needles):
            v2_ids[index[n.text]].append(j)
        self._v2_ids = [tuple(ids) for ids in v2_ids]
        self._matcher = matchers.build(matcher_name, self._texts)
        # The same text recurs (the statement in every attempt, harness boilerplate): match it once.
        # Bounded: the audit clears it between batches (``forget``).
        self._seen: dict[str, tuple[_TextMatches, list[matchers.Match]]] = {}

    def forget(self) -> None:
        self._seen.clear()

    def _matches(self, text: str) -> list[matchers.Match]:
        """Every match in the text as written and in its JSON-unescaped views (``unescape``), with the
        text's own offsets: a value JSON wrote as ``"\\u00e9clair"`` is found like ``"éclair"``."""
        found = self._matcher.find(text)
        views = unescape.views(text)
        if not views:
            return found
        places = {(m.start, m.end, m.needle) for m in found}
        for view in views:
            for m in self._matcher.find(view.text):
                start, end = view.span(m.start, m.end)
                if (start, end, m.needle) not in places:
                    places.add((start, end, m.needle))
                    found.append(matchers.Match(start, end, m.needle))
        return found

    def _find(self, text: str) -> tuple[_TextMatches, list[matchers.Match]]:
        found = self._seen.get(text)
        if found is None:
            v1, v2 = [], []
            for m in self._matches(text):
                if self._v1_cases[m.needle] is not None:
                    v1.append((m.start, m.end, m.needle))
                v2 += [matchers.Match(m.start, m.end, j) for j in self._v2_ids[m.needle]]
            v1.sort()
            ids = dict.fromkeys(i for _, _, i in v1)
            found = (_TextMatches(len(v1), tuple((a, b) for a, b, _ in v1[:FIRST_OFFSETS]),
                                  {self._texts[i]: None for i in ids},
                                  frozenset().union(*(self._v1_cases[i] for i in ids))), v2)
            self._seen[text] = found
        return found

    def scan_v1(self, messages: Sequence[RecordMessage]) -> ScanResult:
        out = ScanResult()
        summary = RuleSummary()
        for m in messages:
            if m.text is None:
                continue
            out.texts += 1
            out.items += len(self.v1_needles)
            found = self._find(m.text)[0]
            if found.places:
                summary.hits += found.places
                summary.messages.add(m.seq)
                if len(summary.first) < FIRST_OFFSETS:
                    summary.first += [(m.seq, a, b) for a, b in found.first[:FIRST_OFFSETS - len(summary.first)]]
                summary.needles.update(found.needles)
                summary.cases |= found.cases
        if summary.hits:
            out.rules["keyword"] = summary
        return out

    def scan_v2(self, messages: Sequence[RecordMessage]) -> ScanResult:
        out = ScanResult()
        for m in messages:
            if m.text is None:
                continue
            out.texts += 1
            out.items += len(self.v2_needles)
            found = self._find(m.text)[1]
            if found:
                out.hits += self._judge(m, found)
        out.rules = summarise(out.hits)
        return out

    def _judge(self, m: RecordMessage, found: list[matchers.Match]) -> list[Hit]:
        quoted = _quoted_output(m)
        words = templates.template_words(m.purpose, m.text) if m.author == "harness" and m.text else []
        hits: list[Hit] = []
        context: dict[int, list[tuple[matchers.Match, Needle]]] = {}
        for match in found:
            n = self.v2_needles[match.needle]
            if n.alone:
                rule = "call-expression" if n.kind == "call" else "piece" if n.kind == "piece" else "hidden-literal"
                hits.append(_hit(m, match, n, rule, quoted, words))
            else:
                context.setdefault(n.case_index, []).append((match, n))
        for case_index, matches in context.items():
            pair = _closest_pair(matches)
            if pair is not None:
                hits += [_hit(m, match, n, "pair", quoted, words) for match, n in pair]
        return hits


def summarise(hits: Sequence[Hit]) -> dict[str, RuleSummary]:
    """Per rule: places (a place matched for several hidden cases is one), violations, the rest."""
    out: dict[str, RuleSummary] = {}
    places: set[tuple] = set()
    for h in hits:
        summary = out.setdefault(h.rule, RuleSummary())
        place = (h.rule, h.seq, h.start, h.end, h.needle)
        if place not in places:
            places.add(place)
            summary.add_place(h.seq, h.start, h.end, h.needle)
            summary.violations += h.violation
        summary.cases.add(h.case_index)
    return out


def _quoted_output(m: RecordMessage) -> list[tuple[int, int]]:
    if m.author != "harness" or m.purpose != "revision_feedback" or not m.text:
        return []
    return [match.span(1) for match in _GOT.finditer(m.text)]


def _hit(m: RecordMessage, match: matchers.Match, n: Needle, rule: str, quoted: list[tuple[int, int]],
         words: list[tuple[int, int]] = ()) -> Hit:
    if m.author != "harness":
        why = f"{m.author}-written" if m.author else "author-unknown"
    elif any(a <= match.start and match.end <= b for a, b in quoted):
        why = "model-output"
    elif templates.in_template_words(words, match.start, match.end):
        why = "template-words"  # the harness's fixed words (``AssertionError``), not a value it wrote
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
