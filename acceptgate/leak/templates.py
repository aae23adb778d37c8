"""The harness's own message templates, and which characters of a harness text are template words.

The harness writes every text from a template: the feedback line ``AssertionError: args=… got=… want=…``
(``acceptgate.gates.feedback``), the generation prompt's import line and check-by-hand line, selection
and stop lines. A hidden value that happens to be a word of a template (an input ``'AssertionError'``,
a string ``"visible suite"``) is in every such text without anything having leaked: authorship (SYSTEM.md
section 4) judges what the harness *wrote into a slot*, not the fixed words around the slots. So a match
that lies wholly in a template's fixed words is no violation; a match that touches a value slot is judged
as any other. A harness text that matches no template is judged whole (nothing is excused).

Each template is a regular expression over the whole text (``fullmatch``); its named groups are the
value slots, which absorb whatever varies (a value, an exception's message, a source's error text, and
any text appended after them), so only the fixed words are ever excused.
"""

from __future__ import annotations

import re

from acceptgate.gates import feedback
from acceptgate.gates.hmix import CHECK_BY_HAND, imports_line

# No template writes more (a feedback line is at most ~700 characters): a longer harness text is judged
# whole, and the templates' lazy groups never see an unbounded text (a record from a history file).
MAX_CHARS = 2048
_IDENT = r"[A-Za-z_][A-Za-z0-9_.]*"  # an exception type, as the feedback line names it
_DOTALL = re.DOTALL


def _re(pattern: str) -> re.Pattern:
    return re.compile(pattern, _DOTALL)


# purpose -> the templates of harness texts with that purpose
TEMPLATES: dict[str, tuple[re.Pattern, ...]] = {
    "revision_feedback": (
        _re(rf"{_IDENT}: args=(?P<args>.*?) got=(?P<got>.*?) want=(?P<want>.*)"),  # a wrong answer
        _re(rf"{_IDENT}: The code cannot load: (?P<message>.*)"),  # precheck
        _re(rf"{_IDENT}: (?P<message>.*) args=(?P<args>.*?) want=(?P<want>.*)"),  # an error on a case
        _re(rf"{_IDENT}: (?P<message>.*)"),  # a load error, timeout or crash of the whole run
        _re(re.escape(feedback.DIFFERENT_APPROACH)),
    ),
    "generation": (
        _re(re.escape(imports_line(("@@",))).replace("@@", r"[A-Za-z0-9_.]+(?:, [A-Za-z0-9_.]+)*")),
        _re(re.escape(CHECK_BY_HAND)),
    ),
    "selection": (
        _re(r"attempt \d+: (?:precheck [\w-]+|(?:precheck ok, )?visible suite \w+ \(\d+/\d+ cases\))"
            r"(?:; signature [\w|-]+)?"),
    ),
    "stop_decision": (
        _re(r"\w+: (?:generator failed|source exhausted): (?P<error>.*)"),
        _re(r"\w+: (?:attempt \d+ passed the visible suite|no candidate passed the visible suite in \d+ draws"
            r"|source exhausted after \d+ draws|source has no candidate|first candidate \(no gate\)"
            r"|same failure signature as the previous round \(second repeat\))"),
    ),
}


def template_words(purpose: str, text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that are a template's fixed words, if a template of ``purpose`` matches the
    whole text (the first that does); [] otherwise."""
    if len(text) > MAX_CHARS:
        return []
    for template in TEMPLATES.get(purpose, ()):
        m = template.fullmatch(text)
        if m is None:
            continue
        slots = sorted(m.span(g) for g in m.groupdict() if m.start(g) >= 0)
        out, at = [], 0
        for start, end in slots:
            if start > at:
                out.append((at, start))
            at = max(at, end)
        if at < len(text):
            out.append((at, len(text)))
        return out
    return []


def in_template_words(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``start:end`` lies wholly inside one of the fixed-word spans."""
    return any(a <= start and end <= b for a, b in spans)
