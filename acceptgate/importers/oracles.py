"""Tasks whose outputs EvalPlus does not judge by equality with the reference ("special oracles").

Special cases are data here, never branches in an importer. EvalPlus (``evalplus.eval``) judges
HumanEval/32 ``find_zero`` by a property -- ``|poly(xs, out)| <= atol`` -- because any root is a right
answer; an input -> expected-value suite cannot express that, so the task is excluded with this reason.
(EvalPlus's other special oracles are for MBPP tasks.)
"""

from __future__ import annotations

PROPERTY_CHECK = "property-check"

# task_id -> why equality with the reference's output is not the test
PROPERTY_CHECKED: dict[str, str] = {
    "HumanEval/32": "EvalPlus judges find_zero by a property (|poly(xs, output)| <= atol): any root is "
                    "right, so no expected value can be fixed",
}


def property_check_reason(task_id: str) -> str | None:
    return PROPERTY_CHECKED.get(task_id)
