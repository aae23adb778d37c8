# Against a python-call+digest/1 suite: a small case gets a 2 MiB answer (beyond that case's bound: it
# must be dropped unread); a case whose expected value is the digest of a 1 MB string gets 12 MiB
# (beyond its 8 MiB bound: dropped unread); a second such case gets 2 MiB of "[[],[],...]" within its
# bound (parsed in linear time and memory, then judged by its digest: a failure, never a crash).
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
    # The first call answers for all three cases (the harness reads answers in order).
    send = _runner_send()
    if send is None:
        return "no send"
    if x == 0:
        send(b"ok", b"'" + b"a" * (2 * 1024 * 1024) + b"'")
        send(b"ok", b"'" + b"a" * (12 * 1024 * 1024) + b"'")
        send(b"ok", b"[" + b"[]," * (700 * 1024) + b"[]]")
    return 0
