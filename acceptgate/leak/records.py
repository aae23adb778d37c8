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

History files are read as a stream with bounds, so no file can take the reader's memory or time
beyond them: a line (one record, decompressed) of at most ``MAX_LINE_BYTES``; JSON nested at most
200 deep and numbers of at most ~4,300 digits (pydantic-core's parser refuses more, in Rust, without
recursion); ``seq``/``attempt`` below fixed maxima; a gzip file decompressed in chunks, at most
``MAX_EXPANSION`` times its compressed size (at least ``MIN_TOTAL_BYTES``). A line past a bound is
invalid input like any other (exit 2, naming file and line), never a traceback.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import marshal
import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from datetime import datetime
from pathlib import Path
from typing import Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acceptgate._util.hashing import sha256_text
from acceptgate._util.errors import InvalidInput
from acceptgate.gates.records import AUTHORS, PURPOSES, ROLES

FORMAT = "acceptgate-leak-record/1"
HEX64 = r"^[0-9a-f]{64}$"
MAX_LINE_BYTES = 4 * 2**20  # one record, decompressed (a gate record: ~10-200 KB; 4 MiB parse to ~60 MB)
MAX_EXPANSION = 200  # a gzip history decompresses to at most this many times its size (jsonl: ~10-30) ...
MIN_TOTAL_BYTES = 256 * 2**20  # ... or this much, whichever is larger
MAX_SEQ = 1_000_000  # messages of one record
MAX_ATTEMPTS = 10_000
_CHUNK = 1 << 16


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

    @cached_property  # planning and judging both need it; the JSON of a record is not free
    def content_sha256(self) -> str:
        """Of everything the verdict depends on, so an unchanged record is not scanned twice."""
        doc = [self.key, self.finished, self.decision, self.attempts_used, self.visible_spec_hash,
               self.hidden_spec_hash, [(m.seq, m.attempt, m.author, m.purpose, m.role, m.text) for m in self.messages]]
        return sha256_text(json.dumps(doc, ensure_ascii=True, default=str))


# -- jsonl history files --------------------------------------------------------------------------

class _MessageModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    seq: int = Field(ge=0, le=MAX_SEQ)
    attempt: int = Field(ge=1, le=MAX_ATTEMPTS)
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
    attempts_used: int | None = Field(default=None, ge=0, le=MAX_ATTEMPTS)
    visible_spec_hash: str | None = Field(default=None, pattern=HEX64)
    hidden_spec_hash: str | None = Field(default=None, pattern=HEX64)
    messages: list[_MessageModel]


