"""Tasks whose outputs EvalPlus does not judge by plain equality with the reference ("special oracles").

Special cases are data here, never branches in an importer: each entry names the check dialect
(``acceptgate.suites.dialects``) that carries EvalPlus's rule into the suite. The spec names the dialect and
holds no code; the dialect's source is rendered into the harness and covered by ``render_hash``.

Sources: EvalPlus 0.3.1 ``evalplus/eval/__init__.py`` (``unsafe_execute``'s special oracles) and
``evalplus/eval/_special_oracle.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from acceptgate.suites import dialects
PROPERTY_CHECK = "property-check"
CHECK_DIALECT = "check-dialect"  # ImportIssue reason (kept): the task is judged by a check dialect


@dataclass(frozen=True)
class Oracle:
    dialect: Callable[[float], str]  # the dialect name, given the task's atol
    why: str
    # MBPP+ "not-None" tasks: the reference's output is reduced to ``out is not None`` (or kept when a
    # bool), as EvalPlus's ground truth does; the reference's own output may be no literal (re.Match).
    reduce_not_none: bool = False


# HumanEval/32 find_zero: any root is right (|poly(xs, x)| <= atol, EvalPlus's _poly).
HUMANEVAL: dict[str, Oracle] = {
    "HumanEval/32": Oracle(lambda atol: dialects.poly_root_name(atol or 1e-4),
                           "find_zero is judged by |poly(xs, output)| <= atol (any root is right)"),
}

# MBPP+ by entry point, as EvalPlus keys them.
_SET_EQ = ("similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly", "larg_nnum",
           "intersection_array", "find_dissimilar", "Diff")
_NOT_NONE = ("check_str", "text_match_three", "text_starta_endb")

MBPP: dict[str, Oracle] = {
    **{e: Oracle(lambda atol: "python-call+set-eq/1", "outputs compared as sets (order is free)")
       for e in _SET_EQ},
    **{e: Oracle(lambda atol: "python-call+not-none/1", "only whether the output is None is checked",
                 reduce_not_none=True) for e in _NOT_NONE},
    "are_equivalent": Oracle(lambda atol: "python-call+any-result/1",
                             "EvalPlus accepts any output that is returned (Mbpp/164)"),
    "sum_div": Oracle(lambda atol: "python-call+or-zero/1", "the expected output, or 0 (Mbpp/295)"),
    "surface_Area": Oracle(lambda atol: dialects.pyramid_area_name(float(atol)),
                           "the expected output, or the area recomputed with the apex height (Mbpp/581)"),
    "digit_distance_nums": Oracle(lambda atol: "python-call+digit-distance/1",
                                  "the expected output, or the distance of zero-padded numbers (Mbpp/558)"),
}


def humaneval_oracle(task_id: str) -> Oracle | None:
    return HUMANEVAL.get(task_id)


def mbpp_oracle(entry_point: str) -> Oracle | None:
    return MBPP.get(entry_point)
