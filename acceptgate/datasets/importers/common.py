"""What every importer shares: reading jsonl(.gz) data, running the reference, building suites.

Expected values are never taken from the dataset's text: the reference runs in the sandbox
(``run_calls``: one process per suite, cases streamed) and its outputs become the expected values.
Each case that cannot become part of a SuiteSpec is recorded as an ``ImportIssue``.
"""

from __future__ import annotations

import gzip
import re
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from acceptgate._util import boundedjson
from acceptgate.suites import dialects, literals, suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_file
from acceptgate._util.parallel import parallel_map  # noqa: F401  (the importers take it from here)
from acceptgate.datasets.wrongs import gauge_plan
from acceptgate.sandbox import answers
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import CallOutcome, run_calls
from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportIssue, Task

# ImportIssue.excluded for an issue that left nothing out (a restored JSON coercion, a docstring
# example whose stated output disagrees with the reference): recorded so it is never silent.
KEPT = "none"

# An expected value is at most this many characters in its canonical spelling (as the sandbox measures
# it). EvalPlus has inputs like string_sequence(1000011) whose output is a 7 MB string: as a literal it
# would make spec files of 150 MB. Such an output is digested where the reference made it (inside the
# sandbox) and the suite is judged by the ``python-call+digest/1`` dialect (``dialects.py``).
MAX_VALUE_CHARS = 100_000
# An input is the source file's own data, so it is as large as the source made it: it is kept whenever
# the literal grammar can hold it (Mbpp/301 has a 102,000-character nested dict), else excluded as
# "input-too-large".
MAX_INPUT_CHARS = literals.MAX_TEXT_CHARS

# The reference gets twice a candidate's wall time (10 s for a whole suite), so machine load does not
# cost cases. A call that still times out is run again alone with RETRY_LIMITS (the reference
# evaluator has no such suite-wide budget: EvalPlus computes ground truth with no time limit); if
# even that is not enough, the import fails loudly (ReferenceTimeout) rather than drop the input.
REFERENCE_LIMITS = Limits(wall_seconds=20.0, cpu_seconds=21)
RETRY_LIMITS = Limits(wall_seconds=120.0, cpu_seconds=121)
# A call that runs out of the sandbox's 128 MiB is run again alone with this much (EvalPlus computes
# ground truth with the machine's memory); if even that is not enough it stays excluded as
# "reference-memory", with the budget in the detail.
MEMORY_RETRY_LIMITS = Limits(wall_seconds=120.0, cpu_seconds=121, memory_bytes=2 * 1024 ** 3)


class ReferenceTimeout(RuntimeError):
    """The reference gave no answer for an input even with RETRY_LIMITS: the import cannot be complete."""

Progress = Callable[[int, int], None] | None


# ---------------------------------------------------------------------------------------------
# input files


