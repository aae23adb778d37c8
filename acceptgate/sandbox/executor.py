"""The trusted side of an execution: drives the runner case by case and decides the verdict.

The harness (this process) holds the cases and the comparison; the candidate's process receives only
arguments. Every frame carries a per-execution random marker. A result is accepted only if the runner
says it is a literal *and* it parses under the literal-only grammar here; anything else -- a forged
or missing marker, a malformed frame, a non-literal result, an exit before answering -- is ``protocol``.
"""

from __future__ import annotations

import functools
import gc
import itertools
import json
import marshal
import os
import secrets
import signal
import threading
import time
from collections import Counter, OrderedDict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from acceptgate.suites import dialects, literals

from acceptgate._util import forksafe, interrupt
from acceptgate._util.hashing import sha256_bytes, sha256_text
from acceptgate._util.parallel import parallel_map
from acceptgate.suites.render import NONLITERAL, Harness
from acceptgate.sandbox import answers, stages, workerprocs
from acceptgate.sandbox.backend import HASH_SEED, Backend, BackendUnavailable, ExitStatus, Limits, SandboxProcess

VERDICTS = ("pass", "fail", "error", "timeout", "memory", "crash", "protocol")
CASE_STATUSES = ("pass", "fail", "error", "timeout", "memory", "crash", "protocol")
MAX_FRAME = 16 * 1024 * 1024  # an ``ok`` frame (a result); beyond its case's bound (result_limits) it is skipped unread
MAX_REPORT = 64 * 1024  # any other frame: error reports (the runner's are a few KiB at most)
SHOW_CHARS = 1000  # args/got/want/messages kept per failing case
TYPE_CHARS = 200  # exception type names kept
DETAIL_CHARS = 2000  # an execution's detail
CANONICAL_SHOWN = 64 * 1024  # results up to this size are shown canonically, longer ones as sent
# CPU seconds the harness spends reading the answers of one execution (their parse is linear in their
# size, which the per-case bounds cap): beyond it, an answer is a failed case, too costly to judge.
JUDGE_CPU_SECONDS = 10.0
TOO_COSTLY = "too costly to judge"
# An answer at least this long is judged once per distinct text and harness case (_Prepared.judged): its
# hash costs a fraction of its parse and comparison (the digest cases' compare row of --breakdown).
LONG_ANSWER = 64 * 1024
JUDGED_PER_CASE = 8
# A hidden suite's blocks (block_plan): the first one's size. Wrong samples mostly fail within their
# suite's first few cases, so a small first block spares them most calls; each block's bit ("every
# answer so far passed") needs the whole block right (see the threat model), so it must not be small.
FIRST_BLOCK = 64


def block_plan(cases: int, first: int = FIRST_BLOCK) -> tuple[int, ...]:
    """The sizes of a hidden suite's blocks, in case order, from its number of cases alone (never from
    an answer): a first block of ``min(cases, first)`` cases, then blocks each twice the size of the one
    before, the last one what is left. So a passing program's suite has about log2(cases / first)
    boundaries, and a wrong one that fails within the first block is called for that block only."""
    sizes: list[int] = []
    size, left = first, cases
    while left > 0:
        sizes.append(min(size, left))
        left -= sizes[-1]
        size *= 2
    return tuple(sizes)


class ProtocolViolation(Exception):
    pass


@dataclass
class CaseResult:
    index: int
    status: str
    args: str | None = None  # canonical texts, truncated; kept for non-passing cases
    got: str | None = None
    want: str | None = None
    error_type: str | None = None
    message: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class ExecutionResult:
    verdict: str
    cases: list[CaseResult]
    spec_hash: str
    render_hash: str
    candidate_sha256: str
    isolation: dict[str, Any]
    detail: str = ""
    exit: str = ""
    wall_seconds: float = 0.0
    cases_total: int = 0
    timeout_clock: str = ""  # for a timeout: "cpu" (a CPU-time limit) or "wall" (wall time less the wait for a CPU, or the backstop)
    cpu_seconds: float | None = None  # CPU time of the sandbox's processes, where the backend counts it
    hash_seed: int = HASH_SEED  # the sandboxed interpreter's PYTHONHASHSEED (backend.HASH_SEED)
    # The blocks the cases were called in (sizes, fixed from their number before the run: block_plan);
    # () with fail-fast, where each answer is judged as it comes
    blocks: tuple[int, ...] = ()

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def cases_passed(self) -> int:
        return sum(1 for c in self.cases if c.status == "pass")

    @property
    def first_failure(self) -> CaseResult | None:
        return next((c for c in self.cases if c.status != "pass"), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "detail": self.detail,
            "cases_total": self.cases_total,
            "cases_passed": self.cases_passed,
            "cases": [c.as_dict() for c in self.cases],
            "spec_hash": self.spec_hash,
            "render_hash": self.render_hash,
            "candidate_sha256": self.candidate_sha256,
            "isolation": self.isolation,
            "exit": self.exit,
            "wall_seconds": round(self.wall_seconds, 4),
            "cpu_seconds": None if self.cpu_seconds is None else round(self.cpu_seconds, 4),
            "timeout_clock": self.timeout_clock,
            "hash_seed": self.hash_seed,
            "blocks": list(self.blocks),
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False)


def _short(text: str) -> str:
    return _clip(text, SHOW_CHARS)


# Why a timeout: the CPU-time limit (the execution's, its load's or a case's), or the wall clock: the
# time limit on wall time less the time the execution waited for a CPU (a sleep meets it; a machine's
# load does not), or the wall-clock backstop for a host too loaded to run it at all. Recorded apart
# (ExecutionResult.timeout_clock, and the start of its detail).
TIMEOUT_CLOCKS = ("cpu", "wall")
POLL_SECONDS = 0.005  # the shortest wait between two looks at the CPU counter
STOP_POLL_SECONDS = 0.25  # how soon a wait on a runner notices a stop request


def time_grace(limit: float) -> float:
    """How far the wall time less the run-queue delay may pass a limit: the kernel accounts a task's
    wait for a CPU when it gets one, and its CPU time at ticks, so a program that only computes reaches
    both clocks at once; it is its CPU time that decides."""
    return 0.05 + 0.02 * limit


