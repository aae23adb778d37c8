"""Back-pressure and fairness: execution slots with a bounded queue, and a token bucket per client.

A request that would wait past the queue is refused at once (503 + Retry-After) rather than held:
memory stays bounded however many clients call. The rate limit refuses with 429 + Retry-After.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator


class Busy(Exception):
    def __init__(self, retry_after: float, reason: str) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.reason = reason


class ExecutionSlots:
    """At most ``slots`` sandbox executions at once; at most ``queue`` requests waiting for one."""

    def __init__(self, slots: int, queue: int, wait_seconds: float) -> None:
        self.slots, self.queue, self.wait_seconds = slots, queue, wait_seconds
        self._cond = threading.Condition()
        self._running = 0
        self._waiting = 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._cond:
            if self._running >= self.slots:
                if self._waiting >= self.queue:
                    raise Busy(1.0, f"all {self.slots} execution slots busy and {self.queue} requests queued")
                self._waiting += 1
                try:
                    deadline = time.monotonic() + self.wait_seconds
                    while self._running >= self.slots:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise Busy(1.0, f"no execution slot within {self.wait_seconds:g} s")
                        self._cond.wait(left)
                finally:
                    self._waiting -= 1
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify()

    def state(self) -> dict[str, int]:
        with self._cond:
            return {"running": self._running, "waiting": self._waiting, "slots": self.slots, "queue": self.queue}


class RateLimiter:
    """A token bucket per client: ``burst`` calls at once, refilled at ``per_minute``."""

    def __init__(self, per_minute: float, burst: int, max_clients: int = 10_000) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.max_clients = max_clients  # buckets kept (anonymous callers are one per address)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        """Forget full buckets (a new one starts full: nothing changes), then the oldest ones."""
        self._buckets = {c: (t, last) for c, (t, last) in self._buckets.items()
                         if t + (now - last) * self.rate < self.burst}
        if len(self._buckets) >= self.max_clients:
            keep = sorted(self._buckets.items(), key=lambda item: item[1][1])[-(self.max_clients // 2):]
            self._buckets = dict(keep)

    def take(self, client: str) -> None:
        now = time.monotonic()
        with self._lock:
            if client not in self._buckets and len(self._buckets) >= self.max_clients:
                self._prune(now)
            tokens, last = self._buckets.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[client] = (tokens, now)
                raise Busy((1.0 - tokens) / self.rate, f"rate limit: {self.rate * 60:g} calls per minute")
            self._buckets[client] = (tokens - 1.0, now)
