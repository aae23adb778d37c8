"""External verifiers: a program that reads a candidate and answers PASS or FAIL, run in the sandbox.

The verifier program is Python defining ``verify(candidate: str) -> str``; it runs in its own
sandboxed process (the same backend and limits as candidates), one fresh process per decision, so
nothing carries over from one decision to the next and a re-run starts from reset. Whatever it does
inside -- exec the candidate against its own tests, as an EvalPlus-style evaluation would -- stays in
that box. Its answer must be exactly "PASS" or "FAIL"; anything else is ERROR malformed, a raise or a
failure to load is ERROR crash, no answer in time is ERROR timeout. The verifier is bound to the sha256
of its program text.
"""

from __future__ import annotations

from pathlib import Path

from acceptgate.errors import InvalidInput
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import run_calls
from acceptgate.v4v.verifiers import FAIL, PASS, VERSION, Binding, Decision, Verifier, error, sha256_text

ENTRY = "verify"


class ExternalVerifier(Verifier):
    family = "external"

    def __init__(self, name: str, program: str) -> None:
        self.name = name
        self.program = program
        self.program_sha256 = sha256_text(program)
        self.backend: Backend | None = None  # set by the certification before deciding
        self.limits = Limits()

    @classmethod
    def from_path(cls, path: str) -> "ExternalVerifier":
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read the verifier program: {exc}", source=path, field="--verifier") from None
        return cls(f"ext:{Path(path).name}", text)

    def binding(self, task) -> Binding:
        return Binding(f"{VERSION}:external", task.gold_sha256, self.program_sha256)

    def decide(self, candidate, task, run) -> Decision:
        if self.backend is None:
            raise RuntimeError("an external verifier needs a sandbox backend")
        outcomes, detail = run_calls(ENTRY, [((candidate.source,), {})], self.program, self.backend,
                                     limits=self.limits)
        if not outcomes:
            return error("crash", detail or "no answer")
        answer = outcomes[0]
        if answer.status == "timeout":
            return error("timeout", detail)
        if answer.status != "ok":
            return error("crash", f"{answer.status}: {answer.error_type or ''} {answer.message or detail}".strip())
        if answer.value == PASS:
            return Decision(PASS, reason="the verifier printed PASS")
        if answer.value == FAIL:
            return Decision(FAIL, reason="the verifier printed FAIL")
        shown = repr(answer.value)
        return error("malformed", f"answer {shown[:60]} is neither PASS nor FAIL")
