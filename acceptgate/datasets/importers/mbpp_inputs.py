"""MBPP+ inputs as EvalPlus 0.3.1 reads them: the tuples JSON turned into lists, restored per task.

MBPP+ stores each input as a JSON list of arguments, so tuples (and the sets of Mbpp/115) arrive as
lists. EvalPlus restores them with a per-task table (``evalplus.data.mbpp.mbpp_deserialize_inputs``),
and its ground truth and its verdicts are computed on the restored inputs: a suite must use exactly
the same ones. The table is data here (task number -> rule); ``tests/test_mbppplus.py`` checks it
against EvalPlus's own function on every input when EvalPlus is installed (the ``evalplus`` extra or
the bench's venv). The ``complex`` rules of Mbpp/124 and /252 read EvalPlus's strings (``'(-0-1j)'``)
with ``complex()``, as EvalPlus does: every sign of a zero part kept, spelled exactly by the literal
grammar (``literals.canonical``).

Every other JSON coercion -- an input of the original MBPP asserts that JSON changed and the table does
not restore -- is *detected* by ``unrestored_coercions`` and reported, never silently changed: EvalPlus
tests the coerced value, and so must a suite that claims to agree with it.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from acceptgate.suites import literals
def _each_arg(inp: list) -> list:
    return [tuple(lst) for lst in inp]


def _each_arg_items(inp: list) -> list:
    return [[tuple(lst) for lst in lst_lst] for lst_lst in inp]


def _first_arg_items(inp: list) -> list:
    return [[tuple(lst) for lst in inp[0]]] + [inp[1]]


def _second_arg(inp: list) -> list:
    return [inp[0]] + [tuple(inp[1])]


def _sets_or_empty_dict(inp: list) -> list:
    # EvalPlus's own rule: a non-empty list becomes a set, an empty one a dict ({}), as written there
    return [[set(item) if isinstance(item, list) and len(item) else {} for item in inp[0]]]


def _float_complex(inp: list) -> Any:
    return (float(inp[0]), complex(inp[1]))


def _first_arg(inp: list) -> list:
    return [tuple(inp[0])] + [inp[1]]


def _both_levels(inp: list) -> list:
    return [tuple(lst) for lst in [[tuple(x) for x in lst_lst] for lst_lst in inp]]


def _task_278(inp: list) -> list:
    return [tuple(lst) for lst in [[tuple(item) if isinstance(item, list) else item for item in inp[0]]]]


def _task_307(inp: list) -> list:
    return [tuple(inp[0])] + [inp[1], inp[2]]


def _dict_values(inp: list) -> list:
    return [{key: tuple(value) for key, value in inp[0].items()}] + inp[1:]


def _complex(inp: list) -> list:
    return [complex(inp[0])]


def _all_lists(inp: Any) -> Any:
    if isinstance(inp, list):
        return tuple(_all_lists(item) for item in inp)
    return inp


RULES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    "each-argument-tuple": (_each_arg, (2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560,
                                        579, 596, 616, 630, 726, 740, 744, 809)),
    "each-argument-items-tuple": (_each_arg_items, (63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438,
                                                    473, 614, 780)),
    "first-argument-items-tuple": (_first_arg_items, (75, 413, 444, 753)),
    "second-argument-tuple": (_second_arg, (106, 750)),
    "sets-or-empty-dict": (_sets_or_empty_dict, (115,)),
    "float-and-complex": (_float_complex, (124,)),
    "first-argument-tuple": (_first_arg, (250, 405, 446, 617, 720, 763, 808)),
    "both-levels-tuple": (_both_levels, (259, 401, 445)),
    "items-and-arguments-tuple": (_task_278, (278,)),
    "first-of-three-tuple": (_task_307, (307,)),
    "dict-values-tuple": (_dict_values, (722,)),
    "complex": (_complex, (252,)),
    "all-lists-tuple": (_all_lists, (580, 615, 791)),
}
# What a rule restores, where it is not tuples (for the importer's note).
RESTORES = {"sets-or-empty-dict": "sets", "float-and-complex": "floats and complex numbers",
            "complex": "complex numbers"}
_BY_TASK = {n: (name, fn) for name, (fn, tasks) in RULES.items() for n in tasks}


def task_number(task_id: str) -> int:
    return int(task_id.split("/")[-1])


def rule_for(task_id: str) -> str | None:
    found = _BY_TASK.get(task_number(task_id))
    return found[0] if found else None


def deserialize(task_id: str, inputs: list) -> list:
    """EvalPlus's ``mbpp_deserialize_inputs``: the task's inputs with its tuples restored."""
    found = _BY_TASK.get(task_number(task_id))
    if found is None:
        return inputs
    return [found[1](inp) for inp in inputs]


def json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=True))


def unrestored_coercions(inputs: list, originals: list[tuple]) -> list[tuple[int, Any, tuple]]:
    """(index, input, original) for each input that is an original assert's arguments after a JSON
    round trip but differs from them even after the table's restoration."""
    by_json: dict[str, tuple] = {}
    for args in originals:
        try:
            by_json.setdefault(literals.canonical(json_round_trip(list(args))), args)
        except (TypeError, ValueError, literals.LiteralError):
            continue  # no JSON spelling: JSON cannot have held it
    found = []
    for index, args in enumerate(inputs):
        try:
            as_json = literals.canonical(json_round_trip(list(args)))
        except (TypeError, ValueError, literals.LiteralError):
            continue
        original = by_json.get(as_json)
        if original is not None and literals.canonical(tuple(args)) != literals.canonical(tuple(original)):
            found.append((index, args, original))
    return found
