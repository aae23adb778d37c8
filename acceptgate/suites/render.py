"""Deterministic renderer: SuiteSpec -> harness program text -> render_hash.

The rendered program is what the trusted harness process holds (``harness_for``): the prelude's
comparison rules, the dialect's ``compare``, and ``CASES`` as canonical literals. It is built only
from canonical spellings, so its bytes -- and ``render_hash`` -- do not depend on hash seed, locale,
platform or the order sets were written in. ``harness_for`` runs the program's definitions (compiled
once per dialect) and takes ``CASES`` from the spec's values, which are what Python evaluates their
canonical spellings to (``literals``): compiling 10^5 cases' literals again would cost seconds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable

from acceptgate.suites import dialects
from acceptgate._util.hashing import sha256_text

# ``SuiteSpec`` in the annotations is suitespec.SuiteSpec, not imported: suitespec imports this module
# (for render_hash), and annotations are never evaluated here.
RENDERER_VERSION = "acceptgate-harness/1"


@functools.cache
def _prelude() -> str:
    raw = resources.files("acceptgate.suites").joinpath("harness_prelude.py").read_bytes()
    # A checkout with CRLF line endings must still render the same bytes.
    return raw.decode("utf-8").replace("\r\n", "\n")


def render(spec: SuiteSpec) -> str:
    head = [
        f"# {RENDERER_VERSION} -- generated from a SuiteSpec; do not edit.",
        f"# dialect: {spec.dialect}",
        f"# entry_point: {spec.entry_point}",
        f"# spec_hash: {spec.spec_hash}",
        "",
    ]
    body = [*_definitions(spec.dialect, spec.entry_point), "", "", "CASES = ["]
    body += [f"    ({c.args_text}, {c.kwargs_text}, {c.expected_text})," for c in spec.cases]
    body.append("]")
    return "\n".join(head) + _prelude() + "\n".join(body) + "\n"


def _definitions(dialect: str, entry_point: str) -> list[str]:
    """The program's lines between the prelude and ``CASES``."""
    return ["", f"DIALECT = {dialect!r}", f"ENTRY_POINT = {entry_point!r}", "", "",
            dialects.get(dialect).compare_source.rstrip("\n")]


def render_hash(text: str) -> str:
    return sha256_text(text)


@dataclass(frozen=True)
class Harness:
    """A loaded harness: what the trusted side of an execution holds (and the candidate never)."""

    entry_point: str
    dialect: str
    cases: list[tuple[tuple, dict, Any]]
    compare: Callable[[Any, Any], bool]
    render_hash: str
    spec_hash: str
    # judge(got, want, args, kwargs): the verdict of one case. Check dialects (dialects.py) judge with
    # the call's arguments; for value dialects it is compare(got, want).
    judge: Callable[[Any, Any, tuple, dict], bool] | None = None
    # The dialect judges a non-literal result as an opaque non-None value (NONLITERAL) instead of
    # making it a protocol error (only the not-None rule; see dialects.py).
    nonliteral_judged: bool = False

    def __post_init__(self) -> None:
        if self.judge is None:
            compare = self.compare
            object.__setattr__(self, "judge", lambda got, want, args, kwargs: compare(got, want))

    @functools.cached_property
    def result_limit(self) -> int:
        """Bytes beyond which a result cannot equal any expected value here (so it is not parsed)."""
        return max(self.result_limits, default=RESULT_FLOOR)

    @functools.cached_property
    def result_limits(self) -> tuple[int, ...]:
        """Each case's bound on the answer's bytes, from the length of the literal its expected value is
        (or stands for: a digest records it, ``Dialect.expected_chars``).

        A repr is at most a few times its canonical spelling (a float's repr against a short
        tolerance target is the worst case); parsing a huge hostile result costs the trusted side memory.
        """
        from acceptgate.suites.literals import canonical

        sized = dialects.get(self.dialect).expected_chars or (lambda want: len(canonical(want)))
        return tuple(max(RESULT_FLOOR, 8 * sized(want)) for _, _, want in self.cases)


RESULT_FLOOR = 1024 * 1024


@functools.cache
def _judging(dialect: str) -> dict[str, Any]:
    """The rendered program's definitions for a dialect (the prelude and its comparison), run once in
    the trusted process; they do not read ``ENTRY_POINT`` or ``CASES``."""
    namespace: dict[str, Any] = {"__name__": "acceptgate_harness"}
    text = _prelude() + "\n".join(_definitions(dialect, "f")) + "\n"
    exec(compile(text, f"<harness definitions {dialect}>", "exec"), namespace)  # our own render
    return namespace


class _NonLiteral:
    """Stands for a candidate's non-literal result where the dialect only asks whether it is None."""

    def __repr__(self) -> str:
        return "<a non-literal result>"


NONLITERAL = _NonLiteral()


def harness_for(spec: SuiteSpec) -> Harness:
    namespace = _judging(spec.dialect)
    return Harness(
        entry_point=spec.entry_point,
        dialect=spec.dialect,
        cases=[(c.args, c.kwargs, c.expected) for c in spec.cases],
        compare=namespace["compare"],
        render_hash=spec.render_hash,
        spec_hash=spec.spec_hash,
        judge=namespace.get("judge"),
        nonliteral_judged=namespace.get("NONLITERAL_JUDGED") is True,
    )
