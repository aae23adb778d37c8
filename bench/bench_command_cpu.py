"""Where one command's own CPU goes: the whole process, and the parts every flow command pays.

    python3 bench/bench_command_cpu.py gate --arm conform --arm hmix --arm off \
        --source codet:../shared/data/samples/codet_codegen16B.jsonl.gz --suites DIR --limit 5 --warehouse W

Runs ``acceptgate ARGS...`` in this process (its temporary Prefect server, if any, is a child and not
counted) with ``time.process_time()`` around Great Expectations' import and context, its validations,
every expectation check (GE and the pandas rules) and the sandbox view's pin (``Pinned.try_pin``), and
prints the process's CPU and each part's calls and seconds on stderr at exit.
"""

from __future__ import annotations

import atexit
import collections
import functools
import runpy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptgate.store import expectations  # noqa: E402
from acceptgate.sandbox import residency  # noqa: E402

spent: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])


def timed(owner, name: str, label: str) -> None:
    raw = owner.__dict__[name]
    is_classmethod = isinstance(raw, classmethod)
    fn = raw.__func__ if is_classmethod else raw

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label][0] += 1
            spent[label][1] += time.process_time() - start

    setattr(owner, name, classmethod(wrapper) if is_classmethod else wrapper)


@atexit.register
def report() -> None:
    print(f"process CPU: {time.process_time():.1f} s", file=sys.stderr)
    for label, (calls, seconds) in spent.items():
        print(f"  {label}: {calls} calls, {seconds:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    timed(expectations._Gx, "__init__", "Great Expectations import and context")
    timed(expectations._Gx, "validate", "Great Expectations validation")
    timed(expectations, "failures", "expectation checks (GE and pandas rules, GE's import included)")
    timed(residency.Pinned, "try_pin", "sandbox view pinned (Pinned.try_pin)")
    sys.argv = ["acceptgate", *sys.argv[1:]]
    runpy.run_module("acceptgate", run_name="__main__")
