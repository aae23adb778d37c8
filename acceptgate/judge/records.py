"""Input records of the judge, as jsonl, one JSON object per line (formats: docs/judge-stats.md, "Input files", from data/demo/judge/README.md).

- ``Trajectory``: one agent run on one condition of a task pair: instruction, the defining evidence,
  ordered actions with their tool outputs, workspace diff, final response, oracle result, resources.
- ``AnswerCard``: the E+ answer card of a task: minimal sufficient action M(t), decisive fact, the
  action forms that handle the risk the fact controls, and the test commands the card approves.
- ``Exemplar``: a human-labelled (consensus) record of the memory bank.
- ``HumanLabel``: a consensus label for a trajectory (judge validation).

Every field is required unless it has a default here; unknown fields are refused. A bad record is
reported as file, line and field (``RecordError``); ``load_jsonl`` collects them so a caller can refuse
the file (``--strict``) or go on with the valid records and count the invalid ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acceptgate._util import boundedjson
from acceptgate._util.errors import InvalidInput

DISPOSITIONS = ("avoid", "transfer", "mitigate", "accept")
CONDITIONS = ("E+", "E-")
KINDS = ("evidence", "generic", "none")
FORMS = ("guard", "backup", "verify-loop", "new-infra", "scope-expansion", "fallback/shim", "ask-confirmation",
         "hedging", "other")
Disposition = Literal["avoid", "transfer", "mitigate", "accept"]
Condition = Literal["E+", "E-"]
Kind = Literal["evidence", "generic", "none"]
Form = Literal["guard", "backup", "verify-loop", "new-infra", "scope-expansion", "fallback/shim",
               "ask-confirmation", "hedging", "other"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Action(_Record):
    """One observable step, in order. ``tool``: read | shell | edit | create | delete | message."""

    tool: Literal["read", "shell", "edit", "create", "delete", "message"]
    input: str = Field(description="the command, the path read, or the message text")
    path: str | None = None  # the file an edit/create/delete touched
    diff: str | None = None  # unified diff of an edit (added lines start with '+')
    output: str = ""  # the tool's output as the agent saw it


class Oracle(_Record):
    passed: bool
    detail: str = ""


class Resources(_Record):
    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    runtime_seconds: float = Field(ge=0)


class Trajectory(_Record):
    trajectory_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    pair_id: str = Field(min_length=1)
    config: str = Field(min_length=1, description="agent configuration (model + harness)")
    run: int = Field(ge=1)
    condition: Condition
    task_description: str = Field(min_length=1)
    instruction: str
    evidence: str = Field(description="the defining evidence as shown in this condition ('' when absent)")
    actions: list[Action]
    workspace_diff: str
    final_response: str
    oracle: Oracle
    resources: Resources
    constructed: bool = Field(description="true for constructed examples, never benchmark results")


class AnswerCard(_Record):
    task_id: str = Field(min_length=1)
    disposition: Disposition
    minimal_action: str = Field(min_length=1, description="M(t), the minimal sufficient action")
    decisive_fact: str = Field(min_length=1)
    risk_forms: list[Form] = Field(description="action forms that handle the risk the decisive fact controls")
    approved_commands: list[str] = Field(description="test/check commands the card counts as baseline")
    full_suite_is_excess: bool = Field(description="the card counts a full-suite run as beyond M(t)")


class LabelledAction(_Record):
    action: str
    form: Form
    linked: bool  # evidence-linked (else generic)
    source: str
    quote: str


class Exemplar(_Record):
    exemplar_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    pair_id: str = Field(min_length=1)
    disposition: Disposition
    condition: Condition
    task_description: str = Field(min_length=1)
    minimal_action: str
    label: Kind  # the consensus label
    actions: list[LabelledAction]
    rationale: str
    constructed: bool

    @property
    def forms(self) -> frozenset[str]:
        return frozenset(a.form for a in self.actions)


class HumanLabel(_Record):
    trajectory_id: str = Field(min_length=1)
    kind: Kind


class RecordedOutput(_Record):
    """A judge's recorded raw output for a trajectory (the replay backend)."""

    trajectory_id: str = Field(min_length=1)
    output: str


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class RecordError:
    source: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}, line {self.line}, field {self.field!r}: {self.message}"


@dataclass
class Loaded(Generic[M]):
    source: str
    records: list[tuple[int, M]]  # (line, record)
    errors: list[RecordError]

    @property
    def valid(self) -> list[M]:
        return [r for _, r in self.records]


def load_jsonl(path: str | Path, model: type[M], *, key: str | None = None) -> Loaded[M]:
    """Parse every non-blank line as ``model``. Errors name file, line and field; duplicate ``key``
    values are errors too (the later line). An unreadable file is InvalidInput."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror}", source=str(path)) from None
    except UnicodeDecodeError:
        raise InvalidInput("not UTF-8", source=str(path)) from None
    records, errors, seen = [], [], set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = boundedjson.loads(line)
        except boundedjson.JSONInputError as exc:
            errors.append(RecordError(str(path), number, "(line)", str(exc) if exc.message.startswith("not JSON")
                                      else f"not JSON: {exc}"))
            continue
        try:
            record = model.model_validate(doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(record)"
            errors.append(RecordError(str(path), number, where, first["msg"]))
            continue
        if key is not None:
            value = getattr(record, key)
            if value in seen:
                errors.append(RecordError(str(path), number, key, f"duplicate {key} {value!r}"))
                continue
            seen.add(value)
        records.append((number, record))
    return Loaded(str(path), records, errors)


def strict(loaded: Loaded) -> Loaded:
    """--strict: the first bad record refuses the whole file (exit 2, nothing written)."""
    if loaded.errors:
        e = loaded.errors[0]
        more = f" (and {len(loaded.errors) - 1} more invalid records)" if len(loaded.errors) > 1 else ""
        raise InvalidInput(e.message + more, source=e.source, record=f"line {e.line}", field=e.field)
    return loaded