def read_jsonl(path: str | Path, required: dict[str, type | tuple[type, ...]]) -> tuple[list[dict], str]:
    """Rows of a jsonl or jsonl.gz file, each checked for the required fields and their types.

    Raises InvalidInput naming the file, the line and the field.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInput("no such file" if not path.exists() else "not a regular file", source=str(path))
    try:
        digest = sha256_file(path)
        with open(path, "rb") as f:
            magic = f.read(2)
        opener = gzip.open if magic == b"\x1f\x8b" else open
        with opener(path, "rb") as f:
            raw_lines = f.read().split(b"\n")
    except OSError as exc:  # unreadable, or a truncated / corrupt gzip stream
        raise InvalidInput(f"cannot read: {exc}", source=str(path)) from None
    except (EOFError, zlib.error) as exc:
        raise InvalidInput(f"corrupt gzip data: {exc}", source=str(path)) from None
    rows = []
    for lineno, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        rows.append(_row(raw, lineno, path, required))
    if not rows:
        raise InvalidInput("no records (empty file)", source=str(path))
    return rows, digest


def _row(raw: bytes, lineno: int, path: Path, required: dict[str, Any]) -> dict:
    record = f"line {lineno}"
    try:
        row = boundedjson.loads(raw)
    except boundedjson.JSONInputError as exc:
        raise InvalidInput(str(exc) if exc.message.startswith(("not JSON", "not UTF-8")) else f"not JSON: {exc}",
                           source=str(path), record=record) from None
    if not isinstance(row, dict):
        raise InvalidInput("a record must be a JSON object", source=str(path), record=record)
    for name, kind in required.items():
        if name not in row:
            raise InvalidInput("missing field", source=str(path), record=record, field=name)
        if not isinstance(row[name], kind) or (kind is int and isinstance(row[name], bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise InvalidInput(f"expected {names}, got {type(row[name]).__name__}", source=str(path),
                               record=record, field=name)
    return row


def check_unique_ids(rows: list[dict], path: str | Path) -> None:
    seen: set[str] = set()
    for i, row in enumerate(rows, start=1):
        if row["task_id"] in seen:
            raise InvalidInput(f"duplicate task_id {row['task_id']!r}", source=str(path), record=f"record {i}",
                               field="task_id")
        seen.add(row["task_id"])


# ---------------------------------------------------------------------------------------------
# cases and suites


@dataclass
class Draft:
    """A case before its expected value is known."""

    args: tuple
    kwargs: dict
    origin: int  # index in the source (assert number, docstring example, input number)
    text: str = ""
    # Cross-check of the reference's value against what the source states: (reason, detail) or None.
    check: Callable[[Any], tuple[str, str] | None] | None = None
    # The canonical spellings of tuple(args) and kwargs, set by validate_draft (each input spelled once)
    args_text: str | None = None
    kwargs_text: str | None = None


@dataclass
class TaskPlan:
    """A task read from its row before the reference runs: its drafted cases, the issues met, and the
    one issue that leaves it out (``fatal``). An importer that reads more adds its own fields."""

    row: dict
    visible: list[Draft] = field(default_factory=list)
    hidden: list[Draft] = field(default_factory=list)
    issues: list[ImportIssue] = field(default_factory=list)
    fatal: ImportIssue | None = None

    @property
    def task_id(self) -> str:
        return self.row["task_id"]


@dataclass
class SuiteBuild:
    """The outcome of turning drafts into a suite: the spec (or None) and what was left out."""

    spec: suitespec.SuiteSpec | None
    issues: list[ImportIssue] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # the reference's time per case, on this machine


MEASURED_ENTRY = "_acceptgate_measured_call"

# Appended to the reference (trusted code, run in the sandbox): each call answers with the reference's
# time and, unless its output is too large to be a literal case, the output. A too-large output (a 7 MB
# string, a million-digit int) is digested where it was made (``dialects.EQUALITY_DIGEST_SOURCE``) and
# never spelled out, shipped or parsed: that cost, not the reference's own work, was most of an
# import's time and memory. It also says whether the output is "floats" (EvalPlus's is_floats), which
# the float rule needs and a digest cannot tell.
_MEASURE = """

def _acceptgate_measured_call(*args, **kwargs):
    import time as _time
    started = _time.perf_counter()
    out = {entry_point}(*args, **kwargs)
    seconds = _time.perf_counter() - started
    tag = "ok"
    if type(out) is __import__("collections").Counter:  # its items cross; the harness rebuilds it
        out, tag = dict(out), "counter"
    size = _acceptgate_size_at_least(out, {limit}, 0)
    if size > {limit}:
        floats = type(out) is float or (type(out) in (list, tuple) and bool(out)
                                        and all(type(v) is float for v in out))
        digest, length = acceptgate_equality_digest(out)
        # a candidate's result here is digested in the sandbox too, on its clock: the time counts
        seconds = _time.perf_counter() - started
        return ("digest", seconds, (digest, length, floats))
    return (tag, seconds, out)


