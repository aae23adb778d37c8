"""Hidden material of a task: its GT cases rendered every way they could appear in text.

For each hidden case: the call expression ``f(a, b)``, the arguments as the feedback line spells them
(``(a, b)``; a list ``[a, b]`` as in spec files), each argument and the expected value alone
(canonical literal; a string also double-quoted and bare), and for long renderings their *pieces*:
aligned chunks of ``PIECE_CHARS``, so any fragment of at least ``2 * PIECE_CHARS - 1`` characters (a
value cut by the 120-character feedback truncation, or quoted in part) contains a whole chunk.

Public material is not hidden (SYSTEM.md section 4): a rendering that occurs in the task statement or in
a rendering of a visible (V) case is marked ``public``, and a case that V also holds is public whole.
Short or common renderings (``1``, ``True``, ``[]``) prove nothing alone: they are ``context`` needles
and count only as an input/expected *pair* of one case close together in one text (the call
expression always names the entry point, so it stands alone).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property

from acceptgate import literals
from acceptgate.suitespec import Case, SuiteSpec

MATERIAL_VERSION = "leak-material/1"
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
        return hashlib.sha256(json.dumps(doc, ensure_ascii=True).encode()).hexdigest()

    def hidden(self) -> list[Needle]:
        """The needles v2 looks for: not public."""
        return [n for n in self.needles if not n.public]


def call_text(entry_point: str, case: Case) -> str:
    parts = [literals.canonical(a) for a in case.args]
    parts += [f"{k}={literals.canonical(v)}" for k, v in case.kwargs.items()]
    return f"{entry_point}({', '.join(parts)})"


def args_texts(case: Case) -> list[str]:
    """The input as feedback (``(a,)``, with ``, **{...}`` for keywords) and spec files (``[a]``) spell it."""
    tup = literals.canonical(tuple(case.args))
    lst = literals.canonical(list(case.args))
    if case.kwargs:
        kw = ", **" + literals.canonical(case.kwargs)
        return [tup + kw, lst + kw]
    return [tup, lst]


def value_texts(value) -> list[str]:
    """A value alone: canonical; a string also double-quoted (JSON / other printers) and bare."""
    out = [literals.canonical(value)]
    if type(value) is str:
        out.append(json.dumps(value, ensure_ascii=False))
        if len(value) >= BARE_CHARS:  # a short bare word is prose, not evidence, even next to its pair
            out.append(value)
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
    if len(values) > 1:  # one argument alone is the args rendering without its brackets
        for v, _ in values:
            out += [(t, "arg", "input", i == 2) for i, t in enumerate(value_texts(v))]
    out += [(t, "expected", "output", i == 2) for i, t in enumerate(value_texts(case.expected))]
    chunks: dict[str, str] = {}
    for v, side in values + [(case.expected, "output")]:
        for text in value_texts(v):  # pieces of each value (canonical and bare): the call and the
            for p in pieces(text):   # argument list are made of these, so their pieces add nothing new
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
    """task id -> material, for tasks (``acceptgate.task.Task``) that have a hidden suite."""
    from acceptgate.task import HIDDEN, VISIBLE

    return {t.task_id: material_for(t.task_id, t.prompt, t.suites[HIDDEN], t.suites.get(VISIBLE))
            for t in tasks if HIDDEN in t.suites}
