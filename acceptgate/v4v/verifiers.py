"""The verifier interface and the built-in verifiers, by name.

A verifier takes a candidate and returns a Decision: PASS, FAIL, or ERROR with its kind (crash,
timeout, malformed). An ERROR is never a correct rejection: it stays in every denominator with no
credit, and execution health counts it apart.

Suite verifiers (V = the visible suite, GT = the hidden suite of a task) do not execute anything
themselves: they decide from a candidate's per-case outputs on their suite (``runs.SuiteRun``), so the
one execution serves the verifier and all its mutants. How a suite run maps to a decision:

- every case answered with a value the (possibly mutated) comparison accepts -> PASS;
- the program did not load, a case raised, returned a wrong or non-literal value, or the run broke
  the framing protocol -> FAIL: the suite decided, the candidate broke its contract;
- the run timed out, ran out of memory or crashed -> ERROR (timeout / crash): no decision was reached.

This is the executor's verdict mapping (pass -> PASS; fail, error, protocol -> FAIL; timeout, memory,
crash -> ERROR); ``tests/test_v4v_runs.py`` checks the derived decision against ``execute()``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from acceptgate.suites import literals
from acceptgate._util.hashing import sha256_text

from acceptgate.v4v.candidates import normalise  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from acceptgate.v4v.candidates import PoolCandidate, TaskMaterial
    from acceptgate.v4v.runs import SuiteRun

PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"
OUTCOMES = (PASS, FAIL, ERROR)
ERROR_KINDS = ("crash", "timeout", "malformed")
VERSION = "acceptgate-v4v/1"


@dataclass(frozen=True)
class Decision:
    outcome: str  # PASS | FAIL | ERROR
    error_kind: str | None = None  # crash | timeout | malformed, for ERROR only
    reason: str = ""  # e.g. "case 3: wrong value", "case 0: raised ValueError"
    by_exception: bool = False  # a FAIL reached because the candidate raised (execution health)

    @property
    def valid(self) -> bool:
        return self.outcome in (PASS, FAIL)

    @property
    def label(self) -> str:
        return self.outcome if self.outcome != ERROR else f"ERROR:{self.error_kind}"


def error(kind: str, reason: str = "") -> Decision:
    if kind not in ERROR_KINDS:
        raise ValueError(f"unknown error kind {kind!r}; valid kinds: {', '.join(ERROR_KINDS)}")
    return Decision(ERROR, kind, reason)


@dataclass(frozen=True)
class Binding:
    """What a decision is bound to (the provenance gate checks every field is there and matches)."""

    verifier_version: str
    spec_hash: str | None  # the suite's spec hash, or the hash of what stands for a spec (gold, program)
    render_hash: str | None  # the rendered harness, or the verifier program's hash


class Verifier(ABC):
    """A verifier of one task's candidates. ``suite`` names the suite it decides from, if any."""

    name: str = ""
    family: str = ""  # suite | baseline | external
    suite: str | None = None

    @abstractmethod
    def binding(self, task: "TaskMaterial") -> Binding:
        """The hashes every decision on this task is bound to."""

    @abstractmethod
    def decide(self, candidate: "PoolCandidate", task: "TaskMaterial", run: "SuiteRun | None") -> Decision:
        """Decide one candidate; ``run`` is the candidate's run on ``self.suite`` (None if no suite)."""

    def prepare(self, materials: list["TaskMaterial"]) -> None:
        """Called once before any decision (an external verifier computes what it needs per task)."""

    def close(self) -> None:
        """Release what ``prepare`` made."""


# -- comparisons -----------------------------------------------------------------------------------

def _loose_numbers(got: Any, want: Any) -> bool:
    tg, tw = type(got), type(want)
    if tg in (int, float) and tw in (int, float):
        return abs(got - want) <= 1
    if tg in (list, tuple) and tw in (list, tuple):
        return len(got) == len(want) and all(_loose_numbers(g, w) for g, w in zip(got, want))
    return got == want


# A weakened comparison accepts whatever the dialect accepts, and more (so only cases the dialect
# rejected need comparing again).
WEAKENINGS: dict[str, Callable[[Any, Any], bool]] = {
    "truthiness": lambda got, want: bool(got) == bool(want),
    "type-only": lambda got, want: type(got) is type(want),
    "numbers-within-1": _loose_numbers,
}


def _total(compare: Callable[[Any, Any], bool], got: Any, want: Any) -> bool:
    """A comparison that cannot raise: an exception is a mismatch, as in the executor's verdicts."""
    try:
        return bool(compare(got, want))
    except Exception:  # noqa: BLE001  (any comparison failure is that case's fail)
        return False


@dataclass(frozen=True)
class SuiteMutation:
    """One change to one check of a suite verifier (the mutation gate)."""

    operator: str  # drop-case | perturb-expected | weaken-comparison
    case: int | None = None  # the case dropped or perturbed
    expected_text: str | None = None  # the perturbed expected value, canonical
    weakening: str | None = None

    @property
    def mutant_id(self) -> str:
        if self.operator == "weaken-comparison":
            return f"weaken:{self.weakening}"
        if self.operator == "drop-case":
            return f"drop:{self.case}"
        return f"perturb:{self.case}:{sha256_text(self.expected_text or '')[:8]}"