def _acceptgate_size_at_least(value, budget, depth):
    t = type(value)
    if t is str or t is bytes:
        return len(value) + 2
    if t is int:
        return value.bit_length() // 4 + 1
    if t in (list, tuple, set, dict) and depth <= 100:
        total = 2
        for item in (value.items() if t is dict else value):
            if t is dict:
                total += 2 + sum(_acceptgate_size_at_least(x, budget - total, depth + 1) for x in item)
            else:
                total += 2 + _acceptgate_size_at_least(item, budget - total, depth + 1)
            if total > budget:
                break
        return total
    return 3
"""


# The measured call's answer as repr writes it: "('ok', 1.2e-05, <output>)".
_MEASURED_ANSWER = re.compile(r"\('(ok|counter|digest)', ([0-9]+(?:\.[0-9]+(?:e-[0-9]+)?|e-[0-9]+)), ")


def parse_measured(text: str, *, deadline: float | None = None, clock: Callable[[], float] = time.monotonic) -> Any:
    """A measured call's answer, its output read on its own (so ``answers.parse``'s fast paths for a
    short scalar or a flat list of numbers apply to it): the value ``answers.parse(text)`` gives."""
    m = _MEASURED_ANSWER.match(text)
    if m is not None and text.endswith(")"):
        try:
            return m.group(1), float(m.group(2)), answers.parse(text[m.end():-1], deadline=deadline, clock=clock)
        except literals.LiteralError:
            pass  # not one value in there ("1, 2" makes a longer tuple): the general reading decides
    return answers.parse(text, deadline=deadline, clock=clock)


def _run_measured(calls: list[tuple[tuple, dict]], program: str, backend: Backend,
                  limits: Limits) -> tuple[list[CallOutcome], str]:
    return run_calls(MEASURED_ENTRY, calls, program, backend, limits=limits, parse=parse_measured)


@dataclass
class ReferenceRun:
    """The reference's outcome for each call, and its time per call (None when it gave no value)."""

    outcomes: list[CallOutcome]
    seconds: list[float | None]
    detail: str = ""  # why the program did not load, when it did not


@dataclass(frozen=True)
class Digest:
    """A reference output too large to be a literal, as the digest the sandbox computed for it."""

    sha256: str
    length: int  # of its equality form, in bytes
    floats: bool  # EvalPlus's is_floats of the output (decides the float rule)

    def expected(self) -> tuple[str, str, int]:
        return ("sha256", self.sha256, self.length)


def measured_source(source: str, entry_point: str) -> str:
    return (source + _MEASURE.format(entry_point=entry_point, limit=MAX_VALUE_CHARS)
            + "\n\n" + dialects.EQUALITY_DIGEST_SOURCE)


def reference_outputs(entry_point: str, calls: list[tuple[tuple, dict]], source: str, backend: Backend,
                      *, limits: Limits = REFERENCE_LIMITS) -> ReferenceRun:
    """One outcome per call, in one sandboxed process for all of them. A call that times out is run
    again alone with RETRY_LIMITS (ReferenceTimeout if even that is not enough); a call that crashes
    the process is given that status and the remaining calls continue in a fresh process."""
    program = measured_source(source, entry_point)
    raw: list[CallOutcome] = []
    while len(raw) < len(calls):
        got, detail = _run_measured(calls[len(raw):], program, backend, limits)
        if not got and detail.startswith("did not load"):
            return ReferenceRun([], [], detail)
        if got and got[-1].status == "timeout":  # this call alone, with the larger budget
            got[-1] = _retry_alone(calls[len(raw) + len(got) - 1], program, backend)
        for i, outcome in enumerate(got):  # a MemoryError (or an OOM kill): this call alone, with more
            if outcome.status == "memory":
                got[i] = _retry_memory(calls[len(raw) + i], program, backend)
        raw.extend(got)
        if not got:  # a process that answered nothing: charge the next call and move on
            raw.append(CallOutcome("crash", message=detail or "no answer"))
    run = ReferenceRun([], [])
    for outcome in raw[: len(calls)]:
        if outcome.status == "ok":
            tag, seconds, value = outcome.value
            run.seconds.append(seconds)
            if tag == "counter":  # the reference returned a collections.Counter (see counter_expected)
                value, tag = Counter(value), "ok"
            run.outcomes.append(CallOutcome("ok", value if tag == "ok" else Digest(*value)))
        else:
            run.seconds.append(None)
            run.outcomes.append(outcome)
    return run