def _field(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class _BoundedLines:
    """Lines of a jsonl(.gz) file as bytes, read in chunks; each at most MAX_LINE_BYTES, the whole
    decompressed stream at most max(MIN_TOTAL_BYTES, MAX_EXPANSION x the file's size)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            size = path.stat().st_size
            raw = open(path, "rb")
        except OSError as exc:
            raise InvalidInput(f"cannot read: {exc.strerror}", source=str(path), field="--history") from None
        gz = path.suffix == ".gz"
        self._fh = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        self._raw = raw
        self._budget = max(MIN_TOTAL_BYTES, MAX_EXPANSION * size) if gz else None

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        read = 0
        number = 0
        with self._raw, self._fh:
            while True:
                where = {"source": str(self.path), "record": f"line {number + 1}"}
                try:
                    line = self._fh.readline(MAX_LINE_BYTES + 1)  # reads (and inflates) in bounded chunks
                except (OSError, EOFError, gzip.BadGzipFile) as exc:
                    raise InvalidInput(f"cannot read: {exc}", **where) from None
                if not line:
                    return
                number += 1
                read += len(line)
                if len(line) > MAX_LINE_BYTES:
                    raise InvalidInput(f"a record longer than {MAX_LINE_BYTES:,} bytes", **where)
                if self._budget is not None and read > self._budget:
                    raise InvalidInput(f"decompresses to more than {self._budget:,} bytes ({MAX_EXPANSION}x "
                                       "the file's size): not a history file", source=str(self.path))
                yield number, line


def _parse(line: bytes, where: dict) -> _RecordModel:
    try:
        return _RecordModel.model_validate_json(line)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        if err["type"] == "json_invalid":
            why = str(err.get("ctx", {}).get("error", err["msg"]))
            if "recursion limit" in why:
                why = "nested deeper than 200 levels"
            elif "number out of range" in why:
                why = "a number too large"
            raise InvalidInput(f"not JSON: {why}", **where) from None
        if err["type"] == "model_type" and not err["loc"]:
            raise InvalidInput("a record is a JSON object", **where) from None
        raise InvalidInput(err["msg"], field=_field(err["loc"]) or "record", **where) from None


def iter_jsonl(path: str | Path, seen: dict[bytes, str] | None = None) -> Iterator[LeakRecord]:
    """The records of a history file, one at a time; InvalidInput (file, line, field) on the first bad
    one. A record key seen twice is invalid too: ``seen`` (key digest -> where; shared across the files
    of one run) is all that is kept per record."""
    path = Path(path)
    seen = {} if seen is None else seen
    for number, line in _BoundedLines(path):
        if not line.strip():
            continue
        where = {"source": str(path), "record": f"line {number}"}
        model = _parse(line, where)
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
        digest = key_digest(rec.key)
        if digest in seen:
            other = seen[digest]
            other = other.rpartition(", ")[2] if other.startswith(f"{path}, ") else other
            raise InvalidInput(f"the same (run_id, arm, block, task_id) as {other}", field="task_id", **where)
        seen[digest] = f"{path}, line {number}"
        yield rec


def read_jsonl(path: str | Path) -> list[LeakRecord]:
    """Every record of a (small) history file; see ``iter_jsonl``."""
    return list(iter_jsonl(path))


def key_digest(key: tuple) -> bytes:
    """16 bytes standing for a record key: what the readers keep per record to find duplicates."""
    return hashlib.blake2b("\x00".join(key).encode("utf-8", "surrogatepass"), digest_size=16).digest()


# -- the spool: validated history records, read back in batches ------------------------------------

def _as_row(r: LeakRecord) -> tuple:
    return (r.run_id, r.arm, r.block, r.task_id, r.started_at.isoformat() if r.started_at else None, r.finished,
            r.decision, r.attempts_used, tuple((m.seq, m.attempt, m.author, m.purpose, m.role, m.text)
                                               for m in r.messages),
            r.visible_spec_hash, r.hidden_spec_hash, r.origin)


def _from_row(row: tuple) -> LeakRecord:
    (run_id, arm, block, task_id, started, finished, decision, attempts_used, msgs, vis, hid, origin) = row
    return LeakRecord(run_id, arm, block, task_id, datetime.fromisoformat(started) if started else None, finished,
                      decision, attempts_used, tuple(RecordMessage(*m) for m in msgs), vis, hid, origin=origin)


class History:
    """The selected records of history files, validated whole before anything is scanned, kept in a
    private spool file (marshal: plain tuples, never code) and read back in batches: the input files
    are read once and memory stays flat in the number of records. (A plain class with slots: Prefect
    stores a placeholder for it as a flow parameter instead of encoding every key.)"""

    __slots__ = ("files", "directory", "records", "keys", "sha256", "task_ids")

    def __init__(self, files: tuple[str, ...], directory: str) -> None:
        self.files = files
        self.directory = directory
        self.records = 0
        self.sha256 = ""  # of the spooled records, in order: part of the leak audit's run id
        self.keys: dict[bytes, str] = {}  # key digest -> "FILE, line N", of every record read
        self.task_ids: set[str] = set()  # of every record read

    def __repr__(self) -> str:
        return f"History({self.files!r}, {self.records} records)"

    @property
    def spool(self) -> Path:
        return Path(self.directory) / "records.marshal"

    def batches(self, size: int) -> Iterator[list[LeakRecord]]:
        batch: list[LeakRecord] = []
        with open(self.spool, "rb") as fh:
            for _ in range(self.records):
                batch.append(_from_row(marshal.load(fh)))
                if len(batch) >= size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def close(self) -> None:
        self.spool.unlink(missing_ok=True)
        try:
            os.rmdir(self.directory)
        except OSError:
            pass


def read_history(files, directory: str | None = None) -> History:
    """Validate every record of the files (InvalidInput on the first bad one, nothing kept) and spool
    them. A record key in two files is invalid like one twice in a file."""
    history = History(tuple(str(f) for f in files), tempfile.mkdtemp(prefix="acceptgate-history-", dir=directory))
    try:
        digest = hashlib.sha256()
        with open(history.spool, "wb") as out:
            for file in history.files:
                for rec in iter_jsonl(file, history.keys):
                    row = marshal.dumps(_as_row(rec))
                    out.write(row)
                    digest.update(row)
                    history.records += 1
                    history.task_ids.add(rec.task_id)
        history.sha256 = digest.hexdigest()
    except BaseException:
        history.close()
        raise
    return history


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
