"""Controls that make a scan valid (SYSTEM.md section 4: a planted leak must be caught).

**Positive control**: take a copy of a harness-written message of a record in the scan, append a known
hidden case of that record's task (its call expression if hidden, else another stand-alone hidden
rendering, else an argument-list/expected pair), and run the same v2 scan (same task needles, same
matcher) over the copy. It must report a violation at exactly the planted offsets; otherwise the scan
proves nothing and every record of it is ``unverifiable`` with the reason.

**Negative control**: the same material planted in a copy of a model-written and of a task-author
message must be *found* (a hit) and must *not* be a v2 violation (v1 flags it: that is its flaw).
Nothing is written to the records: the copies exist only here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from acceptgate.leak.material import Needle
from acceptgate.leak.records import LeakRecord, RecordMessage
from acceptgate.leak.scanners import TaskScanner

FALLBACK_HARNESS_TEXT = "attempt 1: visible suite fail"  # when no record has harness text to copy


@dataclass(frozen=True)
class ControlResult:
    passed: bool
    detail: str
    negative_passed: bool
    negative_detail: str
    record: str = ""  # the record whose message was copied (run/arm/block/task)
    planted: str = ""

    @property
    def valid(self) -> bool:
        return self.passed and self.negative_passed

    @property
    def reason(self) -> str:
        """Why the scan is not valid ('' when it is)."""
        parts = []
        if not self.passed:
            parts.append(f"positive control failed: {self.detail}")
        if not self.negative_passed:
            parts.append(f"negative control failed: {self.detail if not self.negative_detail else self.negative_detail}")
        return "; ".join(parts)


def _plant_material(scanner: TaskScanner) -> list[Needle] | None:
    """What to plant for this task: one stand-alone hidden rendering, else an (args, expected) pair."""
    hidden = scanner.v2_needles
    for kind in ("call", "args", "expected", "arg", "piece"):
        for n in hidden:
            if n.alone and n.kind == kind:
                return [n]
    for n in hidden:
        if n.kind == "args":
            out = [o for o in hidden if o.case_index == n.case_index and o.side == "output"]
            if out:
                return [n, out[0]]
    return None


def _plant(text: str, needles: list[Needle]) -> tuple[str, list[tuple[int, int, str]]]:
    spots, out = [], text + "\n"
    for i, n in enumerate(needles):
        if i:
            out += " -> "
        spots.append((len(out), len(out) + len(n.text), n.text))
        out += n.text
    return out, spots


def _copy(m: RecordMessage | None, author: str, text: str) -> RecordMessage:
    seq = -1 if m is None else m.seq
    return RecordMessage(seq, 1 if m is None else m.attempt, author,
                         "revision_feedback" if m is None else m.purpose, "none", text)


def run_controls(records: Sequence[LeakRecord], scanner_for: Callable[[str], TaskScanner | None]) -> ControlResult:
    for rec in records:
        scanner = scanner_for(rec.task_id)
        if scanner is None:
            continue
        needles = _plant_material(scanner)
        if needles is None:
            continue
        who = f"{rec.run_id}/{rec.arm}/{rec.block or '-'}/{rec.task_id}"
        planted = " -> ".join(n.text for n in needles)
        harness = next((m for m in rec.messages if m.author == "harness" and m.text), None)
        text, spots = _plant(harness.text if harness else FALLBACK_HARNESS_TEXT, needles)
        copy = _copy(harness, "harness", text)
        found = {(h.start, h.end, h.needle) for h in scanner.scan_v2([copy]).violations}
        missing = [s for s in spots if s not in found]
        where = f"copy of message seq {copy.seq} of record {who}" if harness else f"a harness line for {who}"
        if missing:
            detail = (f"planted {planted!r} in a {where}; the {scanner.matcher_name} matcher reported no "
                      f"violation at characters {missing[0][0]}-{missing[0][1]}")
            passed = False
        else:
            detail, passed = f"planted {planted!r} in a {where}: caught", True
        neg_passed, neg_detail = _negative(rec, scanner, needles)
        return ControlResult(passed, detail, neg_passed, neg_detail, who, planted)
    return ControlResult(False, "no record of the scan has a task with hidden material to plant", True, "")


def _negative(rec: LeakRecord, scanner: TaskScanner, needles: list[Needle]) -> tuple[bool, str]:
    problems = []
    for author in ("model", "task"):
        original = next((m for m in rec.messages if m.author == author and m.text), None)
        text, spots = _plant(original.text if original else "", needles)
        result = scanner.scan_v2([_copy(original, author, text)])
        if result.violations:
            problems.append(f"material planted in {author}-written text was judged a violation")
        elif not {(h.start, h.end, h.needle) for h in result.hits} >= set(spots):
            problems.append(f"material planted in {author}-written text was not found at all")
    return (not problems), "; ".join(problems)
