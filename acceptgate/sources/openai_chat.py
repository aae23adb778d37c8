"""A live generator: an OpenAI-compatible ``/chat/completions`` endpoint, as a candidate source.

The gate decides what is said (``DrawContext.messages``); this module only carries it: POST with the
model name, retries with exponential backoff on 429, 5xx, timeouts and connection errors (honouring a
``Retry-After`` header), a per-call timeout, and token accounting from the response's ``usage``. The
API key is read from the environment variable the configuration names, at construction.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from acceptgate._util.errors import InvalidInput
from acceptgate.sources.base import (
    Candidate, CandidateSource, DrawContext, PublicTask, SourceError, Usage,
)
from acceptgate.sources.extract import assemble, extract_code

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class ChatConfig:
    base_url: str  # e.g. https://api.openai.com/v1 (the path /chat/completions is appended)
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = 120.0  # per HTTP call
    max_retries: int = 5  # retries after the first try
    backoff_seconds: float = 1.0  # first wait; doubles each retry
    backoff_max_seconds: float = 30.0
    temperature: float = 0.0
    max_tokens: int | None = 2048
    extra_body: dict[str, Any] = field(default_factory=dict)


@dataclass
class CallRecord:
    """One HTTP exchange, kept for accounting (status, wait before it, elapsed)."""

    status: int | None
    error: str
    waited_seconds: float
    elapsed_seconds: float


class ChatSource(CandidateSource):
    sends_messages = True

    def __init__(self, config: ChatConfig, *, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not config.base_url.startswith(("http://", "https://")):
            raise InvalidInput("base URL must start with http:// or https://", field="base_url")
        if not config.model:
            raise InvalidInput("a model name is required", field="model")
        key = os.environ.get(config.api_key_env, "")
        self.config = config
        self.name = f"openai:{config.model}"
        self._sleep = sleep
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(base_url=config.base_url.rstrip("/") + "/", headers=headers,
                                    transport=transport, trust_env=False)
        self.calls: list[CallRecord] = []  # every HTTP exchange of this source, for accounting
        self.usage_total = Usage()
        self._lock = threading.Lock()  # gates run tasks on threads

    def close(self) -> None:
        self._client.close()

    def _body(self, context: DrawContext) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": m.content} for m in context.messages],
            "temperature": self.config.temperature,
            "n": 1,
        }
        if self.config.max_tokens:
            body["max_tokens"] = self.config.max_tokens
        body.update(self.config.extra_body)
        return body

    def _backoff(self, retry: int, response: httpx.Response | None) -> float:
        wait = min(self.config.backoff_max_seconds, self.config.backoff_seconds * (2 ** retry))
        if response is not None:
            after = response.headers.get("retry-after", "")
            try:
                wait = min(self.config.backoff_max_seconds, max(wait, float(after)))
            except ValueError:
                pass
        return wait

    def complete(self, context: DrawContext) -> tuple[str, Usage, dict[str, Any]]:
        """POST the conversation; (reply text, usage, response meta). Raises SourceError."""
        if not context.messages:
            raise SourceError("no messages to send")
        body = self._body(context)
        timeout = self.config.timeout_seconds
        if context.timeout_seconds is not None:
            timeout = max(0.001, min(timeout, context.timeout_seconds))
        waited = 0.0
        last_error = ""
        for retry in range(self.config.max_retries + 1):
            started = time.monotonic()
            response = None
            try:
                response = self._client.post("chat/completions", json=body, timeout=timeout)
            except httpx.TimeoutException:
                last_error = f"timed out after {timeout:g} s"
            except httpx.TransportError as exc:
                last_error = f"connection error: {type(exc).__name__}: {exc}"
            elapsed = time.monotonic() - started
            status = response.status_code if response is not None else None
            self.calls.append(CallRecord(status, last_error if response is None else "", waited, elapsed))
            if response is not None:
                if response.status_code == 200:
                    text, usage, meta = self._parse(response)
                    meta["http_calls"] = retry + 1
                    return text, usage, meta
                last_error = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code not in RETRY_STATUS:
                    raise SourceError(f"{self.config.base_url}: {last_error}")
            if retry == self.config.max_retries:
                break
            waited = self._backoff(retry, response)
            self._sleep(waited)
        raise SourceError(f"{self.config.base_url}: gave up after {self.config.max_retries + 1} "
                          f"tries: {last_error}")

    def _parse(self, response: httpx.Response) -> tuple[str, Usage, dict[str, Any]]:
        try:
            doc = response.json()
            choice = doc["choices"][0]
            content = choice["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise SourceError(f"malformed chat completion ({type(exc).__name__}: {exc})") from None
        if not isinstance(content, str):
            raise SourceError("malformed chat completion: message content is not a string")
        raw_usage = doc.get("usage") or {}
        usage = Usage(prompt_tokens=int(raw_usage.get("prompt_tokens") or 0),
                      completion_tokens=int(raw_usage.get("completion_tokens") or 0))
        with self._lock:
            self.usage_total = Usage(self.usage_total.prompt_tokens + usage.prompt_tokens,
                                     self.usage_total.completion_tokens + usage.completion_tokens)
        meta = {"response_id": doc.get("id"), "finish_reason": choice.get("finish_reason"),
                "usage_reported": bool(raw_usage)}
        return content, usage, meta

    def draw(self, task: PublicTask, attempt: int, context: DrawContext) -> Candidate:
        started = time.monotonic()
        reply, usage, meta = self.complete(context)
        extraction = extract_code(reply, task.entry_point)
        program, how = assemble(task.prompt, task.entry_point, extraction.code)
        return Candidate(task_id=task.task_id, program=program, origin=self.name, attempt=attempt,
                         arm=context.arm, raw=reply, usage=usage,
                         latency_seconds=time.monotonic() - started,
                         extraction=f"{extraction.method}/{how}", meta=meta)