def _retry_memory(call: tuple[tuple, dict], program: str, backend: Backend) -> CallOutcome:
    got, detail = _run_measured([call], program, backend, MEMORY_RETRY_LIMITS)
    if got and got[0].status == "ok":
        return got[0]
    budget = MEMORY_RETRY_LIMITS.memory_bytes // 1024 ** 2
    status = got[0].status if got else "crash"
    why = (got[0].message if got else detail) or ""
    return CallOutcome("memory", message=f"more than 128 MiB; run again alone with {budget} MiB and "
                                         f"{MEMORY_RETRY_LIMITS.wall_seconds:g} s: {status} {why}".rstrip())


def _retry_alone(call: tuple[tuple, dict], program: str, backend: Backend) -> CallOutcome:
    got, detail = _run_measured([call], program, backend, RETRY_LIMITS)
    if not got or got[0].status == "timeout":
        raise ReferenceTimeout(f"the reference gave no answer for input {short(call[0])} within "
                               f"{RETRY_LIMITS.wall_seconds:g} s ({detail or 'no answer'})")
    return got[0]


def build_suite(task_id: str, kind: str, dialect: str, entry_point: str, drafts: list[Draft],
                outcomes: list[CallOutcome], seconds: list[float | None] | None = None) -> SuiteBuild:
    """Pair drafts with the reference's outcomes; exclude what cannot be a case, with the reason.

    A digested output (``Digest``) makes the suite a ``python-call+digest/1`` one when the task's
    dialect is exact equality (every other case kept as ``("value", v)``); a dialect that compares more
    than equality cannot judge a digest, and such a case is excluded as ``output-too-large``.
    """
    issues: list[ImportIssue] = []
    cases: list[Any] = []
    kept_seconds: list[float] = []
    seconds = seconds if seconds is not None else [None] * len(outcomes)
    digestible = dialect == "python-call/1"
    for draft, outcome, took in zip(drafts, outcomes, seconds):
        outcome = counter_expected(outcome, dialect)
        problem = _case_problem(outcome)
        case = None
        if problem is None and isinstance(outcome.value, Digest):
            if not digestible:
                problem = ("output-too-large", f"the reference's output has {outcome.value.length} bytes, too "
                           f"many for a literal, and the {dialect} dialect cannot judge it by its digest")
        elif problem is None:
            # The output's size was measured in the sandbox, which digested it if too large.
            try:  # every value spelled once: the output here, the input by validate_draft
                case = suitespec.case_of(draft.args, draft.kwargs, outcome.value, args_text=draft.args_text,
                                         kwargs_text=draft.kwargs_text)
            except literals.LiteralError as exc:
                problem = ("reference-nonliteral-output", str(exc))
        if problem is not None:
            reason, detail = problem
            issues.append(ImportIssue(task_id, reason, f"{detail}; input {draft.text or short(draft.args)}",
                                      suite=kind, case_index=draft.origin))
            continue
        if draft.check is not None and not isinstance(outcome.value, Digest):
            disagreement = draft.check(outcome.value)
            if disagreement:  # keep the reference's value; record what the source said
                reason, detail = disagreement
                issues.append(ImportIssue(task_id, reason, detail, suite=kind, case_index=draft.origin,
                                          excluded=KEPT))
        # a Case, or (args, kwargs, Digest) until the suite's dialect is known
        cases.append(case if case is not None else (draft.args, draft.kwargs, outcome.value))
        kept_seconds.append(round(took or 0.0, 6))
    if any(not isinstance(c, suitespec.Case) for c in cases):  # a digested output: judged by digest
        dialect = dialects.DIGEST
        cases = [suitespec.case_of(c.args, c.kwargs, ("value", c.expected)) if isinstance(c, suitespec.Case)
                 else suitespec.case_of(c[0], c[1], c[2].expected()) for c in cases]
    spec = suitespec.from_cases(dialect, entry_point, cases) if cases else None
    return SuiteBuild(spec, issues, kept_seconds)