class _Channel:
    """Framed messages over a SandboxProcess, under time limits and a wall-clock backstop.

    Where the backend counts the sandbox's CPU time (``proc.cpu_seconds()``), the execution's limit
    (``limits.wall_seconds``), its load's (``limits.load_seconds``) and each case's
    (``limits.case_seconds``) hold on two clocks: its CPU time, and its wall time less the time its
    processes waited, runnable, for a CPU (``proc.run_delay()``: the kernel's per-task run-queue delay).
    A sleep counts on the second, a busy machine on neither, so the load does not change a verdict. The
    wall clock proper is only the backstop ``limits.backstop(...)``. The counter is read when a phase
    starts and whenever the CPU could have used up what is left of a limit (the wait is cut to ``left /
    CPUs``); the run-queue delay when the wall time reaches a limit. Without a counter every limit is on
    the wall clock, as the limits name them.
    """

    def __init__(self, proc: SandboxProcess, marker: bytes, limits: Limits, started: float) -> None:
        self.proc = proc
        self.marker = marker
        self.limits = limits
        cpu = proc.cpu_seconds()
        self.measured = cpu is not None
        self.cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.limit = limits.wall_seconds
        self.wall_deadline = started + (limits.backstop(self.limit) if self.measured else self.limit)
        self.deadline = self.wall_deadline  # the one in force: the execution's, or a sooner per-case one
        self.cpu_start = self.case_cpu_start = self.cpu_seen = cpu or 0.0
        self.seen_at = time.monotonic()
        # The wall-time clocks: started, the harness's pauses and the run-queue delay taken away
        self.started, self.paused = started, 0.0
        self.delay = proc.run_delay() if self.measured else None
        self.soft = started + self.limit if self.measured else float("inf")
        self.case_soft = float("inf")
        self.case_started, self.case_delay0, self.case_paused0 = started, 0.0, 0.0
        self.phase = "load"
        self.waited = 0.0  # run-queue delay seen at the last look
        self.receiving_since: float | None = None  # when the frame being read began to arrive
        # One limit for every case, or one per case (a sequence, e.g. EvalPlus's per-input limits)
        self.case_seconds = limits.case_seconds
        self.case_limit = self.case_seconds if not isinstance(self.case_seconds, (tuple, list)) else None
        self.in_case = False
        self.counters_due = False  # a phase's counters not read yet (begin_phase, _read_case_counters)
        self.expired = ""  # what ran out: "cpu", "case-cpu", "time", "case-time", "wall", "case-wall"
        self.buf = bytearray()
        self.outbox = memoryview(b"")  # calls written ahead that the runner's input has not taken yet
        self.ok_limit = MAX_FRAME  # results beyond this are dropped unread (see recv)
        self.ok_limits: tuple[int, ...] | None = None  # or one such bound per case
        self.skipped = 0
        # The harness's own budget for reading and judging this execution's answers: CPU time of the
        # judging thread (time.thread_time), which the machine's load does not use up.
        self.judge_cpu_deadline = time.thread_time() + JUDGE_CPU_SECONDS

    def pause(self, seconds: float) -> None:
        """Stop the candidate's wall clocks for ``seconds``: the time the harness spent judging an answer
        is not the program's (on a loaded machine it can be several times its CPU cost). Its CPU
        clock needs no pause: the harness's work is not counted on it."""
        self.deadline += seconds
        self.wall_deadline += seconds
        self.paused += seconds
        self.soft += seconds
        self.case_soft += seconds

    def begin_phase(self, limit: float | None, phase: str) -> None:
        """A case (or the load) starts: its clocks, under ``limit`` (None: only the execution's)."""
        self.phase = phase
        self.in_case = limit is not None
        if limit is None:
            return
        self.case_limit = limit
        now = time.monotonic()
        backstop = self.limits.backstop(limit) if self.measured else limit
        self.deadline = min(self.wall_deadline, now + backstop)
        if self.measured:
            self.case_started, self.case_paused0 = now, self.paused
            self.case_soft = now + limit
            self.counters_due = True  # read by the first wait for this phase's answer (_read)

    def _read_case_counters(self) -> None:
        """The phase's CPU and run-queue delay at its start, read when the harness first has to wait for
        its answer (an answer read with an earlier one needs neither): what the runner used between the
        phase's start and this reading -- the harness's own few steps in between -- is not charged to
        the phase."""
        self.counters_due = False
        cpu = self.proc.cpu_seconds()
        if cpu is not None:
            self.cpu_seen, self.seen_at = cpu, time.monotonic()
        self.case_cpu_start = self.cpu_seen
        self.case_delay0 = self.delay.seconds(fresh=False) if self.delay is not None else 0.0

    def cpu_used(self) -> float:
        """CPU seconds of the execution so far (the last reading when the counter is gone)."""
        cpu = self.proc.cpu_seconds() if self.measured else None
        if cpu is not None:
            self.cpu_seen, self.seen_at = cpu, time.monotonic()
        return self.cpu_seen - self.cpu_start

    def _cpu_left(self) -> float:
        left = self.limit - (self.cpu_seen - self.cpu_start)
        if self.in_case and self.case_limit is not None:
            left = min(left, self.case_limit - (self.cpu_seen - self.case_cpu_start))
        return left

    def _wait_until(self) -> float:
        """How long to wait for the runner before looking at the clocks again."""
        if not self.measured:
            return self.deadline
        # Between the last reading and now the sandbox used at most (elapsed x CPUs) seconds of CPU.
        poll = self.seen_at + max(0.0, self._cpu_left()) / self.cpus
        soft = min(self.soft, self.case_soft if self.in_case else self.soft)
        return min(self.deadline, soft, max(poll, time.monotonic() + POLL_SECONDS))

    def _time_ran_out(self, now: float) -> bool:
        """The wall time less the run-queue delay and the harness's pauses, against the execution's and
        the phase's limit; moves the soft deadlines to when they could next be reached. Never while a
        process of the execution is runnable: its current wait for a CPU is not counted yet (and
        while it computes, its CPU clock decides)."""
        if self.receiving_since is not None or (self.delay is not None and self.delay.runnable()):
            later = now + 10 * POLL_SECONDS  # look again then (the CPU clock meanwhile, as its wait says)
            self.soft = later if self.soft <= now else self.soft
            self.case_soft = later if self.case_soft <= now else self.case_soft
            return False
        delay = self.delay.seconds() if self.delay is not None else 0.0
        self.waited = delay
        used = now - self.started - delay - self.paused
        if used >= self.limit + time_grace(self.limit):
            self.expired = "time"
            return True
        self.soft = now + max(POLL_SECONDS, self.limit + time_grace(self.limit) - used)
        if self.in_case and self.case_limit is not None:
            case = now - self.case_started - (delay - self.case_delay0) - (self.paused - self.case_paused0)
            if case >= self.case_limit + time_grace(self.case_limit):
                self.expired = "case-time"
                return True
            self.case_soft = now + max(POLL_SECONDS, self.case_limit + time_grace(self.case_limit) - case)
        return False

    def _clocks_ran_out(self) -> bool:
        """After a wait ended with no answer: has a limit been reached? (sets ``self.expired``)"""
        now = time.monotonic()
        if now >= self.deadline:
            self.expired = "wall" if self.deadline >= self.wall_deadline else "case-wall"
            return True
        if self.measured:  # the CPU clock first: where both ran out, the program's own work decided
            used = self.cpu_used()
            if used >= self.limit:
                self.expired = "cpu"
                return True
            if self.in_case and self.case_limit is not None and self.cpu_seen - self.case_cpu_start >= self.case_limit:
                self.expired = "case-cpu"
                return True
        if self.measured and (now >= self.soft or (self.in_case and now >= self.case_soft)):
            return self._time_ran_out(now)
        return False

    def timeout_clock(self) -> str:
        return "cpu" if self.expired in ("cpu", "case-cpu") else "wall"

    def timeout_detail(self, limits: Limits) -> str:
        used = f" ({self.cpu_used():.2f} s of CPU time used)" if self.measured else ""
        which = "of its load" if self.phase == "load" else "per case"
        waited = f"wall time less {self.waited:.2f} s waiting for a CPU{used}"
        if self.expired == "case-time":
            return f"time limit: more than the {self.case_limit:g} s {which} ({waited})"
        if self.expired == "time":
            return f"time limit: more than the {self.limit:g} s of the execution ({waited})"
        if self.expired == "case-cpu" and self.phase == "load":
            return f"CPU time limit: more than the {self.case_limit:g} s of its load"
        if self.expired == "case-cpu":
            return f"CPU time limit: more than the {self.case_limit:g} s per case"
        if self.expired == "cpu":
            return f"CPU time limit: more than the {self.limit:g} s of the execution"
        if self.expired == "case-wall":
            if self.measured:
                return (f"wall-clock backstop: no answer within {limits.backstop(self.case_limit):g} s "
                        f"for a case limited to {self.case_limit:g} s of CPU time{used}")
            return f"wall clock: no answer within the {self.case_limit:g} s per-case limit"
        if self.measured:
            return (f"wall-clock backstop: no answer within {limits.backstop(self.limit):g} s for an "
                    f"execution limited to {self.limit:g} s of CPU time{used}")
        return f"wall clock: no answer within the {limits.wall_seconds:g} s limit"

    def close(self) -> None:
        """Let the run-queue delay's descriptors go (the execution's processes are gone)."""
        if self.delay is not None:
            self.delay.close()

    def frame(self, kind: bytes, payload: bytes) -> bytes:
        return self.marker + b" " + kind + b" " + str(len(payload)).encode() + b"\n" + payload

    def send(self, kind: bytes, payload: bytes) -> None:
        self.proc.write(self.frame(kind, payload), self.deadline)

    def answers(self, calls: list[bytes], digests: frozenset[int] = frozenset(),
                ends: tuple[int, ...] = ()) -> Iterator[tuple[bytes, bytes]]:
        """(kind, payload) of each call's answer, in order; the caller may stop early.

        ``calls``: the marshalled (args, kwargs) of each call; ``digests``: the calls answered with the
        result's digest ("dcall"). Without ``ends``, one call at a time: call k+1 is written only after
        call k's answer has been read, so the runner's input never holds more than the call it is
        answering (a candidate that fails case k, or reads its input pipe ahead, learns nothing of the
        later cases). With ``ends`` (the case counts at which blocks end, fixed before the run), every
        call of a block is written ahead as the runner's input takes it: within a block the runner is
        called for every case whatever its answers, so it learns nothing it would not be sent anyway,
        and nothing of a block is written before the caller has taken the previous block's last
        answer (and judged it). Each case's clocks start when the previous answer is read.
        """
        marker = self.marker + b" call "
        dmarker = self.marker + b" dcall "
        each = isinstance(self.case_seconds, (tuple, list))
        timed = self.case_seconds is not None
        proc, recv = self.proc, self.recv
        ok_limits = self.ok_limits
        ahead = bool(ends) and getattr(proc, "pipelined", False)
        block_ends = iter(ends)
        queued = 0  # calls written, or waiting in the outbox
        self.begin_phase(None, "case")  # the load's clocks end with its answer
        self.deadline = self.wall_deadline
        for answered, call in enumerate(calls):
            if timed:  # this case's clocks start with the previous answer
                limit = self.case_seconds[min(answered, len(self.case_seconds) - 1)] if each else self.case_seconds
                self.begin_phase(limit, "case")
            if not ahead:
                written = time.monotonic()
                proc.write((dmarker if answered in digests else marker) + str(len(call)).encode() + b"\n" + call,
                           self.deadline)
                self.pause(time.monotonic() - written)  # a long call goes at the harness's pace
            elif answered == queued:  # the previous block is taken: the next one, whole
                queued = min(len(calls), next(block_ends, len(calls)))
                self.outbox = memoryview(b"".join(
                    (dmarker if i in digests else marker) + str(len(calls[i])).encode() + b"\n" + calls[i]
                    for i in range(answered, queued)))
            if ok_limits is not None:
                self.ok_limit = ok_limits[min(answered, len(ok_limits) - 1)]
            answer = recv()
            self.in_case = False
            handed = time.monotonic()
            try:
                yield answer
            finally:
                # What the caller did with the answer (judged it, held it, judged a block) is the
                # harness's time, not the program's: its wall-time clocks stop meanwhile (its CPU clock
                # does not count it anyway), also when the caller stops there (closes the generator).
                self.pause(time.monotonic() - handed)

    def _read(self) -> bytes:
        """One read of what the runner wrote (waiting for it under the clocks); b"" at its end. Calls
        written ahead (``outbox``) go on being written meanwhile. A stop request (SIGINT / SIGTERM) ends
        the reading, within STOP_POLL_SECONDS of a wait: a runner it killed may never answer, and one it
        did not may answer call after call."""
        if self.counters_due:
            self._read_case_counters()
        while True:
            interrupt.check()
            until = self._wait_until()
            try:
                wait = min(until, time.monotonic() + STOP_POLL_SECONDS)
                if self.outbox:
                    self.outbox, chunk = self.proc.pump(self.outbox, wait)
                    return chunk
                return self.proc.read(wait)
            except TimeoutError:
                interrupt.check()
                if time.monotonic() >= until and self._clocks_ran_out():
                    raise

    def _fill(self) -> None:
        chunk = self._read()
        if not chunk:
            raise EOFError
        self.buf += chunk

    def recv(self) -> tuple[bytes, bytes | None]:
        """The next frame's (kind, payload). Sizes are checked on the header, before any payload is
        buffered: an ``ok`` frame beyond ``self.ok_limit`` (but within MAX_FRAME) is read and dropped as it
        arrives, and its payload returned as None (``self.skipped`` holds its size); any other frame
        beyond MAX_REPORT, or an ``ok`` frame beyond MAX_FRAME, is a protocol violation.

        Once a frame has begun to arrive, its transfer goes at the harness's pace (a runner blocked on a
        full pipe sleeps): the wall-time clocks stop until it is in (the CPU clock and the backstop go
        on)."""
        self.receiving_since = time.monotonic() if self.buf else None
        try:
            return self._frame()
        finally:
            if self.receiving_since is not None:
                self.pause(time.monotonic() - self.receiving_since)
                self.receiving_since = None

    def _frame(self) -> tuple[bytes, bytes | None]:
        if not self.buf:
            # The usual case (one call at a time): the whole answer arrives in one read. It is parsed
            # from that chunk, with the same checks as below and no copy through the buffer.
            chunk = self._read()
            if not chunk:
                raise EOFError
            nl = chunk.find(b"\n", 0, 257)
            if nl >= 0:
                kind, size = self._header(chunk[:nl])
                if len(chunk) == nl + 1 + size:
                    if kind in VALUE_FRAMES and size > self.ok_limit:
                        self.skipped = size
                        return kind, None
                    return kind, chunk[nl + 1:]
            self.buf += chunk
            self.receiving_since = time.monotonic()
        while b"\n" not in self.buf:
            if len(self.buf) > 256:
                raise ProtocolViolation("frame header too long")
            self._fill()
        nl = self.buf.index(b"\n")
        if nl > 256:
            raise ProtocolViolation("frame header too long")
        kind, size = self._header(bytes(self.buf[:nl]))
        del self.buf[: nl + 1]
        if kind in VALUE_FRAMES and size > self.ok_limit:
            left = size
            while left:
                if not self.buf:
                    self._fill()
                drop = min(left, len(self.buf))
                del self.buf[:drop]
                left -= drop
            self.skipped = size
            return kind, None
        while len(self.buf) < size:
            self._fill()
        payload = bytes(self.buf[:size])
        del self.buf[:size]
        return kind, payload

    def _header(self, line: bytes) -> tuple[bytes, int]:
        """(kind, size) of a frame's header line (without its newline), or a ProtocolViolation."""
        head = line.split(b" ")
        if len(head) != 3 or not secrets.compare_digest(head[0], self.marker):
            raise ProtocolViolation("frame with a missing or forged marker")
        kind, size = head[1], head[2]
        if not size.isdigit() or len(size) > 12:
            raise ProtocolViolation("frame with an invalid length")
        size = int(size)
        limit = MAX_FRAME if kind in VALUE_FRAMES else MAX_REPORT
        if size > limit:
            raise ProtocolViolation(f"a {kind[:20]!r} frame of {size} bytes (limit {limit})")
        return kind, size


