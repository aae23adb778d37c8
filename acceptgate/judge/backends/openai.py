"""An OpenAI-compatible chat endpoint as the judge (the seed's evaluator setting: one call per
trajectory, thinking off, temperature 0 by default). Transport, retries and token accounting are the
gate's ``ChatSource``; a call that fails after its retries is stored as an invalid verdict with the error."""

from __future__ import annotations

from acceptgate.judge.backends import Raw, label
from acceptgate.sources.base import ChatMessage, DrawContext, SourceError
from acceptgate.sources.openai_chat import ChatConfig, ChatSource


class ChatJudge:
    name = "openai"

    def __init__(self, config: ChatConfig, *, transport=None) -> None:
        self.source = ChatSource(config, transport=transport)
        self.name = label("openai", config)

    def judge(self, trajectory, card, observations, prompt) -> Raw:
        context = DrawContext("judge", (ChatMessage("system", prompt.system), ChatMessage("user", prompt.user)))
        try:
            text, usage, _ = self.source.complete(context)
        except SourceError as exc:
            return Raw("", error=str(exc))
        return Raw(text, usage.prompt_tokens, usage.completion_tokens)

    def close(self) -> None:
        self.source.close()
