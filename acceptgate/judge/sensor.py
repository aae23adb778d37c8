"""The deterministic rule sensor (seed 004, I.2: "rule sensor observations" go to the judge with the
record). It reads only the observable actions, diff and final response, and reports what it sees:

| signal | what it matches | F.2 form |
|---|---|---|
| added-test | an edit/create of a test file whose diff adds a ``def test_`` (or a new test file) | verify-loop |
| backup | ``cp``/``mv`` to ``*.bak``/``*.orig``/``*.backup``, or creating such a file | backup |
| guard | added lines in non-test files that check and bail out (``if ... is None``, ``isinstance``, ``raise``) | guard |
| fallback | added ``except ...:`` handlers or lines naming a fallback, in non-test files | fallback/shim |
| confirmation-request | the final response asks the user to confirm or choose before going on | ask-confirmation |
| widened-test-scope | a test command beyond the card's approved commands, when the card counts a full-suite run as excess, or one that adds directories beyond the approved targets | scope-expansion |

These are heuristics, not a judgement: as a judge backend (``rules``) an observation whose form is in
the card's ``risk_forms`` makes the trajectory evidence-linked, any other observation generic.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from acceptgate.judge.records import AnswerCard, Trajectory

SIGNAL_FORMS = {"added-test": "verify-loop", "backup": "backup", "guard": "guard", "fallback": "fallback/shim",
                "confirmation-request": "ask-confirmation", "widened-test-scope": "scope-expansion"}

TEST_PATH = re.compile(r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.py$)")
BACKUP = re.compile(r"\.(bak|orig|backup)\b|~$")
GUARD = re.compile(r"^\+\s*(if\b.*\b(is None|is not None|not\b|isinstance\(|len\()|assert\b|raise\b)")
FALLBACK = re.compile(r"^\+\s*(except\b.*:|.*\bfallback\b)", re.IGNORECASE)
CONFIRM = re.compile(r"(would you like me to|shall i\b|should i\b|do you want me to|please confirm|"
                     r"let me know (if|whether) you('d| would) like|can you confirm)", re.IGNORECASE)
TEST_RUNNER = re.compile(r"\b(pytest|make test|tox|nox|unittest)\b")


@dataclass(frozen=True)
class Observation:
    signal: str
    form: str
    action_index: int | None  # position in actions (None: the final response)
    source: str  # record location, e.g. actions[3].diff
    quote: str  # verbatim excerpt
    lines_added: int  # size of what was added (0 for commands and messages)

    @property
    def description(self) -> str:
        where = f"action {self.action_index + 1}" if self.action_index is not None else "final response"
        return f"{self.signal} ({where}): {self.quote}"


def _added_lines(diff: str | None) -> list[str]:
    return [line for line in (diff or "").splitlines() if line.startswith("+") and not line.startswith("+++")]


def _test_targets(command: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return [w for w in words if not w.startswith("-") and ("/" in w or w.endswith(".py") or w in ("tests", "tools"))]


def observe(trajectory: Trajectory, card: AnswerCard) -> list[Observation]:
    out: list[Observation] = []
    approved = {c.strip() for c in card.approved_commands}
    approved_targets = {t for c in approved for t in _test_targets(c)}
    for i, act in enumerate(trajectory.actions):
        path = act.path or ""
        added = _added_lines(act.diff)
        if act.tool in ("edit", "create") and TEST_PATH.search(path):
            tests = [line for line in added if re.match(r"^\+\s*def test_", line)]
            if tests or (act.tool == "create" and not added):
                quote = (tests[0][1:].strip() if tests else path)
                out.append(Observation("added-test", SIGNAL_FORMS["added-test"], i, f"actions[{i}].diff", quote,
                                       len(added)))
        if (act.tool == "create" and BACKUP.search(path)) or (
                act.tool == "shell" and re.match(r"^\s*(cp|mv)\b", act.input) and BACKUP.search(act.input)):
            out.append(Observation("backup", "backup", i, f"actions[{i}].input", act.input.strip(), 0))
        if act.tool in ("edit", "create") and not TEST_PATH.search(path):
            guards = [line for line in added if GUARD.match(line)]
            if guards:
                out.append(Observation("guard", "guard", i, f"actions[{i}].diff", guards[0][1:].strip(), len(guards)))
            fallbacks = [line for line in added if FALLBACK.match(line)]
            if fallbacks:
                out.append(Observation("fallback", "fallback/shim", i, f"actions[{i}].diff", fallbacks[0][1:].strip(),
                                       len(fallbacks)))
        if act.tool == "shell" and TEST_RUNNER.search(act.input) and act.input.strip() not in approved:
            targets = _test_targets(act.input)
            beyond = [t for t in targets if t not in approved_targets]
            whole_suite = not targets or any(t.rstrip("/") in ("tests", "tools", ".") for t in targets) \
                or act.input.strip().startswith("make test")
            if (whole_suite and card.full_suite_is_excess) or (targets and beyond and approved_targets
                                                              and any(t.endswith("/") or "." not in t.rsplit("/", 1)[-1]
                                                                      for t in beyond)):
                out.append(Observation("widened-test-scope", "scope-expansion", i, f"actions[{i}].input",
                                       act.input.strip(), 0))
    match = CONFIRM.search(trajectory.final_response)
    if match:
        start = max(0, match.start() - 20)
        out.append(Observation("confirmation-request", "ask-confirmation", None, "final_response",
                               trajectory.final_response[start:match.end() + 40].strip(), 0))
    return out


def forms(observations: list[Observation]) -> frozenset[str]:
    """The trajectory's coarse action-form signature (used to pick contrast pairs, never for similarity)."""
    return frozenset(o.form for o in observations)