# Frames that carry a result: "ok" (its repr) and "counter" (an exact collections.Counter's items, as
# the repr of a dict; see runner.py).
VALUE_FRAMES = (b"ok", b"counter")


def answer_value(kind: bytes, value: Any) -> Any:
    """The result a value frame stands for. A counter frame's dict becomes a Counter built here from
    parsed literals, so that comparisons have Counter semantics exactly where Python's ``==`` has
    them (Counter against Counter; a Counter against a dict compares as dicts)."""
    if kind == b"counter":
        if type(value) is not dict:
            raise literals.LiteralError("counter frame", f"a {type(value).__name__}, not a dict")
        return Counter(value)
    return value


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, and encodable as UTF-8 (a lone surrogate from the candidate is
    spelled as its escape, so no writer of results can fail on it)."""
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _error_info(payload: bytes | None, deadline: float | None = None) -> dict[str, str]:
    """The runner's error report ({"type": str, "message": str}), with both texts truncated."""
    try:
        info = answers.parse((payload or b"").decode("utf-8", "replace"), deadline=deadline, max_depth=2)
    except literals.LiteralError as exc:
        raise ProtocolViolation(f"malformed error report: {exc}") from None
    if type(info) is not dict or not all(type(info.get(k)) is str for k in ("type", "message")):
        raise ProtocolViolation("malformed error report")
    return {"type": _clip(info["type"], TYPE_CHARS), "message": _clip(info["message"], SHOW_CHARS)}


