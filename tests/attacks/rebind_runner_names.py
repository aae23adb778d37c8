# Rebind every name the runner's code could look up once the candidate exists -- each builtin, and
# each name of the runner's own module (its globals, reached through the caller's frame) -- to a
# poisoned object, then answer. A runner that looked any of them up would frame or judge its answers
# differently (a dict holding an always-equal object passed as literal, a huge int or an error message
# spelled wrongly, an exception it could not catch); one that holds its references from before the
# candidate existed answers exactly as for the same program without the rebinding.
import builtins
import collections
import sys


class Poisoned:
    def __call__(self, *args, **kwargs):
        raise SAVED_RUNTIME_ERROR("poisoned")

    def __repr__(self):
        return "poisoned"


POISON = Poisoned()
SAVED_VALUE_ERROR, SAVED_OS_ERROR, SAVED_RUNTIME_ERROR = ValueError, OSError, RuntimeError
COUNTER = collections.Counter("abca")  # made now: the Counter class's own code needs the builtins


class Equal:  # always equal, spelled as the literal 1: never a literal answer
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __repr__(self):
        return "1"


def _poison(runner_globals):
    names = [(namespace, name) for namespace in (builtins.__dict__, runner_globals) for name in list(namespace)
             if not name.startswith("__")]  # all taken first: list() is poisoned too
    for namespace, name in names:
        namespace[name] = POISON


def _answer(shape):
    if shape == "int":
        return 3
    if shape == "posing_dict":
        return {"a": Equal()}
    if shape == "posing_list":
        return [1, Equal()]
    if shape == "huge_int":
        return 10 ** 5000
    if shape == "huge_in_containers":
        return [10 ** 5000, (1,), {2}, {3: (4, 5)}]
    if shape == "counter":
        return COUNTER
    if shape == "raise":
        raise SAVED_VALUE_ERROR("m" * 50)
    if shape == "enomem":
        raise SAVED_OS_ERROR(12, "mmap refused")
    return "unknown shape"


def f(shape):
    if shape == "poison":
        _poison(sys._getframe(1).f_globals)
        return 2
    return _answer(shape)
