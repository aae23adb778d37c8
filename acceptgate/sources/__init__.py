"""Candidate sources by name: ``codet:PATH``, ``evalplus:PATH`` (replays) and ``openai`` (live chat)."""

from __future__ import annotations

from acceptgate._util.errors import InvalidInput
from acceptgate.sources.base import (
    Candidate, CandidateSource, ChatMessage, DrawContext, PublicTask, SourceError, SourceExhausted, Usage,
)

__all__ = ["Candidate", "CandidateSource", "ChatMessage", "DrawContext", "PublicTask", "SourceError",
           "SourceExhausted", "Usage", "KINDS", "open_source"]

KINDS = ("codet:PATH", "evalplus:PATH", "openai")


def open_source(spec: str, *, per_task: int = 5, chat_config=None, strict: bool = True) -> CandidateSource:
    """A source from its command-line spelling; an unknown kind lists the valid ones.

    ``strict``: an invalid record in a replay file is an error (exit 2); otherwise it is kept in the
    source's ``problems`` and the run reports it and counts it as ``invalid``."""
    kind, _, arg = spec.partition(":")
    if kind == "codet" and arg:
        from acceptgate.sources.codet import CodetSource

        return CodetSource(arg, per_task=per_task, strict=strict)
    if kind == "evalplus" and arg:
        from acceptgate.sources.replay import ReplaySource

        return ReplaySource.from_path(arg, strict=strict)
    if kind == "openai" and not arg:
        from acceptgate.sources.openai_chat import ChatSource

        if chat_config is None:
            raise InvalidInput("the openai source needs --base-url and --model", field="--source")
        return ChatSource(chat_config)
    raise InvalidInput(f"unknown source {spec!r}; valid sources: {', '.join(KINDS)}", field="--source")