class SuiteVerifier(Verifier):
    """V or GT of a task, optionally mutated; decides from the candidate's per-case outputs."""

    family = "suite"

    def __init__(self, name: str, suite: str, mutation: SuiteMutation | None = None) -> None:
        self.name = name
        self.suite = suite
        self.mutation = mutation
        self._perturbed: Any = None
        if mutation is not None and mutation.operator == "perturb-expected":
            self._perturbed = literals.parse(mutation.expected_text or "None")

    def binding(self, task: "TaskMaterial") -> Binding:
        spec = task.suites.get(self.suite)
        harness = task.harnesses.get(self.suite)
        version = VERSION + ":suite" + (f":{self.mutation.mutant_id}" if self.mutation else "")
        return Binding(version, spec.spec_hash if spec else None, harness.render_hash if harness else None)

    def decide(self, candidate: "PoolCandidate", task: "TaskMaterial", run: "SuiteRun | None") -> Decision:
        if run is None:
            return error("crash", f"no run of {candidate.candidate_id} on {self.suite}")
        if run.load_error is not None:
            return Decision(FAIL, reason=f"did not load: {run.load_error}", by_exception=True)
        if run.broken is not None:
            status, detail = run.broken
            if status == "protocol":
                return Decision(FAIL, reason=f"protocol: {detail}")
            return error("timeout" if status == "timeout" else "crash", f"{status}: {detail}")
        harness = task.harnesses[self.suite]
        m = self.mutation
        for index in run.failing:
            if m is not None and m.operator == "drop-case" and index == m.case:
                continue
            status = run.statuses[index]
            if status == "memory":
                return error("crash", f"case {index}: out of memory")
            if status != "ok":
                return Decision(FAIL, reason=f"case {index}: {status}", by_exception=True)
            if m is not None and m.operator == "weaken-comparison":
                if _total(WEAKENINGS[m.weakening], run.values[index], harness.cases[index][2]):
                    continue
            if m is not None and m.operator == "perturb-expected" and index == m.case:
                if _total(harness.compare, run.values[index], self._perturbed):
                    continue
            return Decision(FAIL, reason=f"case {index}: wrong value")
        if m is not None and m.operator == "perturb-expected" and m.case not in run.failing \
                and m.case < len(run.values):
            if not _total(harness.compare, run.values[m.case], self._perturbed):
                return Decision(FAIL, reason=f"case {m.case}: wrong value")
        return Decision(PASS, reason="all cases pass")


class AlwaysAccept(Verifier):
    name, family = "always-accept", "baseline"

    def binding(self, task: "TaskMaterial") -> Binding:
        return Binding(VERSION + ":always-accept", task.gold_sha256, None)

    def decide(self, candidate, task, run) -> Decision:
        return Decision(PASS, reason="accepts everything")


class AlwaysReject(Verifier):
    name, family = "always-reject", "baseline"

    def binding(self, task: "TaskMaterial") -> Binding:
        return Binding(VERSION + ":always-reject", task.gold_sha256, None)

    def decide(self, candidate, task, run) -> Decision:
        return Decision(FAIL, reason="rejects everything")


class GoldExactMatch(Verifier):
    """Accepts only a candidate whose normalised text equals the gold's."""

    name, family = "gold-exact-match", "baseline"

    def binding(self, task: "TaskMaterial") -> Binding:
        return Binding(VERSION + ":gold-exact-match", task.gold_sha256, None)

    def decide(self, candidate, task, run) -> Decision:
        if normalise(candidate.source) == task.gold_normalised:
            return Decision(PASS, reason="equal to the gold after normalisation")
        return Decision(FAIL, reason="differs from the gold after normalisation")


# -- registry ----------------------------------------------------------------------------------------

_REGISTRY: dict[str, Callable[[], Verifier]] = {
    "V": lambda: SuiteVerifier("V", "visible"),
    "GT": lambda: SuiteVerifier("GT", "hidden"),
    "always-accept": AlwaysAccept,
    "always-reject": AlwaysReject,
    "gold-exact-match": GoldExactMatch,
}
BUILTIN = tuple(_REGISTRY)


def register(name: str, factory: Callable[[], Verifier]) -> None:
    _REGISTRY[name] = factory


def get(name: str) -> Verifier:
    """A built-in verifier by name; the external ones (``ext:<file.py>``, ``cmd:<command>``, ``evalplus``)
    come from ``external.make``."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise ValueError(f"unknown verifier {name!r}; valid verifiers: {', '.join(_REGISTRY)}, ext:<file.py>, "
                         "cmd:<command>, evalplus") \
            from None


def names() -> list[str]:
    return list(_REGISTRY)
