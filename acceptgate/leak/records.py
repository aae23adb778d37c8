"""Experiment records, the leak audit's input: one per (run, arm, block, task), with every message in order.

Two sources. The warehouse: ``gate_runs`` (is the run closed?), ``gate_decisions`` (one record per arm
and task), ``gate_attempts``, ``gate_messages`` (author and purpose of every text), ``deliveries``
(which hidden suite scored it). And jsonl history files produced elsewhere, one record per line::

    {"format": "acceptgate-leak-record/1", "run_id": "R530", "arm": "hmix", "block": "b07",
     "task_id": "HumanEval/3", "started_at": "2026-09-18T10:00:00Z", "finished": true,
     "decision": "refused", "attempts_used": 2,
     "visible_spec_hash": "<64 hex, optional>", "hidden_spec_hash": "<64 hex, optional>",
     "messages": [{"seq": 0, "attempt": 1, "author": "task", "purpose": "generation",
                   "role": "user", "text": "def f(x):\\n ..."}, ...]}

A line that is not such a record (not JSON, a field missing or of the wrong type, an unknown author
or purpose, an unknown key) is invalid input: ``InvalidInput`` names the file, the line and the field,
and nothing is scanned. Information that is *absent* is not invalid, it makes the record
unverifiable: ``author``/``text`` may be null (lost), ``finished`` false (the run never closed), seq
numbers may have gaps and the stop decision may be missing (a truncated record).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acceptgate.errors import InvalidInput
from acceptgate.gates.records import AUTHORS, PURPOSES, ROLES

FORMAT = "acceptgate-leak-record/1"
HEX64 = r"^[0-9a-f]{64}$"


@dataclass(frozen=True)
class RecordMessage:
    seq: int
    attempt: int
    author: str | None  # None: the authorship was lost
    purpose: str
    role: str
    text: str | None  # None: the text was lost


@dataclass(frozen=True)
class LeakRecord:
    run_id: str
    arm: str
    block: str
    task_id: str
    started_at: datetime | None
    finished: bool  # the run (or block) was closed: every decision final
    decision: str | None
    attempts_used: int | None
    messages: tuple[RecordMessage, ...]
    visible_spec_hash: str | None = None
    hidden_spec_hash: str | None = None
    origin: str = "warehouse"  # or "FILE:LINE"
    run_status: str = ""  # the warehouse's gate_runs.status, for reasons

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.run_id, self.arm, self.block, self.task_id)

    @property
    def content_sha256(self) -> str:
        """Of everything the verdict depends on, so an unchanged record is not scanned twice."""
        doc = [self.key, self.finished, self.decision, self.attempts_used, self.visible_spec_hash,
               self.hidden_spec_hash, [(m.seq, m.attempt, m.author, m.purpose, m.role, m.text) for m in self.messages]]
        return hashlib.sha256(json.dumps(doc, ensure_ascii=True, default=str).encode()).hexdigest()


# -- jsonl history files --------------------------------------------------------------------------

class _MessageModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    seq: int = Field(ge=0)
    attempt: int = Field(ge=1)
    author: Literal[AUTHORS] | None  # type: ignore[valid-type]
    purpose: Literal[PURPOSES]  # type: ignore[valid-type]
    role: Literal[ROLES] = "none"  # type: ignore[valid-type]
    text: str | None


class _RecordModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    format: Literal["acceptgate-leak-record/1"]
    run_id: str = Field(min_length=1, max_length=64)
    arm: str = Field(min_length=1, max_length=64)
    block: str = ""
    task_id: str = Field(min_length=1)
    started_at: str | None = None
    finished: bool
    decision: Literal["delivered", "refused"] | None = None
    attempts_used: int | None = Field(default=None, ge=0)
    visible_spec_hash: str | None = Field(default=None, pattern=HEX64)
    hidden_spec_hash: str | None = Field(default=None, pattern=HEX64)
    messages: list[_MessageModel]


def _field(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def read_jsonl(path: str | Path) -> list[LeakRecord]:
    """Every record of a history file; InvalidInput (file, line, field) on the first bad one."""
    path = Path(path)
    try:
        fh = _open(path)
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror}", source=str(path), field="--history") from None
    records: list[LeakRecord] = []
    seen: dict[tuple, int] = {}
    with fh:
        try:
            lines = list(fh)
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            raise InvalidInput(f"cannot read: {exc}", source=str(path)) from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = {"source": str(path), "record": f"line {number}"}
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"not JSON: {exc.msg} at column {exc.colno}", **where) from None
        if not isinstance(doc, dict):
            raise InvalidInput("a record is a JSON object", **where)
        try:
            model = _RecordModel.model_validate(doc)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InvalidInput(err["msg"], field=_field(err["loc"]) or "record", **where) from None
        started = None
        if model.started_at is not None:
            try:
                started = datetime.fromisoformat(model.started_at.replace("Z", "+00:00"))
            except ValueError:
                raise InvalidInput("not an ISO 8601 time", field="started_at", **where) from None
        rec = LeakRecord(model.run_id, model.arm, model.block, model.task_id, started, model.finished,
                         model.decision, model.attempts_used,
                         tuple(RecordMessage(m.seq, m.attempt, m.author, m.purpose, m.role, m.text)
                               for m in model.messages),
                         model.visible_spec_hash, model.hidden_spec_hash, origin=f"{path}:{number}")
        if rec.key in seen:
            raise InvalidInput(f"the same (run_id, arm, block, task_id) as line {seen[rec.key]}", field="task_id",
                               **where)
        seen[rec.key] = number
        records.append(rec)
    return records


def write_jsonl(records: list[LeakRecord], path: str | Path) -> None:
    """The history format (used to export warehouse records and by the benchmark's generator)."""
    with (gzip.open(path, "wt", encoding="utf-8") if str(path).endswith(".gz") else open(path, "w", encoding="utf-8")) as fh:
        for r in records:
            fh.write(json.dumps(as_doc(r), ensure_ascii=False) + "\n")


def as_doc(r: LeakRecord) -> dict:
    doc = {"format": FORMAT, "run_id": r.run_id, "arm": r.arm, "block": r.block, "task_id": r.task_id,
           "started_at": r.started_at.isoformat() if r.started_at else None, "finished": r.finished,
           "decision": r.decision, "attempts_used": r.attempts_used,
           "messages": [{"seq": m.seq, "attempt": m.attempt, "author": m.author, "purpose": m.purpose,
                         "role": m.role, "text": m.text} for m in r.messages]}
    for key in ("visible_spec_hash", "hidden_spec_hash"):
        if getattr(r, key):
            doc[key] = getattr(r, key)
    return doc


# -- the warehouse ------------------------------------------------------------------------------

_SELECT = """
with runs as (
    select run_id, status, started_at from gate_runs
    where ($run_ids is null or list_contains($run_ids, run_id))
      and ($since is null or started_at >= $since) and ($until is null or started_at < $until)
),
decisions as (
    select d.run_id, d.arm, d.task_id, d.decision, d.attempts_used, d.visible_spec_hash,
           r.status, r.started_at
    from gate_decisions d join runs r using (run_id)
    where $arms is null or list_contains($arms, d.arm)
),
messages as (
    select run_id, arm, task_id,
           list({'seq': seq, 'attempt': attempt, 'author': author, 'purpose': purpose, 'role': role,
                 'text': text} order by seq) as messages
    from gate_messages where run_id in (select run_id from runs)
    group by all
),
final as (
    select d.*, m.messages, dl.hidden_spec_hash
    from decisions d
    left join messages m using (run_id, arm, task_id)
    left join deliveries dl using (run_id, arm, task_id)
)
select * from final order by run_id, arm, task_id
"""


def from_warehouse(con, *, run_ids: list[str] | None = None, since: datetime | None = None,
                   until: datetime | None = None, arms: list[str] | None = None) -> list[LeakRecord]:
    """Records of the gate runs selected (all by default), from an open DuckDB connection."""
    rows = con.execute(_SELECT, {"run_ids": run_ids, "since": since, "until": until, "arms": arms}).fetchall()
    out = []
    for (run_id, arm, task_id, decision, attempts_used, visible, status, started, messages, hidden) in rows:
        msgs = tuple(RecordMessage(m["seq"], m["attempt"], m["author"], m["purpose"], m["role"], m["text"])
                     for m in (messages or []))
        out.append(LeakRecord(run_id, arm, "", task_id, started, status == "ok", decision, attempts_used, msgs,
                              visible, hidden, origin="warehouse", run_status=status))
    return out