def _raised_status(error_type: str) -> str:
    """``memory`` only for the built-in MemoryError as the runner names it (a candidate's own class
    is named with its module, e.g. ``candidate.MemoryError``); any other exception is ``error``."""
    return "memory" if error_type == "MemoryError" else "error"


def _classify_exit(status: ExitStatus, elapsed: float, limits: Limits,
                   cpu_used: float | None = None) -> tuple[str, str]:
    """The verdict of a runner that ended before answering, from what the harness observed.

    ``memory``: the cgroup or the container recorded an OOM kill. ``timeout`` from SIGXCPU only when
    the sandbox's CPU counter shows the limit used (``cpu_used``), or without a counter when the
    execution ran long enough to have used its CPU limit on every core of this host (the runner
    sets the soft limit a second below the hard one, so the real limit is a SIGXCPU); an earlier
    SIGXCPU was sent by the candidate itself and is a ``crash``, as is any other signal (its own
    init killed included).
    """
    if status.oom_killed:
        return "memory", status.describe()
    if status.signal == signal.SIGXCPU:
        # Half the limit: the rlimit's clock is the kernel's tick-sampled user + system time, which on a
        # loaded machine runs ahead of the counter's exact run time (seen at 0.90 s for a 1 s limit).
        if (cpu_used >= 0.5 * limits.cpu_seconds if cpu_used is not None
                else elapsed >= limits.cpu_seconds / (os.cpu_count() or 1)):
            return "timeout", f"{status.describe()} (the {limits.cpu_seconds} s CPU limit)"
        spent = f"{cpu_used:.2f} s of CPU time" if cpu_used is not None else f"{elapsed:.2f} s"
        return "crash", (f"{status.describe()} after {spent}: too soon for the {limits.cpu_seconds} s "
                         "CPU limit (sent by the candidate)")
    if status.signal:
        return "crash", status.describe()
    return "protocol", f"exited before answering ({status.describe()})"


@dataclass
class CallOutcome:
    """What a program returned for one call, outside any comparison (used to compute expected values)."""

    status: str  # "ok" | "error" | "memory" | "protocol" | "timeout" | "crash"
    value: Any = None
    error_type: str | None = None
    message: str | None = None


def _clock_ran_out(proc: SandboxProcess, chan: _Channel, limits: Limits) -> tuple[str, str, ExitStatus]:
    """(verdict, detail, exit status) once the wall clock ran out: ``memory`` when the sandbox recorded
    an OOM kill (e.g. of a forked child, while the runner slept on: the memory limit was hit, as when
    the runner itself is the one killed), else ``timeout``."""
    proc.kill()
    status = proc.wait(timeout=2.0)
    if status.oom_killed:
        return "memory", status.describe(), status
    return "timeout", chan.timeout_detail(limits), status


def run_calls(entry_point: str, calls: list[tuple[tuple, dict]], source: str, backend: Backend, *,
              limits: Limits = Limits(),
              parse: Callable[..., Any] = answers.parse) -> tuple[list[CallOutcome], str]:
    """Run a (trusted or not) program on each call in one sandboxed process; no expected values.

    Returns one outcome per call answered (a timeout or crash ends the list with that status) and a
    detail string for a process-level problem ("" when every call was answered). ``parse(text,
    deadline=...)`` reads each answer: ``answers.parse``, or a caller's reader of a known answer shape
    that gives the same value (and leaves anything else to ``answers.parse``).
    """
    outcomes: list[CallOutcome] = []
    marker = secrets.token_hex(16).encode()
    proc = backend.spawn(limits)
    # The clocks start once the sandbox exists: waiting for a pooled slot is not the program's time.
    started = time.monotonic()
    chan = _Channel(proc, marker, limits, started)
    chan.begin_phase(limits.load_seconds, "load")
    detail = ""
    try:
        proc.write(marker + b"\n", chan.deadline)
        chan.send(b"load", marshal.dumps({"source": source, "entry_point": entry_point,
                                          "limits": limits.rlimits(),
                                          "seccomp": getattr(proc, "runner_seccomp", b"")}))
        kind, payload = chan.recv()
        if kind == b"loaderr":
            info = _error_info(payload, chan.deadline)
            return [], _clip(f"did not load: {info['type']}: {info['message']}", DETAIL_CHARS)
        if kind != b"ready":
            raise ProtocolViolation(f"unexpected frame {kind[:20]!r} before ready")
        payloads = [marshal.dumps((tuple(args), dict(kwargs))) for args, kwargs in calls]
        for kind, payload in chan.answers(payloads):  # (the time spent on each answer is paused there)
            if kind in VALUE_FRAMES:
                # As execute's: read on the harness's own CPU budget (its judging thread's CPU time,
                # which the machine's load does not use up), with the candidate's clocks stopped.
                try:
                    value = answer_value(kind, parse(payload.decode("utf-8", "surrogatepass"),
                                                     deadline=chan.judge_cpu_deadline, clock=time.thread_time))
                    outcomes.append(CallOutcome("ok", value))
                except (literals.LiteralError, UnicodeDecodeError) as exc:
                    outcomes.append(CallOutcome("protocol", error_type="NonLiteralResult",
                                                message=_clip(str(exc), SHOW_CHARS)))
                except TimeoutError:
                    outcomes.append(CallOutcome("protocol", error_type="NonLiteralResult", message=(
                        f"a result of {len(payload)} bytes: too costly to read within the harness's "
                        f"{JUDGE_CPU_SECONDS:g} s CPU budget")))
            elif kind in (b"raise", b"nonliteral"):
                info = _error_info(payload, chan.deadline)
                status = "protocol" if kind == b"nonliteral" else _raised_status(info["type"])
                outcomes.append(CallOutcome(status, error_type=info["type"], message=info["message"]))
            else:
                raise ProtocolViolation(f"unexpected frame {kind[:20]!r}")
        chan.send(b"end", b"")
    except TimeoutError:
        verdict, detail, _ = _clock_ran_out(proc, chan, limits)
        outcomes.append(CallOutcome(verdict, message=detail))
    except ProtocolViolation as exc:
        outcomes.append(CallOutcome("protocol", message=str(exc)))
        detail = str(exc)
    except (EOFError, BrokenPipeError, ConnectionError):
        status = proc.wait(timeout=max(0.5, chan.wall_deadline - time.monotonic()))
        verdict, detail = _classify_exit(status, time.monotonic() - started, limits,
                                         chan.cpu_used() if chan.measured else None)
        outcomes.append(CallOutcome(verdict, message=detail))
    except BackendUnavailable:
        raise
    except Exception as exc:  # the trusted side's own failure on this answer: this call's protocol
        detail = _harness_failure(exc)
        outcomes.append(CallOutcome("protocol", message=detail))
    finally:
        proc.kill()
        proc.close()
        chan.close()
    return outcomes, detail


