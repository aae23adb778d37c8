"""Helpers shared by the sandbox tests: a harness that can be SIGKILLed, and finding processes by name."""

from __future__ import annotations

import os
import time
from pathlib import Path

# A child harness (argv: tag, LocalBackend keyword arguments as JSON) that starts a candidate which
# names itself after the tag and leaves a detached survivor, then waits to be killed.
DYING_HARNESS = r'''
import json, sys, threading, time
from acceptgate.suites import render, suitespec
from acceptgate.sandbox import local
from acceptgate.sandbox.executor import execute
tag, options = sys.argv[1], json.loads(sys.argv[2])
source = f"""
import os, time
def f(x):
    open("/proc/self/comm", "w").write({tag!r})
    if os.fork() == 0:
        os.setsid()
        time.sleep(60)
    time.sleep(60)
"""
h = render.harness_for(suitespec.build("python-call/1", "f", [((1,), {}, 2)]))
b = local.LocalBackend(**options)
threading.Thread(target=execute, args=(h, source, b), daemon=True).start()
time.sleep(1.0)
print("running", flush=True)
time.sleep(60)
'''


def processes_named(tag: str) -> list[int]:
    """Live (not zombie) processes on the host whose comm is tag."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if Path(entry.path, "comm").read_text().strip() == tag:
                    state = Path(entry.path, "stat").read_text().rpartition(")")[2].split()[0]
                    if state not in ("Z", "X"):
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


def started(tag: str, seconds: float = 120.0) -> list[int]:
    """The processes named tag once there is one (the child harness says "running" a second after it
    starts the execution; on a loaded machine the candidate may not have named itself yet), or none
    after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (found := processes_named(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found
