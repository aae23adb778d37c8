# An exception class named with 8 M characters and an 8 M-character message; then a forged error frame
# just under the report limit with a 30,000-character type name (past the runner's own truncation).
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
    if x == 0:
        raise type("E" * 8_000_000, (Exception,), {})("m" * 8_000_000)
    send = _runner_send()
    if send is not None:
        send(b"raise", repr({"type": "T" * 30_000, "message": "m" * 30_000}).encode())
    return 0
