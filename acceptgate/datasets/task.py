"""Tasks as importers produce them: statement, reference, wrong samples, and the two suites."""

from __future__ import annotations

from dataclasses import dataclass, field

from acceptgate._util.hashing import sha256_text
from acceptgate.suites.suitespec import SuiteSpec

VISIBLE = "visible"  # V: decides delivery; its failures may be shown to the generator
HIDDEN = "hidden"  # GT: only scores afterwards; never reaches generation, selection, revision, stopping
SUITE_KINDS = (VISIBLE, HIDDEN)


@dataclass(frozen=True)
class WrongSample:
    """A program known to be wrong; the gauge check requires every suite to block it."""

    label: str  # e.g. "return-none", "raise", "constant-0"
    source: str


@dataclass(frozen=True)
class ImportIssue:
    """A task, suite or case that could not be expressed as a SuiteSpec -- recorded, never dropped."""

    task_id: str
    reason: str  # short stable code, e.g. "property-check", "non-literal-input", "reference-failed"
    detail: str = ""
    suite: str | None = None  # visible | hidden | None for the whole task
    case_index: int | None = None  # index in the source (assert number, docstring example)
    excluded: str = "case"  # what was left out: "case", "suite" or "task"


@dataclass
class Task:
    task_id: str
    dataset: str  # "humaneval", "humanevalplus", ...
    entry_point: str
    prompt: str  # the public statement the generator sees
    reference: str  # a complete program defining entry_point
    suites: dict[str, SuiteSpec] = field(default_factory=dict)  # VISIBLE / HIDDEN
    wrong_samples: list[WrongSample] = field(default_factory=list)
    contract: str = ""  # the public input contract, where the dataset has one
    # The reference's time per case on the importing machine (kind -> seconds per case): EvalPlus's
    # per-input time limits derive from it. Kept beside the spec (a sidecar file), never in it.
    reference_seconds: dict[str, list[float]] = field(default_factory=dict)

    @property
    def prompt_sha256(self) -> str:
        return sha256_text(self.prompt)

    @property
    def reference_sha256(self) -> str:
        return sha256_text(self.reference)


@dataclass
class ImportResult:
    dataset: str
    source: str  # where the data came from (path or package resource) and its sha256
    source_sha256: str
    tasks: list[Task]
    issues: list[ImportIssue]
    # How many hidden inputs the dataset's own evaluator tests (the coverage denominator), when known.
    source_hidden_cases: int | None = None
    # Settings that determine the import's content (e.g. the seed random inputs were drawn with).
    notes: dict = field(default_factory=dict)