def counter_expected(outcome: CallOutcome, dialect: str) -> CallOutcome:
    """A reference's ``collections.Counter`` output is a case only under the counter dialect, which
    knows ``want`` was a Counter; there its items (a dict) are the expected value. Elsewhere it stays
    a non-literal output (excluded with that reason)."""
    if dialect == dialects.COUNTER_EQ and outcome.status == "ok" and type(outcome.value) is Counter:
        return CallOutcome("ok", dict(outcome.value))
    return outcome


def all_counters(expected: dict[str, list[Any]]) -> bool:
    """Whether the reference returned a ``collections.Counter`` for every call (and made some call)."""
    values = [v for vs in expected.values() for v in vs]
    return bool(values) and all(type(v) is Counter for v in values)


CONTRACT_VIOLATION = "contract-violation"
CONTRACT_VIOLATION_KEPT = "contract-violation-kept"


def _case_problem(outcome: CallOutcome) -> tuple[str, str] | None:
    if outcome.status == "ok":
        return None
    if outcome.status == "error":
        return "reference-error", f"the reference raised {outcome.error_type}: {outcome.message}"
    if outcome.status == "protocol" and _huge_int(outcome.message or ""):
        # CPython will not spell an int of more than 4300 digits, the literal grammar none over 4000
        return "output-too-large", f"the reference's output is an integer too large to be a literal " \
                                   f"({outcome.message})"
    if outcome.status == "protocol" and outcome.error_type in ("NonLiteralResult", "nonliteral"):
        return "reference-nonliteral-output", f"the reference returned a non-literal: {outcome.message}"
    if outcome.status == "timeout":
        return "reference-timeout", f"the reference gave no answer within {REFERENCE_LIMITS.wall_seconds:g} s"
    return f"reference-{outcome.status}", f"the reference ended with {outcome.status}: {outcome.message or '?'}"


def _huge_int(message: str) -> bool:
    return "integer string conversion" in message or "integer too large" in message


def validate_draft(task_id: str, kind: str, draft: Draft) -> ImportIssue | None:
    """A draft whose input is too large or cannot be spelled as a literal is excluded here; otherwise
    its canonical spellings are kept on it (``build_suite`` makes the case from them). An input is
    data from the source file, so spelling it is bounded by the file's size."""
    try:
        draft.args_text = literals.canonical(tuple(draft.args))
        draft.kwargs_text = literals.canonical(draft.kwargs)
        problem = None
    except literals.LiteralError as exc:
        problem = str(exc)
    if problem is None and max(len(draft.args_text), len(draft.kwargs_text)) > MAX_INPUT_CHARS:
        return ImportIssue(task_id, "input-too-large", f"the input has more than {MAX_INPUT_CHARS} characters",
                           suite=kind, case_index=draft.origin)
    if problem is None and not all(isinstance(k, str) and k.isidentifier() for k in draft.kwargs):
        problem = "keyword names must be identifiers"
    if problem is None:
        return None
    return ImportIssue(task_id, "non-literal-input", f"{problem}; input {short(draft.args)}", suite=kind,
                       case_index=draft.origin)


