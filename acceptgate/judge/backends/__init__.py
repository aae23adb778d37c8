"""Judge backends by name. Each turns (trajectory, card, observations, prompt) into the judge's *raw*
text output plus token usage; validation against F.2 happens afterwards, the same way for all of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

BACKENDS = ("rules", "replay", "openai")


@dataclass(frozen=True)
class Raw:
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    error: str = ""  # the backend could not produce an output for this trajectory (stored as invalid)


class JudgeBackend(Protocol):
    name: str

    def judge(self, trajectory, card, observations, prompt) -> Raw: ...

    def close(self) -> None: ...


def label(name: str, chat_config=None) -> str:
    """The backend's name as its run records it: a chat endpoint's with its model (``openai:<model>``)."""
    return f"openai:{chat_config.model}" if name == "openai" and chat_config is not None else name


def create(name: str, *, replay_path: str | None = None, chat_config=None, strict: bool = False) -> JudgeBackend:
    from acceptgate._util.errors import InvalidInput

    if name == "rules":
        from acceptgate.judge.backends.rules import RuleSensorJudge
        return RuleSensorJudge()
    if name == "replay":
        from acceptgate.judge.backends.replay import ReplayJudge
        if not replay_path:
            raise InvalidInput("the replay backend needs --replay FILE", field="--replay")
        return ReplayJudge(replay_path, strict=strict)
    if name == "openai":
        from acceptgate.judge.backends.openai import ChatJudge
        if chat_config is None:
            raise InvalidInput("the openai backend needs --base-url and --model", field="--backend")
        return ChatJudge(chat_config)
    raise InvalidInput(f"unknown judge backend {name!r}; valid backends: {', '.join(BACKENDS)}", field="--backend")
