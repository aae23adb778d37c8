"""A verdict per record, with reasons, and roll-ups per run and per arm.

violation     v2 found hidden material in harness-written text, or the record shows that its gate ran
              the hidden suite as its visible one (its recorded visible_spec_hash is the GT suite's:
              GT reached selection). A leak found is a leak, also in a run that never closed.
unverifiable  the record cannot be cleared: the scan's control failed, texts or authors are missing,
              the record is truncated or its run not closed, no hidden material for its task, or the
              hidden suite given is not the one the run was scored with
clean         none of the above
"""

from __future__ import annotations

from dataclasses import dataclass

from acceptgate._util.hashing import sha256_text
from acceptgate.leak.controls import ControlResult
from acceptgate.leak.material import TaskMaterial
from acceptgate.leak.records import LeakRecord
from acceptgate.leak.scanners import SCANNER_VERSION, Hit, ScanResult, TaskScanner

VERDICTS = ("clean", "unverifiable", "violation")


@dataclass
class RecordVerdict:
    record: LeakRecord
    verdict: str
    reasons: list[str]
    v1: ScanResult
    v2: ScanResult
    inputs_sha256: str
    gt_as_visible: bool = False

    @property
    def hits(self) -> list[Hit]:
        """Every hit kept one by one (v2's; v1 keeps its summary only)."""
        return self.v1.hits + self.v2.hits


def inputs_sha256(record: LeakRecord, material: TaskMaterial | None, matcher_name: str) -> str:
    """What a verdict depends on: the record, its task's material, the scanner and matcher versions."""
    key = "\n".join([SCANNER_VERSION, matcher_name, record.content_sha256, material.sha256 if material else "-"])
    return sha256_text(key)


def gaps(record: LeakRecord) -> list[str]:
    """Why the record cannot be cleared by itself (missing texts or authors, truncated, not closed)."""
    out = []
    if not record.finished:
        status = f" (run status {record.run_status})" if record.run_status else ""
        out.append(f"record not closed: its run did not finish{status}")
    msgs = record.messages
    if not msgs:
        return out + ["no messages recorded"]
    seqs = [m.seq for m in msgs]
    missing, count = _missing(set(seqs))
    if count:
        out.append(f"messages missing: seq {_ranges(missing, count)} absent")
    lost_author = [m.seq for m in msgs if m.author is None]
    if lost_author:
        out.append(f"author missing for message seq {_ranges(lost_author)}")
    lost_text = [m.seq for m in msgs if m.text is None]
    if lost_text:
        out.append(f"text missing for message seq {_ranges(lost_text)}")
    last = max(msgs, key=lambda m: m.seq)
    if not (last.author == "harness" and last.purpose == "stop_decision"):
        out.append(f"record truncated: it ends at message seq {last.seq} ({last.purpose}), not at the "
                   f"harness's stop decision")
    attempts = {m.attempt for m in msgs}
    no_model = sorted(a for a in attempts if not any(m.attempt == a and m.author == "model" for m in msgs))
    if record.attempts_used and no_model:
        out.append(f"attempt {_ranges(no_model)} has no model-written text")
    if record.attempts_used is not None and record.attempts_used > 0:
        absent = sorted(set(range(1, record.attempts_used + 1)) - attempts)
        if absent:
            out.append(f"attempts_used is {record.attempts_used} but attempt {_ranges(absent)} has no messages")
    return out


def _missing(present: set[int]) -> tuple[list[int], int]:
    """Numbers from 0 to max(present) that are absent: the first 10 and how many (a seq of 10^6 after
    seq 0 is counted, not listed)."""
    first, count, expect = [], 0, 0
    for v in sorted(present):
        if v > expect:
            count += v - expect
            first += range(expect, min(v, expect + 10 - len(first)))
        expect = v + 1
    return first, count


def _ranges(values: list[int], total: int | None = None) -> str:
    total = len(values) if total is None else total
    return ", ".join(map(str, values[:10])) + (f" and {total - 10} more" if total > 10 else "")


def material_problems(record: LeakRecord, material: TaskMaterial | None) -> list[str]:
    if material is None:
        return [f"no hidden suite for task {record.task_id} among the tasks given to the audit"]
    out = []
    if record.hidden_spec_hash and record.hidden_spec_hash != material.hidden_spec_hash:
        out.append(f"the hidden suite given ({material.hidden_spec_hash[:12]}) is not the one the run was "
                   f"scored with ({record.hidden_spec_hash[:12]})")
    if gt_as_visible(record, material):
        pass  # a violation, reported by judge()
    elif record.visible_spec_hash and material.visible_spec_hash and \
            record.visible_spec_hash != material.visible_spec_hash:
        out.append(f"the visible suite given ({material.visible_spec_hash[:12]}) is not the one the gate saw "
                   f"({record.visible_spec_hash[:12]})")
    return out


def gt_as_visible(record: LeakRecord, material: TaskMaterial | None) -> bool:
    """The gate's recorded visible suite is the task's hidden suite (and the task's V is not the same)."""
    return bool(material and record.visible_spec_hash
                and record.visible_spec_hash == material.hidden_spec_hash
                and material.visible_spec_hash != material.hidden_spec_hash)


def judge(record: LeakRecord, material: TaskMaterial | None, scanner: TaskScanner | None,
          control: ControlResult, matcher_name: str) -> RecordVerdict:
    v1 = scanner.scan_v1(record.messages) if scanner else ScanResult()
    v2 = scanner.scan_v2(record.messages) if scanner else ScanResult()
    reasons: list[str] = []
    violations = v2.violations
    if violations:
        first = violations[0]
        reasons.append(f"{len(violations)} v2 violation(s): hidden case {first.case_index} ({first.rule}: "
                       f"{_short(first.needle)!r}) in harness-written {first.purpose} text, message seq {first.seq}")
    suite_leak = gt_as_visible(record, material)
    if suite_leak:
        reasons.append("the gate ran the hidden GT suite as its visible suite (recorded visible_spec_hash "
                       f"{record.visible_spec_hash[:12]} is the GT suite's): GT reached selection")
    reasons += material_problems(record, material)
    reasons += gaps(record)
    if not control.valid:
        reasons.append(control.reason)
    verdict = "violation" if violations or suite_leak else ("unverifiable" if reasons else "clean")
    return RecordVerdict(record, verdict, reasons, v1, v2, inputs_sha256(record, material, matcher_name),
                         suite_leak)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