def short(value: Any, limit: int = 200) -> str:
    """A value's canonical spelling, cut to limit characters (for issue details)."""
    try:
        text = literals.canonical(value)
    except literals.LiteralError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def assemble(task_id: str, dataset: str, prompt: str, entry_point: str, reference: str, run_source: str,
             drafts: dict[str, list[Draft]], dialect: str | Callable[[dict[str, list]], str], backend: Backend,
             issues: list[ImportIssue], hidden_skip_reason: str | None = None, contract: str = "",
             outcome_filter=None) -> tuple[Task | None, list[ImportIssue]]:
    """Run ``run_source`` on each suite's drafts, build the suites and the task (shared by importers).

    ``dialect`` is a name, or a function of {kind: [expected values]} returning one (HumanEval+ picks
    its float rule from the outputs). ``outcome_filter`` may rewrite outcomes: an outcome it marks
    ``contract-violation`` (``run_source`` holds the task's contract) is recomputed with ``reference``
    alone -- the reference evaluator tests such inputs too, with the reference's output as ground truth
    -- and kept, with a note that the input breaks the contract.
    """
    issues = list(issues)
    drafts = dict(drafts)
    outcomes = {}
    seconds: dict[str, list[float | None]] = {}
    for kind, kind_drafts in drafts.items():
        valid = []
        for d in kind_drafts:
            bad = validate_draft(task_id, kind, d)
            if bad:
                issues.append(bad)
            else:
                valid.append(d)
        drafts[kind] = valid
        run = reference_outputs(entry_point, [(d.args, d.kwargs) for d in valid], run_source, backend)
        if run.detail:  # the reference does not even load: nothing of this task can be trusted
            issues.append(ImportIssue(task_id, "reference-failed", run.detail, excluded="task"))
            return None, issues
        got = outcome_filter(run.outcomes) if outcome_filter else run.outcomes
        seconds[kind] = run.seconds
        broken = [i for i, o in enumerate(got) if o.status == CONTRACT_VIOLATION]
        if broken:
            again = reference_outputs(entry_point, [(valid[i].args, valid[i].kwargs) for i in broken],
                                      reference, backend)
            if again.detail:
                issues.append(ImportIssue(task_id, "reference-failed", again.detail, excluded="task"))
                return None, issues
            for i, outcome, took in zip(broken, again.outcomes, again.seconds):
                seconds[kind][i] = took
                issues.append(ImportIssue(
                    task_id, CONTRACT_VIOLATION_KEPT,
                    f"the input violates the task's contract ({got[i].message}); the reference evaluator "
                    f"tests it, so it is kept with the reference's output (run without the contract); "
                    f"input {valid[i].text or short(valid[i].args)}",
                    suite=kind, case_index=valid[i].origin, excluded=KEPT))
                got[i] = outcome
        outcomes[kind] = got
    if callable(dialect):  # a digest stands for its output here by one value of the same floatness
        dialect = dialect({k: [(0.0 if o.value.floats else None) if isinstance(o.value, Digest) else o.value
                               for o in v if o.status == "ok"] for k, v in outcomes.items()})
    suites = {}
    reference_seconds: dict[str, list[float]] = {}
    for kind in drafts:
        build = build_suite(task_id, kind, dialect, entry_point, drafts[kind], outcomes[kind], seconds[kind])
        issues += build.issues
        if build.spec is not None:
            suites[kind] = build.spec
            reference_seconds[kind] = build.seconds
    if HIDDEN not in suites:  # no GT, nothing to score against: the task goes
        reason = hidden_skip_reason or "no-hidden-cases"
        issues.append(ImportIssue(task_id, reason, "no hidden case could be expressed as a SuiteSpec (see the "
                                  "case issues); the task is excluded", suite=HIDDEN, excluded="task"))
        return None, issues
    if VISIBLE not in suites:
        reason, why = (("no-docstring-examples", "no example could be read from the docstring")
                       if not drafts[VISIBLE] else
                       ("no-visible-cases", "every docstring example was excluded (see the case issues)"))
        issues.append(ImportIssue(task_id, reason, f"{why}; the task has only its hidden suite",
                                  suite=VISIBLE, excluded="suite"))
    task = Task(task_id=task_id, dataset=dataset, entry_point=entry_point, prompt=prompt,
                reference=reference, suites=suites, contract=contract)
    task.reference_seconds = reference_seconds
    task.wrong_samples, skipped = gauge_plan(task)
    return task, issues + skipped


# ---------------------------------------------------------------------------------------------
# parallelism


