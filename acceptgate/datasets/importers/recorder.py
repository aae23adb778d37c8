"""The calls a HumanEval ``check(candidate)`` makes, recorded by running it once against the reference.

Some ``check()`` functions test inputs no static reading can list: loops over random inputs (/38, /50,
/53), loops over computed inputs (/44), names bound to computed values (/151), a property over seeded
random polynomials (/32). Running ``check`` in the sandbox with a recording ``candidate`` -- which
notes a deep copy of each call's arguments, then answers with the reference -- yields exactly the
inputs the dataset's own test tries, as literals. Unseeded randomness is drawn once here, from
``random.seed(SEED)``: the suite is then fixed data (same hash everywhere), and the seed is recorded
in the import's manifest. The dataset's test code is trusted data, but it still runs only in the sandbox.
"""

from __future__ import annotations


from acceptgate.datasets.importers.common import REFERENCE_LIMITS
from acceptgate.sandbox.backend import Backend
from acceptgate.sandbox.executor import run_calls

SEED = 20260901  # the seed of every unseeded random input drawn at import (recorded in the manifest)
ENTRY = "_acceptgate_record_check_calls"

_RECORDER = '''

def _acceptgate_record_check_calls(seed):
    import copy as _copy
    import random as _random
    _random.seed(seed)
    _calls = []

    def _candidate(*args, **kwargs):
        _calls.append((_copy.deepcopy(args), _copy.deepcopy(kwargs)))
        return {entry_point}(*args, **kwargs)

    check(_candidate)
    return _calls
'''


def source(reference: str, test: str, entry_point: str) -> str:
    return reference + "\n\n" + test + _RECORDER.format(entry_point=entry_point)


def record(reference: str, test: str, entry_point: str, backend: Backend,
           seed: int = SEED) -> tuple[list[tuple[tuple, dict]] | None, str]:
    """([(args, kwargs), ...] in call order, "") or (None, why the calls could not be recorded)."""
    outcomes, detail = run_calls(ENTRY, [((seed,), {})], source(reference, test, entry_point), backend,
                                 limits=REFERENCE_LIMITS)
    if not outcomes:
        return None, detail or "no answer"
    got = outcomes[0]
    if got.status != "ok":
        return None, f"check() with the reference ended with {got.status}: {got.error_type or ''} " \
                     f"{got.message or ''}".strip()
    calls: list[tuple[tuple, dict]] = []
    for item in got.value:
        if not (type(item) is tuple and len(item) == 2 and type(item[0]) is tuple and type(item[1]) is dict):
            return None, "the recorder returned a malformed call"
        calls.append((item[0], item[1]))
    return calls, ""




_ASSERTION_RECORDER = '''

def _acceptgate_record_assertion_calls(assertion_source):
    import ast as _ast
    import copy as _copy
    _calls = []
    _real = {entry_point}

    def _recording(*args, **kwargs):
        _calls.append((_copy.deepcopy(args), _copy.deepcopy(kwargs)))
        return _real(*args, **kwargs)

    # the asserts see the recording function under the entry point's name; the reference itself
    # (and its recursion) keeps the real one
    import math as _math
    _namespace = dict(globals())
    _namespace.setdefault("math", _math)  # some MBPP asserts use math.isclose without importing math
    _namespace[{entry_point!r}] = _recording
    _failed = 0
    for _node in _ast.parse(assertion_source).body:
        try:
            exec(compile(_ast.Module(body=[_node], type_ignores=[]), "assertion", "exec"), _namespace)
        except Exception:  # a failing assert (or one that cannot run): its calls are recorded anyway
            _failed += 1
    return (_calls, _failed)
'''
ASSERTION_ENTRY = "_acceptgate_record_assertion_calls"


def record_assertions(reference: str, assertion: str, entry_point: str,
                      backend: Backend) -> tuple[list[tuple[tuple, dict]] | None, int, str]:
    """The calls a block of top-level asserts (MBPP's ``assertion``) makes to the entry point, run
    against the reference: (calls, asserts that failed with the reference, "") or (None, 0, why)."""
    program = reference + _ASSERTION_RECORDER.format(entry_point=entry_point)
    outcomes, detail = run_calls(ASSERTION_ENTRY, [((assertion,), {})], program, backend, limits=REFERENCE_LIMITS)
    if not outcomes:
        return None, 0, detail or "no answer"
    got = outcomes[0]
    if got.status != "ok":
        return None, 0, f"the asserts ended with {got.status}: {got.error_type or ''} {got.message or ''}".strip()
    calls, failed = got.value
    return [(a, k) for a, k in calls], failed, ""
