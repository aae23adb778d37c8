"""The chat-completions client and H-MIX against a real HTTP server on 127.0.0.1 (scripted replies)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from acceptgate.suites import suitespec
from acceptgate.gates import run_gate
from acceptgate.gates.hmix import CHECK_BY_HAND, HmixCaps, imports_line
from acceptgate.gates.records import content_of
from acceptgate.sources.base import ChatMessage, DrawContext, PublicTask, SourceError
from acceptgate.sources.openai_chat import ChatConfig, ChatSource
from acceptgate.datasets.task import HIDDEN, VISIBLE, Task


class ChatServer:
    """Speaks POST /v1/chat/completions; replies from a script (a list of steps in order, or a function
    of the request body); records every request."""

    def __init__(self, script) -> None:
        self.script = script if callable(script) else list(script)
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "raw": raw.decode("utf-8"), "body": json.loads(raw),
                                        "at": time.monotonic()})
                if callable(server.script):
                    step = server.script(json.loads(raw))
                else:
                    step = server.script.pop(0) if server.script else {"status": 500}
                time.sleep(step.get("delay", 0))
                status = step.get("status", 200)
                if status == 200:
                    payload = {"id": f"cmpl-{len(server.requests)}", "object": "chat.completion",
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": step["content"]}}]}
                    if step.get("usage", True):
                        payload["usage"] = {"prompt_tokens": step.get("prompt_tokens", 100),
                                            "completion_tokens": step.get("completion_tokens", 20),
                                            "total_tokens": 120}
                    data = json.dumps(payload).encode()
                else:
                    data = json.dumps({"error": {"message": f"scripted {status}"}}).encode()
                try:
                    self.send_response(status)
                    for k, v in step.get("headers", {}).items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "ChatServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def source_for(server: ChatServer, monkeypatch, **overrides) -> ChatSource:
    monkeypatch.setenv("TEST_CHAT_KEY", "sk-test-123")
    options = dict(base_url=server.base_url, model="scripted-1", api_key_env="TEST_CHAT_KEY",
                   timeout_seconds=2.0, max_retries=3, backoff_seconds=0.01, backoff_max_seconds=0.5)
    options.update(overrides)
    return ChatSource(ChatConfig(**options))


PROMPT = 'def add(a, b):\n    """Return a + b.\n    >>> add(1, 2)\n    3\n    """\n'
CONTEXT = DrawContext(arm="hmix", messages=(ChatMessage("user", PROMPT),))


def task_with_secret_hidden() -> Task:
    visible = suitespec.build("python-call/1", "add", [((1, 2), {}, 3), ((0, 0), {}, 0)])
    # Values that appear nowhere but in the hidden suite: any trace of them in a request is a leak.
    hidden = suitespec.build("python-call/1", "add", [((918273645, 50607), {}, 918324252),
                                                      ((-77123, 40411), {}, -36712)])
    return Task(task_id="T/add", dataset="test", entry_point="add", prompt=PROMPT,
                reference="def add(a, b):\n    return a + b\n", suites={VISIBLE: visible, HIDDEN: hidden})


def test_request_shape_key_and_usage(monkeypatch):
    reply = "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```\n"
    with ChatServer([{"content": reply, "prompt_tokens": 31, "completion_tokens": 9}]) as server:
        with source_for(server, monkeypatch) as src:
            cand = src.draw(PublicTask.from_task(task_with_secret_hidden()), 1, CONTEXT)
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test-123"
    assert req["body"]["model"] == "scripted-1"
    assert req["body"]["messages"] == [{"role": "user", "content": PROMPT}]
    assert cand.usage.prompt_tokens == 31 and cand.usage.completion_tokens == 9
    assert cand.raw == reply
    assert cand.program.endswith("def add(a, b):\n    return a + b\n")
    assert cand.extraction.startswith("fenced")
    assert cand.origin == "openai:scripted-1" and cand.meta["http_calls"] == 1


def test_retries_429_and_5xx_with_backoff_then_succeeds(monkeypatch):
    script = [{"status": 429, "headers": {"Retry-After": "0.2"}}, {"status": 503}, {"status": 500},
              {"content": "def add(a, b):\n    return a + b\n"}]
    with ChatServer(script) as server:
        with source_for(server, monkeypatch) as src:
            cand = src.draw(PublicTask.from_task(task_with_secret_hidden()), 1, CONTEXT)
            waits = [c.waited_seconds for c in src.calls]
            statuses = [c.status for c in src.calls]
    assert statuses == [429, 503, 500, 200]
    assert len(server.requests) == 4
    # Retry-After 0.2 s beat the 0.01 s backoff; then 0.02, 0.04 (doubling).
    assert waits == [0.0, 0.2, 0.02, 0.04]
    assert server.requests[1]["at"] - server.requests[0]["at"] >= 0.2
    assert cand.meta["http_calls"] == 4 and cand.extraction.startswith("bare")
    # identical request every time
    assert len({r["raw"] for r in server.requests}) == 1


def test_timeout_is_retried(monkeypatch):
    script = [{"content": "too late", "delay": 1.0}, {"content": "def add(a, b):\n    return a + b\n"}]
    with ChatServer(script) as server:
        with source_for(server, monkeypatch, timeout_seconds=0.3) as src:
            cand = src.draw(PublicTask.from_task(task_with_secret_hidden()), 1, CONTEXT)
            first = src.calls[0]
    assert first.status is None and "timed out" in first.error
    assert "return a + b" in cand.program


def test_client_error_is_not_retried(monkeypatch):
    with ChatServer([{"status": 400}, {"content": "never sent"}]) as server:
        with source_for(server, monkeypatch) as src:
            with pytest.raises(SourceError, match="HTTP 400"):
                src.complete(CONTEXT)
    assert len(server.requests) == 1


def test_gives_up_after_max_retries(monkeypatch):
    with ChatServer([{"status": 502}] * 10) as server:
        with source_for(server, monkeypatch, max_retries=2) as src:
            with pytest.raises(SourceError, match="gave up after 3 tries: HTTP 502"):
                src.complete(CONTEXT)
    assert len(server.requests) == 3


def test_malformed_reply_is_a_source_error(monkeypatch):
    with ChatServer([{"content": None}]) as server:
        with source_for(server, monkeypatch) as src:
            # content null is allowed by the protocol (tool calls); an empty program results
            text, usage, _ = src.complete(CONTEXT)
    assert text == "" and usage.total == 120


def test_missing_usage_is_accounted_as_zero_and_flagged(monkeypatch):
    with ChatServer([{"content": "def add(a, b): return a + b", "usage": False}]) as server:
        with source_for(server, monkeypatch) as src:
            text, usage, meta = src.complete(CONTEXT)
    assert usage.total == 0 and meta["usage_reported"] is False


# --- H-MIX through the endpoint -------------------------------------------------------------------

SYNTAX_ERROR = "```python\ndef add(a, b)\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"


def hidden_material(task: Task) -> list[str]:
    """Texts unique to the hidden suite: its inputs and expected values, as canonical literals."""
    out = []
    for c in task.suites[HIDDEN].cases:
        out += [c.expected_text] + [str(a) for a in c.args]
    return out


def test_hmix_conversation_feedback_and_no_hidden_material(monkeypatch, local_backend):
    task = task_with_secret_hidden()
    with ChatServer([{"content": SYNTAX_ERROR}, {"content": WRONG}, {"content": RIGHT}]) as server:
        with source_for(server, monkeypatch) as src:
            out = run_gate("hmix", PublicTask.from_task(task), src, local_backend)
    assert (out.decision, out.attempts_used, out.delivered_attempt) == ("delivered", 3, 3)
    assert [a.precheck for a in out.attempts] == ["syntax", "ok", "ok"]
    assert [a.v_verdict for a in out.attempts] == ["not-run", "fail", "pass"]
    assert out.tokens_used == 3 * 120
    first, second, third = (r["body"]["messages"] for r in server.requests)
    # Round 1: one user message = task text + allowed imports + check by hand.
    assert first == [{"role": "user", "content": PROMPT.rstrip("\n") + "\n\n" + imports_line() + "\n\n" + CHECK_BY_HAND}]
    # Round k>1: first user message + previous reply + current feedback, nothing else.
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[0] == first[0] and second[1]["content"] == SYNTAX_ERROR
    assert second[2]["content"].startswith("SyntaxError: The code cannot load: line 1: expected ':'")
    assert third[0] == first[0] and third[1]["content"] == WRONG
    assert third[2]["content"] == "AssertionError: args=(1, 2) got=-1 want=3"
    # No hidden-GT material in any byte sent.
    for req in server.requests:
        for secret in hidden_material(task):
            assert secret not in req["raw"], f"hidden value {secret} sent to the model"
    # The stored messages rebuild exactly what was sent, with authors.
    for n, req in enumerate(server.requests, start=1):
        assert [{"role": r, "content": c} for r, c in content_of(out.messages, n)] == req["body"]["messages"]
    authors = {(m.author, m.purpose) for m in out.messages}
    assert ("task", "generation") in authors and ("harness", "revision_feedback") in authors
    assert ("model", "generation") in authors and ("harness", "stop_decision") in authors
    assert out.messages[-1].text == "delivered: attempt 3 passed the visible suite"


def test_hmix_same_signature_nudges_then_refuses(monkeypatch, local_backend):
    task = PublicTask.from_task(task_with_secret_hidden())
    with ChatServer([{"content": WRONG}] * 3 + [{"content": RIGHT}]) as server:
        with source_for(server, monkeypatch) as src:
            out = run_gate("hmix", task, src, local_backend)
    assert (out.decision, out.attempts_used) == ("refused", 3)
    assert out.stop_reason == "same failure signature as the previous round (second repeat)"
    assert len({a.signature for a in out.attempts}) == 1
    feedback2 = server.requests[1]["body"]["messages"][2]["content"]
    feedback3 = server.requests[2]["body"]["messages"][2]["content"]
    assert "different approach" not in feedback2
    assert feedback3.endswith("Try a different approach.")
    assert len(server.requests) == 3


def test_hmix_call_cap(monkeypatch, local_backend):
    task = PublicTask.from_task(task_with_secret_hidden())
    replies = [f"```python\ndef add(a, b):\n    return a - b + {i}\n```" for i in range(5)] + [RIGHT]
    with ChatServer([{"content": r} for r in replies]) as server:
        with source_for(server, monkeypatch) as src:
            out = run_gate("hmix", task, src, local_backend)
    assert (out.decision, out.attempts_used, len(server.requests)) == ("refused", 5, 5)
    assert out.stop_reason == "cap reached: 5 calls"


def test_hmix_token_cap(monkeypatch, local_backend):
    task = PublicTask.from_task(task_with_secret_hidden())
    script = [{"content": WRONG, "prompt_tokens": 15000, "completion_tokens": 1500},
              {"content": "def add(a, b):\n    return 0\n", "prompt_tokens": 15000, "completion_tokens": 1500},
              {"content": RIGHT}]
    with ChatServer(script) as server:
        with source_for(server, monkeypatch) as src:
            out = run_gate("hmix", task, src, local_backend)
    assert (out.decision, out.attempts_used, out.tokens_used) == ("refused", 2, 33000)
    assert out.stop_reason == "cap reached: 33000 tokens (cap 32000)"


def test_hmix_wall_cap_bounds_the_call_timeout(monkeypatch, local_backend):
    task = PublicTask.from_task(task_with_secret_hidden())
    with ChatServer([{"content": WRONG, "delay": 1.5}] * 3) as server:
        with source_for(server, monkeypatch, max_retries=0) as src:
            started = time.monotonic()
            out = run_gate("hmix", task, src, local_backend, caps=HmixCaps(wall_seconds=0.5))
    assert time.monotonic() - started < 3.0
    assert out.decision == "refused" and out.stop_reason.startswith("generator failed")


# --- CONFORM and OFF through the endpoint ---------------------------------------------------------

def test_conform_resamples_the_generation_message_and_off_delivers_the_first(monkeypatch, local_backend):
    """First reply wrong, then right: CONFORM delivers draw 2, each draw the same one-message request
    (task text + allowed imports, no check-by-hand line); OFF delivers the first reply unchecked."""
    task = task_with_secret_hidden()
    public = PublicTask.from_task(task)
    with ChatServer([{"content": WRONG}, {"content": RIGHT}, {"content": WRONG}]) as server:
        with source_for(server, monkeypatch) as src:
            conform = run_gate("conform", public, src, local_backend)
            off = run_gate("off", public, src, local_backend)
    assert (conform.decision, conform.attempts_used, conform.delivered_attempt) == ("delivered", 2, 2)
    assert [a.v_verdict for a in conform.attempts] == ["fail", "pass"]
    assert conform.tokens_used == 2 * 120
    assert (off.decision, off.attempts_used) == ("delivered", 1)
    assert "return a - b" in off.delivered.program and off.attempts[0].v_verdict == "not-run"
    expected = [{"role": "user", "content": PROMPT.rstrip("\n") + "\n\n" + imports_line()}]
    assert [r["body"]["messages"] for r in server.requests] == [expected] * 3
    # The stored messages rebuild what was sent, with the task's and the harness's parts apart.
    for out, requests in ((conform, server.requests[:2]), (off, server.requests[2:])):
        for n, req in enumerate(requests, start=1):
            assert [{"role": r, "content": c} for r, c in content_of(out.messages, n)] == req["body"]["messages"]
        assert [(m.author, m.role) for m in out.messages if m.request == 1] == [("task", "user"), ("harness", "user")]
    for req in server.requests:
        for secret in hidden_material(task):
            assert secret not in req["raw"]


def test_conform_and_off_refuse_when_the_endpoint_fails(monkeypatch, local_backend):
    public = PublicTask.from_task(task_with_secret_hidden())
    with ChatServer([{"status": 400}] * 2) as server:
        with source_for(server, monkeypatch) as src:
            outs = [run_gate(arm, public, src, local_backend) for arm in ("conform", "off")]
    for out in outs:
        assert (out.decision, out.attempts_used) == ("refused", 0)
        assert out.stop_reason.startswith("generator failed:") and "HTTP 400" in out.stop_reason
