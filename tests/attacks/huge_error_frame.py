# Reach the runner's own send() through the stack (the candidate controls its whole process) and answer
# with a well-formed 16 MiB "raise" frame: the trusted side must refuse it on its header, unparsed.
import sys
import time


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
    send(b"raise", repr({"type": "E", "message": "x" * (16 * 1024 * 1024 - 64)}).encode())
    time.sleep(60)
