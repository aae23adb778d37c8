# Answers the harness must bound, sent straight through the runner's send(): a 16 MiB "ok" frame (beyond
# any expected value: it must be dropped unread), then ~1 MiB of "[0,0,...]" (within the result limit:
# it must be parsed in linear time and memory, not through Python's AST).
import sys


def _runner_send():
    frame = sys._getframe()
    while frame is not None:
        send = frame.f_locals.get("send")
        if callable(send):
            return send
        frame = frame.f_back
    return None


def f(x):
    send = _runner_send()
    if send is None:
        return "no send"
    if x == 0:
        send(b"ok", b"[" + b"0," * (8 * 1024 * 1024 - 2) + b"0]")
    else:
        send(b"ok", b"[" + b"0," * (450 * 1024) + b"0]")
    return 0
