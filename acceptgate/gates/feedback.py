"""What H-MIX tells the model after a failed round, and the signature that detects "no progress".

Feedback names the first failing *visible* case as ``AssertionError: args=… got=… want=…`` (an
exception, timeout or non-literal result gets its own type in front), long values truncated. The
failure signature is (kind, exception type, hash of the message): two rounds with the same signature
mean the revision changed nothing that matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from acceptgate._util.hashing import sha256_text
from acceptgate.gates.precheck import PrecheckResult
from acceptgate.sandbox.executor import ExecutionResult

VALUE_CHARS = 120  # per value in feedback
MESSAGE_CHARS = 300
DIFFERENT_APPROACH = "Your last two attempts failed the same way. Try a different approach."

_STATUS_TYPES = {"timeout": "TimeoutError", "memory": "MemoryError", "crash": "RuntimeError",
                 "protocol": "TypeError"}


def truncate(text: str | None, limit: int = VALUE_CHARS) -> str:
    text = "" if text is None else text
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


@dataclass(frozen=True)
class Failure:
    kind: str  # precheck kind, "load", or the executor's case/run status
    exc_type: str
    message: str  # the full (untruncated) message the signature hashes

    @property
    def signature(self) -> str:
        digest = sha256_text(self.message)[:16]
        return f"{self.kind}|{self.exc_type}|{digest}"

    @property
    def text(self) -> str:
        """The feedback line sent to the model."""
        return f"{self.exc_type}: {truncate(self.message, MESSAGE_CHARS + 3 * VALUE_CHARS)}"


def from_precheck(result: PrecheckResult) -> Failure:
    return Failure(kind=result.kind, exc_type=result.exc_type,
                   message=f"The code cannot load: {result.message}")


def from_execution(result: ExecutionResult) -> Failure:
    """The first failing visible case (or why the candidate did not load or run)."""
    bad = result.first_failure
    if bad is None:
        detail = result.detail
        if detail.startswith("candidate did not load: "):
            exc_type, _, msg = detail[len("candidate did not load: "):].partition(": ")
            return Failure("load", exc_type or "Error", truncate(msg, MESSAGE_CHARS))
        return Failure(result.verdict, _STATUS_TYPES.get(result.verdict, "RuntimeError"),
                       truncate(detail, MESSAGE_CHARS))
    args = f"args={truncate(bad.args)}"
    if bad.status == "fail":
        return Failure("fail", "AssertionError",
                       f"{args} got={truncate(bad.got)} want={truncate(bad.want)}")
    exc_type = bad.error_type or _STATUS_TYPES.get(bad.status, "RuntimeError")
    if exc_type == "NonLiteralResult":
        exc_type = "TypeError"
    message = bad.message or result.detail or bad.status
    return Failure(bad.status, exc_type, f"{truncate(message, MESSAGE_CHARS)} {args} want={truncate(bad.want)}")
