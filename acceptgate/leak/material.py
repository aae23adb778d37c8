"""Hidden material of a task: its GT cases rendered every way they could appear in text.

The spellings of each hidden case (docs/leak-audit.md):
- the call expression ``f(a, b)``;
- the argument list as the feedback line spells it (``(a, b)``, ``(a,)`` for one argument) and as spec
  files do (``[a, b]``), plus its JSON spelling (``["a", 2]``) when that differs;
- **every value alone** -- each argument (also of a one-argument task) and the expected value: the
  canonical literal (Python's repr: ``'abc'``), the double-quoted JSON spelling (``"abc"``,
  ``["a", "b"]``) when it differs, and for a string of at least ``BARE_CHARS`` characters its bare
  content;
- *pieces* of long renderings: aligned chunks of ``PIECE_CHARS``, so any fragment of at least
  ``2 * PIECE_CHARS - 1`` characters (a value cut by the 120-character feedback truncation, or quoted in
  part) contains a whole chunk.

Public material is not hidden (SYSTEM.md section 4): a rendering that occurs in the task statement or in
a rendering of a visible (V) case is marked ``public``, and a case that V also holds is public whole.
Short or common renderings (``1``, ``True``, ``[]``) prove nothing alone: they are ``context`` needles
and count only as an input/expected *pair* of one case close together in one text (the call
expression always names the entry point, so it stands alone). The same rule holds for one argument
alone: a short one counts only next to its case's expected value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

from acceptgate._util.hashing import sha256_text
from acceptgate.suites import literals
from acceptgate.suites.suitespec import Case, SuiteSpec

MATERIAL_VERSION = "leak-material/2"  # /2: every value alone, JSON spellings
ALONE_CHARS = 8  # a quoted/canonical rendering this long stands alone
BARE_CHARS = 12  # an unquoted string's content must be longer: bare words occur in prose
PIECE_CHARS = 24
COMMON = frozenset({"None", "True", "False", "''", '""', "[]", "()", "{}", "set()", "b''", "0", "1", "-1",
                    "0.0", "1.0", "[0]", "[1]", "(0,)", "(1,)"})

# Rendering kinds. 'args' and 'arg' are a case's input side, 'expected' its output side.
KINDS = ("call", "args", "arg", "expected", "piece")


@dataclass(frozen=True)
class Needle:
    text: str
    kind: str  # one of KINDS
    case_index: int  # index of the hidden case in the GT suite
    side: str  # input | output | both (call)
    alone: bool  # distinctive enough to count alone (else: only as a pair)
    public: bool  # occurs in the statement or in V: not hidden


@dataclass
class TaskMaterial:
    task_id: str
    entry_point: str
    hidden_spec_hash: str
    visible_spec_hash: str
    needles: list[Needle]
    public_cases: frozenset[int] = field(default_factory=frozenset)  # hidden cases V also holds

    @cached_property
    def sha256(self) -> str:
        """Of everything a scan of this task depends on (version, both suites, the renderings)."""
        doc = [MATERIAL_VERSION, self.task_id, self.hidden_spec_hash, self.visible_spec_hash,
               [(n.text, n.kind, n.case_index, n.alone, n.public) for n in self.needles]]
        return sha256_text(json.dumps(doc, ensure_ascii=True))

    def hidden(self) -> list[Needle]:
        """The needles v2 looks for: not public."""
        return [n for n in self.needles if not n.public]


def call_text(entry_point: str, case: Case) -> str:
    parts = [literals.canonical(a) for a in case.args]
    parts += [f"{k}={literals.canonical(v)}" for k, v in case.kwargs.items()]
    return f"{entry_point}({', '.join(parts)})"


def args_texts(case: Case) -> list[str]:
    """The input as feedback (``(a,)``, with ``, **{...}`` for keywords), spec files (``[a]``) and JSON
    (``["a"]``) spell it."""
    tup = literals.canonical(tuple(case.args))
    lst = literals.canonical(list(case.args))
    out = [tup, lst]
    doc = json_text(list(case.args))
    if doc is not None and doc != lst:
        out.append(doc)
    if case.kwargs:
        kw = ", **" + literals.canonical(case.kwargs)
        return [t + kw for t in out]
    return out


def json_text(value) -> str | None:
    """The double-quoted (JSON) spelling of a value, or None when JSON has none (bytes, sets, inf, ...)."""
    try:
        return json.dumps(_jsonable(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _jsonable(value):
    if type(value) in (list, tuple):
        return [_jsonable(v) for v in value]
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            raise TypeError("JSON object keys are strings")
        return {k: _jsonable(v) for k, v in value.items()}
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise TypeError(type(value).__name__)


def value_texts(value) -> list[tuple[str, bool]]:
    """(text, bare) of a value alone: canonical; its JSON spelling when different (a string
    double-quoted, a list of strings ``["a"]``); a long enough string also bare."""
    canonical = literals.canonical(value)
    out = [(canonical, False)]
    doc = json_text(value)
    if doc is not None and doc != canonical:
        out.append((doc, False))
    if type(value) is str and len(value) >= BARE_CHARS:  # a short bare word is prose, not evidence
        out.append((value, True))
    return out


def pieces(text: str) -> list[str]:
    if len(text) < 2 * PIECE_CHARS:
        return []
    return [text[i:i + PIECE_CHARS] for i in range(0, len(text) - PIECE_CHARS + 1, PIECE_CHARS)]


def _alone(text: str, kind: str, bare: bool) -> bool:
    if kind in ("call", "piece"):
        return True
    if text in COMMON:
        return False
    return len(text) >= (BARE_CHARS if bare else ALONE_CHARS)


def case_renderings(entry_point: str, case: Case) -> list[tuple[str, str, str, bool]]:
    """(text, kind, side, bare) of one case: call, arguments, values alone, then pieces of long values."""
    out = [(call_text(entry_point, case), "call", "both", False)]
    out += [(t, "args", "input", False) for t in args_texts(case)]
    values = [(v, "input") for v in list(case.args) + list(case.kwargs.values())]
    for v, _ in values:  # every argument alone, also the only one of a one-argument task
        out += [(t, "arg", "input", bare) for t, bare in value_texts(v)]
    out += [(t, "expected", "output", bare) for t, bare in value_texts(case.expected)]
    chunks: dict[str, str] = {}
    for v, side in values + [(case.expected, "output")]:
        for text, _ in value_texts(v):  # pieces of each value (every spelling): the call and the
            for p in pieces(text):      # argument list are made of these, so their pieces add nothing new
                chunks.setdefault(p, side)
    out += [(p, "piece", side, False) for p, side in chunks.items()]
    return out


def public_text(prompt: str, visible: SuiteSpec | None) -> str:
    """The statement and every rendering of every visible case: what a generator may see."""
    parts = [prompt]
    if visible is not None:
        for case in visible.cases:
            parts += [r[0] for r in case_renderings(visible.entry_point, case)]
    return "\n\x00\n".join(parts)  # a separator no rendering spans


def material_for(task_id: str, prompt: str, hidden: SuiteSpec, visible: SuiteSpec | None) -> TaskMaterial:
    public = public_text(prompt, visible)
    visible_cases = set()
    if visible is not None:
        visible_cases = {(c.args_text, c.kwargs_text, c.expected_text) for c in visible.cases}
    needles: list[Needle] = []
    seen: set[tuple[str, int, str]] = set()
    public_cases = set()
    for index, case in enumerate(hidden.cases):
        whole_public = (case.args_text, case.kwargs_text, case.expected_text) in visible_cases
        if whole_public:
            public_cases.add(index)
        for text, kind, side, bare in case_renderings(hidden.entry_point, case):
            if (text, index, side) in seen or not text:  # one text may be both an input and the output
                continue
            seen.add((text, index, side))
            needles.append(Needle(text, kind, index, side, _alone(text, kind, bare),
                                  whole_public or text in public))
    return TaskMaterial(task_id, hidden.entry_point, hidden.spec_hash,
                        visible.spec_hash if visible is not None else "", needles, frozenset(public_cases))


def materials_for_tasks(tasks) -> dict[str, TaskMaterial]:
    """task id -> material, for tasks (``acceptgate.datasets.task.Task``) that have a hidden suite."""
    from acceptgate.datasets.task import HIDDEN, VISIBLE

    return {t.task_id: material_for(t.task_id, t.prompt, t.suites[HIDDEN], t.suites.get(VISIBLE))
            for t in tasks if HIDDEN in t.suites}
