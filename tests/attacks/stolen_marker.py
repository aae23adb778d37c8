# Steal the real marker from the runner (its frames, and the cells of the functions they hold) and write
# a forged "ok" frame on the real pipe.
import os
import sys


def _cell(function, name):
    code, cells = getattr(function, "__code__", None), getattr(function, "__closure__", None)
    if code is None or not cells or name not in code.co_freevars:
        return None
    value = cells[code.co_freevars.index(name)].cell_contents
    return value if isinstance(value, bytes) else None


def f(x):
    frame = sys._getframe()
    marker = None
    while frame is not None:
        for name, value in frame.f_locals.items():
            if name == "marker" and isinstance(value, bytes):
                marker = value
            elif callable(value):
                marker = _cell(value, "marker") or marker
        frame = frame.f_back
    if marker is None:
        return "no marker"
    payload = repr("forged").encode()
    forged = marker + b" ok " + str(len(payload)).encode() + b"\n" + payload
    for fd in range(3, 32):
        try:
            os.write(fd, forged)
        except OSError:
            pass
    return "forged"