def execute_many(jobs: list[tuple[Harness, str]], backend: Backend, *, limits: Limits = Limits(),
                 fail_fast: bool = False, all_cases: bool = False, workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> list[ExecutionResult]:
    """Execute (harness, source) jobs in parallel, one sandboxed process each; results in job order."""
    return run_jobs([(h, src, limits) for h, src in jobs], backend, fail_fast=fail_fast, all_cases=all_cases,
                    workers=workers, progress=progress)


WORKER_PROCESSES = True  # False: a batch's workers are always threads (bench_worker_processes compares)
MIN_PROCESS_JOBS = 64  # fewer jobs than this do not pay for a backend per worker (its slots' start)


def run_jobs(jobs: list[tuple[Harness, str, Limits]], backend: Backend, *, fail_fast: bool = False,
             all_cases: bool = False, workers: int | None = None,
             progress: Callable[[int, int], None] | None = None) -> list[ExecutionResult]:
    """Execute (harness, source, limits) jobs on ``workers`` workers (default: the CPUs), one sandboxed
    process each, taken from a JobQueue; results in job order.

    The workers are processes forked from this one, each with a backend like ``backend``
    (``workerprocs``), when the backend can be made again in a child (``Backend.reopener``) and the
    batch is large enough; else threads of this process. The verdicts are the same either way."""
    workers = max(1, workers or os.cpu_count() or 1)
    factory = None
    if (WORKER_PROCESSES and workers > 1 and len(jobs) >= MIN_PROCESS_JOBS and not stages.ON
            and workerprocs.available()):
        factory = backend.reopener()
    run = functools.partial(_run_job, fail_fast=fail_fast, all_cases=all_cases)
    if factory is None:
        return _map_on_threads(lambda job: run(job, backend), jobs, workers=workers, progress=progress)
    seen: dict[int, Harness] = {}
    for harness, _, _ in jobs:
        seen.setdefault(id(harness), harness)
    for harness in list(seen.values())[:_PREPARED_MAX]:  # once here, shared by the children
        _prepare(harness)
    with _collector_spared():  # frozen before the fork: the children do not copy the pages of what they share
        return workerprocs.map_jobs(run, jobs, JobQueue(jobs), factory, workers, progress)


def _run_job(job: tuple[Harness, str, Limits], backend: Backend, *, fail_fast: bool,
             all_cases: bool) -> ExecutionResult:
    return execute(job[0], job[1], backend, limits=job[2], fail_fast=fail_fast, all_cases=all_cases)


INTERLEAVE_HARNESSES = 256  # harnesses taken in turn at once (fewer than the _prepare cache holds)


def _map_on_threads(fn: Callable[[tuple], ExecutionResult], jobs: list[tuple], *, workers: int,
                    progress: Callable[[int, int], None] | None = None) -> list[ExecutionResult]:
    """``fn`` over ``jobs`` (each a tuple whose first item is its harness) on ``workers`` threads
    (``parallel_map``'s, pinned), taken from a JobQueue; results in the jobs' order."""
    queue = JobQueue(jobs)
    results: list[ExecutionResult | None] = [None] * len(jobs)
    lock = threading.Lock()
    done = 0

    def worker(_: int) -> None:
        nonlocal done
        while (index := queue.take()) is not None:
            results[index] = result = fn(jobs[index])
            queue.done(index, result)
            if progress:
                with lock:
                    done += 1
                    progress(done, len(jobs))

    with _collector_spared():
        parallel_map(worker, range(min(workers, len(jobs))), workers=workers, pin=True)
    return results  # type: ignore[return-value]


class JobQueue:
    """The order a batch's jobs are taken in, by threads or worker processes (thread-safe).

    One job of each harness in turn (``interleaved_order``): the samples of one task tend to cost alike
    (one slow case, the same endless loop), and run back to back they can leave one worker with the last
    costly ones while the others wait at the end. For the same reason, once a job has run out of time,
    the jobs of its harness not yet taken go first: the rest of a task whose samples loop would otherwise
    come one per round, the last of them possibly at the very end of the batch with one worker busy for
    its whole limit and the others idle (LPT scheduling learnt as the batch goes). Verdicts do not depend
    on the order."""

    def __init__(self, jobs: list[tuple]) -> None:
        self._harness = [id(job[0]) for job in jobs]
        self._order = deque(interleaved_order(jobs))
        self._promoted: set[int] = set()
        self._lock = threading.Lock()

    def take(self) -> int | None:
        with self._lock:
            return self._order.popleft() if self._order else None

    def done(self, index: int, result: ExecutionResult) -> None:
        if result.verdict != "timeout":
            return
        harness = self._harness[index]
        with self._lock:
            if harness in self._promoted:
                return
            self._promoted.add(harness)
            first = [i for i in self._order if self._harness[i] == harness]
            if first:
                rest = [i for i in self._order if self._harness[i] != harness]
                self._order = deque(first + rest)


def interleaved_order(jobs: list[tuple]) -> list[int]:
    """The indices of ``jobs`` in the order a JobQueue starts from (see there), harnesses taken in windows
    of INTERLEAVE_HARNESSES, in the order they first appear."""
    by_harness: dict[int, list[int]] = {}
    for i, job in enumerate(jobs):
        by_harness.setdefault(id(job[0]), []).append(i)
    groups = list(by_harness.values())
    order: list[int] = []
    for start in range(0, len(groups), INTERLEAVE_HARNESSES):
        window = groups[start:start + INTERLEAVE_HARNESSES]
        for turn in range(max(len(g) for g in window)):
            order += [g[turn] for g in window if turn < len(g)]
    return order


_spared = 0
_spared_lock = threading.Lock()


forksafe.renew_in_child(globals(), _spared_lock=threading.Lock)  # another thread may have held it at the fork


@contextmanager
def _collector_spared() -> Iterator[None]:
    """The objects that exist when a batch starts (its suites and harnesses: millions for HumanEval+)
    kept out of the garbage collector's reach while it runs: each full collection would walk them all
    again, a third of a second each (bench_samples.py --breakdown, "garbage collector"). Nested and
    concurrent batches share one freeze; the last one out gives the objects back."""
    global _spared
    with _spared_lock:
        if _spared == 0:
            gc.freeze()
        _spared += 1
    try:
        yield
    finally:
        with _spared_lock:
            _spared -= 1
            if _spared == 0:
                gc.unfreeze()


def _runner_ended(proc, chan: "_Channel", limits: Limits, started: float, run: "_Run") -> None:
    """The runner closed its pipe: its exit status says why (a crash, a signal, the CPU limit)."""
    result = run.result
    status = proc.wait(timeout=max(0.5, chan.wall_deadline - time.monotonic()))
    if status.returncode is None:
        proc.kill()
        status = proc.wait(timeout=2.0)
    result.verdict, result.detail = _classify_exit(status, time.monotonic() - started, limits,
                                                   chan.cpu_used() if chan.measured else None)
    if result.verdict == "timeout":
        result.timeout_clock = "cpu"  # SIGXCPU with the limit used
    result.exit = status.describe()
    run.ended(result.verdict)


def execute(
    harness: Harness,
    source: str,
    backend: Backend,
    *,
    limits: Limits = Limits(),
    fail_fast: bool = False,
    all_cases: bool = False,
) -> ExecutionResult:
    """Run one candidate program against one loaded harness in one sandboxed process.

    ``fail_fast``: judge each answer as it comes and stop at the first failing case -- only where
    nothing is hidden from the candidate (a visible suite): being called again tells it that its
    previous answer passed. Otherwise (the default) the cases are called in blocks fixed before the run
    from their number alone (``block_plan``; ``all_cases``: one block of them all): within a block every
    case is called whatever the earlier answers were and the answers are held unjudged; at the end of a
    block every answer of it is judged the same way, whichever passed (``_block_passed``), and the
    execution stops there if one failed; the last block's answers are judged once the runner is gone."""
    interrupt.check()  # after SIGINT / SIGTERM no new sandbox starts (queued executions end here)
    started = time.monotonic()
    if stages.ON:
        stages.start()
    count = len(harness.cases)
    blocks = () if fail_fast else block_plan(count, count if all_cases else FIRST_BLOCK)
    result = _new_result(harness, source, backend.isolation(limits).as_dict(), blocks)
    marker = secrets.token_hex(16).encode()
    proc = backend.spawn(limits)
    if stages.ON:
        stages.mark("spawn")
    # The clocks start once the sandbox exists: waiting for a pooled slot is not the program's time.
    chan = _Channel(proc, marker, limits, time.monotonic())
    chan.begin_phase(limits.load_seconds, "load")
    held = None if fail_fast else _Held()
    run = _Run(result, held)
    try:
        _drive(harness, source, proc, chan, limits, run, fail_fast)
    except TimeoutError:
        result.verdict, result.detail, status = _clock_ran_out(proc, chan, limits)
        if result.verdict == "timeout":
            result.timeout_clock = chan.timeout_clock()
        result.exit = status.describe()
        run.ended(result.verdict)
    except ProtocolViolation as exc:
        result.verdict = "protocol"
        result.detail = str(exc)
        run.ended("protocol")
    except (EOFError, BrokenPipeError, ConnectionError):
        _runner_ended(proc, chan, limits, started, run)
    except BackendUnavailable:
        if held is not None:
            held.close()
        raise
    except Exception as exc:  # the trusted side's own failure on this answer: never the batch's
        result.verdict = "protocol"
        result.detail = _harness_failure(exc)
        run.ended("protocol")
    finally:
        proc.kill()
        if not result.exit or result.exit.startswith("exit code None"):
            final = proc.wait(timeout=2.0)
            result.exit = final.describe()
            if run.answered is not None:
                run.answered = final
        if chan.measured and result.cpu_seconds is None:
            result.cpu_seconds = chan.cpu_used()
        proc.close()
        chan.close()
        result.wall_seconds = time.monotonic() - started
        if stages.ON:
            stages.mark("teardown")
    if held is not None:  # the runner is gone: only now is anything judged
        _judge_held(harness, held, chan, run)
    return _verdict(result, run, limits)


def _new_result(harness: Harness, source: str, isolation: dict[str, Any], blocks: tuple[int, ...]) -> ExecutionResult:
    return ExecutionResult(verdict="pass", cases=[], spec_hash=harness.spec_hash, render_hash=harness.render_hash,
                           candidate_sha256=sha256_text(source), isolation=isolation,
                           cases_total=len(harness.cases), blocks=blocks)


class _Run:
    """What an execution has found so far: its result, the answers held for later (blind mode), the
    case being waited for and how the runner ended after answering every case it was sent."""

    def __init__(self, result: ExecutionResult, held: "_Held | None") -> None:
        self.result, self.held = result, held
        self.current: int | None = None  # the case being waited for (cases are answered in order)
        self.answered: ExitStatus | None = None
        self.ended_as: str | None = None  # the status of the case the execution ended on, if any
        ends = list(itertools.accumulate(result.blocks))
        self.boundaries = frozenset(ends[:-1])  # the cases after which a block ends and another follows
        self.statuses: list[str] = []  # of the answers judged at a boundary, in case order (_block_passed)

    def ended(self, status: str) -> None:
        """The execution ended (a limit, a protocol error, an exit) while case ``current`` was awaited."""
        if self.current is None:
            return
        if self.held is not None:
            self.ended_as = status
        elif len(self.result.cases) == self.current:
            self.result.cases.append(CaseResult(index=self.current, status=status))


def _drive(harness: Harness, source: str, proc: SandboxProcess, chan: _Channel, limits: Limits, run: _Run,
           fail_fast: bool) -> None:
    """Load the candidate and make the calls; in blind mode (``run.held``) hold the answers unjudged."""
    result = run.result
    proc.write(chan.marker + b"\n", chan.deadline)
    load = {"source": source, "entry_point": harness.entry_point, "limits": limits.rlimits(),
            "seccomp": getattr(proc, "runner_seccomp", b"")}  # a filter the runner loads itself
    if harness.dialect == dialects.DIGEST:  # the runner digests those results itself, with the harness's code
        load["digest"] = dialects.EQUALITY_DIGEST_SOURCE
    chan.send(b"load", marshal.dumps(load))
    kind, payload = chan.recv()
    if kind == b"loaderr":
        info = _error_info(payload, chan.deadline)
        result.verdict = _raised_status(info["type"])
        result.detail = _clip(f"candidate did not load: {info['type']}: {info['message']}", DETAIL_CHARS)
        # The runner ends by itself after a load error: its own exit is what happened.
        result.exit = proc.wait(timeout=min(0.5, max(0.0, chan.deadline - time.monotonic()))).describe()
        if result.exit.startswith("exit code None"):
            result.exit = "still running after reporting the load error (killed)"
        return
    if kind != b"ready":
        raise ProtocolViolation(f"unexpected frame {kind[:20]!r} before ready")
    if stages.ON:
        stages.mark("load")
    prepared = _prepare(harness)
    chan.ok_limit = min(MAX_FRAME, harness.result_limit)
    chan.ok_limits = _ok_limits(harness)
    run.current = 0
    calls = chan.answers(prepared.calls, prepared.digests, _written_ahead(result.blocks) if run.held is not None else ())
    try:
        for index, (kind, payload) in enumerate(calls):  # (the time spent on each answer is paused there)
            if stages.ON:
                stages.mark("round trip")
            if run.held is not None:
                run.held.add(kind, payload, chan.skipped if payload is None else 0)
                run.current = index + 1
                if run.current in run.boundaries and not _block_passed(harness, run, chan):
                    break  # the first block boundary after a failing case: nothing more is called
                continue
            case = _judge(harness, prepared, index, kind, payload, chan)
            result.cases.append(case)
            run.current = index + 1
            if case.status != "pass" and fail_fast:
                break
    finally:
        calls.close()
    run.current = None
    if chan.measured:  # read before the runner ends (a fork server then builds its next environment)
        result.cpu_seconds = chan.cpu_used()
    chan.send(b"end", b"")
    run.answered = proc.wait(timeout=min(0.5, max(0.0, chan.deadline - time.monotonic())))
    result.exit = run.answered.describe()


def _written_ahead(blocks: tuple[int, ...]) -> tuple[int, ...]:
    """The case counts up to which calls are written ahead: each block's end (its calls, no more)."""
    return tuple(itertools.accumulate(blocks))


def _judge(harness: Harness, prepared: "_Prepared", index: int, kind: bytes, payload: bytes | None,
           chan: _Channel) -> CaseResult:
    """One answer's CaseResult."""
    if kind == b"ok" and payload == prepared.expected_text[index] and prepared.text_passes[index]:
        case = CaseResult(index=index, status="pass")  # the text's verdict, computed once
    elif kind == b"ok" and payload is not None and len(payload) >= LONG_ANSWER:
        case = _judge_once(harness, prepared, index, payload, chan)
    else:
        args, kwargs, want = harness.cases[index]
        case = _judge_case(harness, index, args, kwargs, want, kind, payload, chan)
    if stages.ON:
        want = harness.cases[index][2]  # a digest case's expected value is ("sha256", hexdigest, length)
        stages.mark("compare (digest)" if type(want) is tuple and want[:1] == ("sha256",) else "compare")
    return case


HELD_IN_MEMORY = 64 * 1024 * 1024  # held answers beyond this go to an unlinked temporary file


class _Held:
    """The answers of a blind execution, in case order, unjudged until the runner is gone: in memory up
    to HELD_IN_MEMORY bytes, then in an unlinked temporary file (each answer is bounded by its case's
    size limit, so the file by the suite's)."""

    def __init__(self) -> None:
        import tempfile

        self._file = tempfile.SpooledTemporaryFile(max_size=HELD_IN_MEMORY)
        self._index: list[tuple[bytes, int, int, int]] = []  # (kind, offset, length or -1, skipped size)
        self._end = 0

    def add(self, kind: bytes, payload: bytes | None, skipped: int) -> None:
        if payload is None:
            self._index.append((kind, 0, -1, skipped))
            return
        self._file.seek(self._end)
        self._file.write(payload)
        self._index.append((kind, self._end, len(payload), 0))
        self._end += len(payload)

    def __len__(self) -> int:
        return len(self._index)

    def get(self, index: int) -> tuple[bytes, bytes | None, int]:
        kind, offset, length, skipped = self._index[index]
        if length < 0:
            return kind, None, skipped
        self._file.seek(offset)
        return kind, self._file.read(length), 0

    def close(self) -> None:
        self._file.close()


def _judge_held(harness: Harness, held: _Held, chan: _Channel, run: _Run) -> None:
    """Blind mode, once the runner is gone: every held answer's CaseResult in case order (one found to
    pass at a block boundary is not judged again), then the case the execution ended on (if it ended
    before answering them all)."""
    prepared = _prepare(harness)
    try:
        for index in range(len(held)):
            if index < len(run.statuses) and run.statuses[index] == "pass":
                run.result.cases.append(CaseResult(index=index, status="pass"))
                continue
            kind, payload, skipped = held.get(index)
            chan.skipped = skipped
            try:
                case = _judge(harness, prepared, index, kind, payload, chan)
            except ProtocolViolation as exc:
                case = CaseResult(index=index, status="protocol", message=_short(str(exc)))
            except Exception as exc:  # the trusted side's own failure on this answer: this case's
                case = CaseResult(index=index, status="protocol", message=_harness_failure(exc))
            run.result.cases.append(case)
    finally:
        held.close()
    if run.ended_as is not None and len(run.result.cases) < run.result.cases_total:
        run.result.cases.append(CaseResult(index=len(run.result.cases), status=run.ended_as))


def _block_passed(harness: Harness, run: _Run, chan: _Channel) -> bool:
    """At a block boundary, the runner waiting for its next call: whether every answer so far passed.

    What the candidate can time here -- until its next call, or until it is told to end -- must not
    depend on which answers passed. So every answer of the block is judged, whatever the ones before it
    were (no early exit), and each the same way: parsed and compared in full (no shortcut for an answer
    spelled as its expected value, nor for one judged before: _judge's), and nothing shown for a failing
    one yet (its texts are made once the runner is gone). What is left to vary is the parse, which
    follows the answer's own text, and the comparison, bounded by the case's size limit."""
    held, statuses = run.held, run.statuses
    for index in range(len(statuses), len(held)):
        kind, payload, skipped = held.get(index)
        chan.skipped = skipped
        args, kwargs, want = harness.cases[index]
        try:
            status = _assess(harness, index, args, kwargs, want, kind, payload, chan)[0]
        except Exception:  # ProtocolViolation, or the harness's own failure: this case's protocol
            status = "protocol"
        statuses.append(status)
    if stages.ON:
        stages.mark("block boundary")
    return all(status == "pass" for status in statuses)


def _verdict(result: ExecutionResult, run: _Run, limits: Limits) -> ExecutionResult:
    """The execution's verdict from its cases: the first non-passing case's status, in case order (what
    a fail-fast run would have stopped at), unless the memory limit was hit while the runner answered."""
    bad = result.first_failure
    if run.answered is not None and run.answered.oom_killed:
        # The memory limit was hit while the candidate answered: which of its processes the kernel killed
        # (a child, so the runner answered, or the runner itself) depends on timing, i.e. on the load.
        # Hitting the limit decides, so the verdict does not depend on how busy the machine is.
        result.verdict = "memory"
        result.detail = (f"the {limits.memory_bytes >> 20} MiB memory limit was hit during the execution "
                         "(an OOM kill), though the runner answered")
        return result
    if bad is not None and (result.verdict == "pass" or run.held is not None):
        if run.held is not None and bad.status == result.verdict and result.detail:
            return result  # the execution ended on this very case: its own detail says more
        if bad.status != "timeout":
            result.timeout_clock = ""
        result.verdict = bad.status
        result.detail = f"case {bad.index}: {bad.status}" + (f" ({bad.message})" if bad.message and
                                                              bad.status == "protocol" else "")
    return result


@dataclass(frozen=True)
class _Prepared:
    """What every execution of one harness sends and expects, computed once per harness.

    ``expected_text[i]`` is ``repr`` of case i's expected value, as the runner spells a result, and
    ``text_passes[i]`` the verdict of an answer with exactly that text (parsed and compared here, as
    any answer would be). An answer byte-identical to it has that verdict without being parsed
    again: parsing is deterministic, so this is the same judgement, made once. ``judged[i]`` holds
    the same for long answers as they come: the sha256 of an answer's text -> its CaseResult (a few
    distinct texts per case; never a verdict the harness's CPU budget decided).
    """

    calls: list[bytes]
    expected_text: list[bytes | None]
    text_passes: list[bool]
    judged: dict[int, dict[str, CaseResult]] = field(default_factory=dict)
    # cases whose expected value is a digest ("sha256", hexdigest, length): the runner answers with
    # the result's digest (a "dcall"), never with the result (up to a GB) itself
    digests: frozenset[int] = frozenset()


_PREPARED_MAX = 512
# id(harness) -> (harness, prepared); the harness is kept so that its id cannot be reused meanwhile.
_prepared: OrderedDict[int, tuple[Harness, _Prepared]] = OrderedDict()
_prepared_lock = threading.Lock()
forksafe.renew_in_child(globals(), _prepared_lock=threading.Lock)


def _prepare(harness: Harness) -> _Prepared:
    key = id(harness)
    with _prepared_lock:
        found = _prepared.get(key)
        if found is not None and found[0] is harness:
            _prepared.move_to_end(key)
            return found[1]
    calls, texts, passes = [], [], []
    for args, kwargs, want in harness.cases:
        calls.append(marshal.dumps((args, kwargs)))
        try:
            text = repr(want).encode("utf-8", "surrogatepass")
            ok = bool(harness.judge(answers.parse(text.decode("utf-8", "surrogatepass")), want, args, kwargs))
        except Exception:  # e.g. a value repr cannot spell within the grammar: judged in full each time
            text, ok = None, False
        texts.append(text)
        passes.append(ok)
    digests = frozenset(i for i, (_, _, want) in enumerate(harness.cases)
                        if harness.dialect == dialects.DIGEST and _is_digest(want))
    made = _Prepared(calls, texts, passes, digests=digests)
    with _prepared_lock:
        _prepared[key] = (harness, made)
        while len(_prepared) > _PREPARED_MAX:
            _prepared.popitem(last=False)
    return made


def _ok_limits(harness: Harness) -> tuple[int, ...] | None:
    """Per-case answer bounds where they differ (a digest suite's few huge cases), else None."""
    limits = harness.result_limits
    if len(set(limits)) <= 1:
        return None
    return tuple(min(MAX_FRAME, x) for x in limits)


def _judge_once(harness: Harness, prepared: _Prepared, index: int, payload: bytes, chan: _Channel) -> CaseResult:
    """A long ``ok`` answer's verdict, judged in full once per distinct text (see _Prepared)."""
    key = sha256_bytes(payload)
    seen = prepared.judged.setdefault(index, {})
    found = seen.get(key)
    if found is not None:
        return replace(found)
    args, kwargs, want = harness.cases[index]
    case = _judge_case(harness, index, args, kwargs, want, b"ok", payload, chan)
    if len(seen) < JUDGED_PER_CASE and not (case.got or "").endswith(_over_budget()):
        seen[key] = replace(case)
    return case


def _over_budget() -> str:
    """The end of a case's ``got`` when the harness's CPU budget, not the answer, decided it."""
    return f"{TOO_COSTLY} within the harness's {JUDGE_CPU_SECONDS:g} s CPU budget>"


def _harness_failure(exc: Exception) -> str:
    return _clip(f"the harness could not judge this answer: {type(exc).__name__}: {exc}", DETAIL_CHARS)


def _judge_case(harness: Harness, index: int, args: tuple, kwargs: dict, want: Any,
                kind: bytes, payload: bytes | None, chan: _Channel) -> CaseResult:
    """One answer's CaseResult, judged in full (a failing one with its call, answer and expected value)."""
    status, shown = _assess(harness, index, args, kwargs, want, kind, payload, chan)
    if status == "pass":
        return CaseResult(index=index, status="pass")
    if "value" in shown:
        shown["got"] = _shown(*shown.pop("value"))
    if "comparison" in shown:
        exc = shown.pop("comparison")
        shown.update(error_type="ComparisonError", message=_short(f"{type(exc).__name__}: {exc}"))
    call = literals.canonical(args) if not kwargs else (
        literals.canonical(args) + ", **" + literals.canonical(kwargs))
    return CaseResult(index=index, status=status, args=_short(call), want=_short(literals.canonical(want)), **shown)


def _assess(harness: Harness, index: int, args: tuple, kwargs: dict, want: Any,
            kind: bytes, payload: bytes | None, chan: _Channel) -> tuple[str, dict[str, Any]]:
    """An answer's status, and what a non-passing one's CaseResult shows besides its call and expected
    value -- its texts, or ``value`` (the parsed answer and its text) and ``comparison`` (the exception a
    comparison raised) -- with nothing formatted yet (at a block boundary only the status is wanted:
    _block_passed)."""
    if kind in VALUE_FRAMES:
        if payload is None:
            return "fail", {"got": f"<a result of {chan.skipped} bytes: larger than the expected value allows>"}
        try:
            text = payload.decode("utf-8", "surrogatepass")
            # Parsing is the harness's time, not the candidate's (EvalPlus times only the call): the
            # candidate's clocks stop meanwhile (execute), and it is bounded by the answer's size limit
            # and the harness's CPU budget for the execution, never by the machine's load.
            got = answer_value(kind, answers.parse(text, deadline=chan.judge_cpu_deadline, clock=time.thread_time))
        except (literals.LiteralError, UnicodeDecodeError) as exc:
            raise ProtocolViolation(_clip(f"case {index}: result is not a literal ({exc})", DETAIL_CHARS)) from None
        except TimeoutError:
            return "fail", {"got": f"<a result of {len(payload)} bytes: {_over_budget()}"}
        try:
            same = bool(harness.judge(got, want, args, kwargs))
        except Exception as exc:  # any comparison is total: an exception on this answer is its failure
            return "fail", {"value": (got, text), "comparison": exc}
        return ("pass", {}) if same else ("fail", {"value": (got, text)})
    if kind == b"digest":
        return _assess_digest(index, payload, want)
    if kind == b"raise":
        info = _error_info(payload, chan.deadline)
        return _raised_status(info["type"]), {"error_type": info["type"], "message": info["message"]}
    if kind == b"nonliteral":
        info = _error_info(payload, chan.deadline)
        if harness.nonliteral_judged:  # the not-None rule: an opaque object is a non-None value
            try:
                same = bool(harness.judge(NONLITERAL, want, args, kwargs))
            except Exception:  # total, as above
                same = False
            return ("pass", {}) if same else ("fail", {"got": info["message"]})
        return "protocol", {"error_type": "NonLiteralResult", "message": info["message"]}
    raise ProtocolViolation(f"case {index}: unexpected frame {kind[:20]!r}")


def _is_digest(want: Any) -> bool:
    return type(want) is tuple and len(want) == 3 and want[0] == "sha256"


def _assess_digest(index: int, payload: bytes | None, want: Any) -> tuple[str, dict[str, Any]]:
    """A "digest" answer ("<sha256 hex> <length>" of the result's equality form) against a digest case."""
    try:
        hexdigest, length = (payload or b"").decode("ascii").split(" ")
        got = (hexdigest, int(length))
    except (UnicodeDecodeError, ValueError):
        raise ProtocolViolation(f"case {index}: a malformed digest answer") from None
    if not _is_digest(want):
        raise ProtocolViolation(f"case {index}: a digest answer to a case that holds its value")
    if got == (want[1], want[2]):
        return "pass", {}
    return "fail", {"got": f"<a result whose equality form is {got[1]} bytes, sha256 {got[0][:16]}...>"}


def _shown(got: Any, text: str) -> str:
    """A failing result as stored: canonical (set order independent of the hash seed) when small."""
    if len(text) <= CANONICAL_SHOWN:
        try:
            return _short(literals.canonical(got))
        except (literals.LiteralError, ValueError, RecursionError):
            pass
    return _short(text)
