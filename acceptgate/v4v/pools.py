"""Candidate pools per task, labelled by construction only: label, kind and the recipe that made each one.

| class | kinds (recipe) | label |
| --- | --- | --- |
| gold | gold (prompt + canonical solution) | legal |
| legal variant | surface (rename, reformat, reorder, default-arg) via ``ast``; restructure (the gold behind a delegating entry point) | legal |
| ordinary wrong | no-op, near-miss (AST mutation operators; a point fault on one hidden input), regression (edge inputs broken) | illegal |
| attack | special-case-visible, fake-success-output, fake-success-exit, always-equal, exception-swallowing, stateful | illegal |
| model sample | different implementations from a samples file | unlabelled: measured, never used to certify |

No verifier's verdict sets or changes a label: the six gates run on the task's source verifier (GT)
against these labels, and a disagreement is a finding (``taskcert``), never a relabel.

The published part is built from the task's data by seeded, sorted procedures, so it is identical on
every run and machine (ids ``<task>:<kind>:<recipe>``); ``heldout`` adds a part made fresh per run.
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from dataclasses import dataclass
from typing import Any

from acceptgate._util import pyast
from acceptgate.suites import literals
from acceptgate.v4v import mutation
from acceptgate.v4v.candidates import (  # noqa: F401  (re-exported: pools are where they are made)
    HELD_OUT, ILLEGAL, KIND_CLASS, LEGAL, PUBLISHED, UNLABELLED, PoolCandidate, TaskMaterial, make, normalise,
    sha256_text,
)

KINDS = tuple(KIND_CLASS)
CLASSES = ("gold", "legal-variant", "ordinary-wrong", "attack", "model-sample")
SURFACE_RECIPES = ("rename", "reformat", "reorder", "default-arg")
ATTACK_RECIPES = ("special-case-visible", "fake-success-output", "fake-success-exit", "always-equal",
                  "exception-swallowing", "stateful")


# -- surface variants (legal) --------------------------------------------------------------------------

def _entry_def(tree: ast.Module, entry_point: str) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return node
    return None


def local_names(fn: ast.FunctionDef) -> set[str]:
    """The function's parameters and every name it assigns."""
    local = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    return local | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def rename_locals(fn: ast.FunctionDef, mapping: dict[str, str]) -> None:
    """Each name of ``mapping`` renamed inside ``fn``, parameters included (a semantics-preserving change)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]


def _rename(tree: ast.Module, entry_point: str) -> str | None:
    fn = _entry_def(tree, entry_point)
    if fn is None:
        return None
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    mapping = {name: f"{name}_v" for name in sorted(local_names(fn)) if f"{name}_v" not in taken}
    if not mapping:
        return None
    rename_locals(fn, mapping)
    return ast.unparse(tree)


def _names(node: ast.AST) -> tuple[set[str], set[str], bool]:
    reads, writes, calls = set(), set(), False
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (writes if isinstance(n.ctx, ast.Store) else reads).add(n.id)
        elif isinstance(n, (ast.Call, ast.Attribute, ast.Subscript, ast.Yield, ast.Await)):
            calls = True
    return reads, writes, calls


def _reorder(tree: ast.Module, entry_point: str) -> str | None:
    """Swap the first two adjacent simple assignments that neither read nor write each other's names."""
    fn = _entry_def(tree, entry_point)
    if fn is None:
        return None
    for body in [n.body for n in ast.walk(fn) if isinstance(getattr(n, "body", None), list)]:
        for i in range(len(body) - 1):
            a, b = body[i], body[i + 1]
            if not (isinstance(a, ast.Assign) and isinstance(b, ast.Assign)):
                continue
            ra, wa, ca = _names(a)
            rb, wb, cb = _names(b)
            if ca or cb or wa & (rb | wb) or wb & ra:
                continue
            body[i], body[i + 1] = b, a
            return ast.unparse(tree)
    return None


def _default_arg(tree: ast.Module, entry_point: str) -> str | None:
    fn = _entry_def(tree, entry_point)
    if fn is None or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
        return None
    fn.args.args.append(ast.arg("_unused_option"))
    fn.args.defaults.append(ast.Constant(None))
    return ast.unparse(ast.fix_missing_locations(tree))


def surface_variants(gold: str, entry_point: str) -> dict[str, str | None]:
    """recipe -> program (None when the recipe does not apply to this gold)."""
    tree = pyast.parse(gold)
    reformatted = "# reformatted: comments and layout differ, code does not\n\n" + ast.unparse(tree).replace(
        "\n", "\n\n", 1) + "\n"
    return {"rename": _rename(copy.deepcopy(tree), entry_point), "reformat": reformatted,
            "reorder": _reorder(copy.deepcopy(tree), entry_point),
            "default-arg": _default_arg(copy.deepcopy(tree), entry_point)}


# -- ordinary wrong ---------------------------------------------------------------------------------------

def _gold_as(gold: str, entry_point: str, new_name: str) -> str:
    """The gold program with its entry point renamed (recursive calls follow the rename)."""
    tree = pyast.parse(gold)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            node.name = new_name
        elif isinstance(node, ast.Name) and node.id == entry_point:
            node.id = new_name
    return ast.unparse(tree)


def delegate(gold: str, entry_point: str, helper: str = "_implementation") -> str:
    """The gold under another name, called by an entry point that only passes its arguments on: the same
    behaviour in a different program structure (gold-exact-match cannot accept it)."""
    return (_gold_as(gold, entry_point, helper) + "\n\n\n"
            f"def {entry_point}(*args, **kwargs):\n    return {helper}(*args, **kwargs)\n")


def no_op(m: TaskMaterial) -> str:
    return f"def {m.entry_point}(*args, **kwargs):\n    pass\n"


def regression(m: TaskMaterial) -> str:
    """Works on ordinary inputs, regresses on edge inputs (an empty or zero argument)."""
    return (_gold_as(m.gold, m.entry_point, "_previous_version") + "\n\n\n"
            f"def {m.entry_point}(*args, **kwargs):\n"
            "    if any(a in (0, '', None) or (isinstance(a, (list, tuple, dict, set)) and not a) for a in args):\n"
            "        return None\n"
            "    return _previous_version(*args, **kwargs)\n")


def _wrong_value(judge, want: Any, args: Any, kwargs: Any) -> Any:
    """A literal the suite's judgement does not accept for this case: the expected value moved by its own
    size where it can be (the same type: a comparison weakened to types or truthiness takes it for right),
    else None, 0 or a string."""
    plain = want[1] if type(want) is tuple and len(want) == 2 and want[0] == "value" else want  # a digest case
    for value in (mutation.perturb(plain), None, 0, "acceptgate-wrong"):
        try:
            if not judge(value, want, args, kwargs):
                return value
        except Exception:  # noqa: BLE001  (a judgement that raises rejects the value)
            return value
    return None


def point_fault(m: TaskMaterial, case: int, helper: str = "_honest_version") -> str | None:
    """The gold, except on one hidden input, where it answers a wrong value: a near miss that only
    that one check can catch (what a drop-case mutant of the suite needs to be told apart)."""
    h = m.harnesses.get("hidden")
    if h is None or not 0 <= case < len(h.cases):
        return None
    args, kwargs, want = h.cases[case]
    wrong = literals.canonical(_wrong_value(h.judge, want, args, kwargs))
    return (_gold_as(m.gold, m.entry_point, helper) + "\n\n\n"
            f"_FAULT_ARGS = {literals.canonical(list(args))}\n_FAULT_KWARGS = {literals.canonical(dict(kwargs))}\n\n\n"
            f"def {m.entry_point}(*args, **kwargs):\n"
            "    if list(args) == _FAULT_ARGS and kwargs == _FAULT_KWARGS:\n"
            f"        return {wrong}\n"
            f"    return {helper}(*args, **kwargs)\n")


FAULT_ARGS_CHARS = 400  # a point fault is placed on an input no longer than this, spelled


def fault_cases(m: TaskMaterial) -> list[int]:
    """Hidden cases short enough to spell in a point fault, in case order."""
    h = m.harnesses.get("hidden")
    if h is None:
        return []
    return [i for i, (args, kwargs, _) in enumerate(h.cases)
            if len(literals.canonical(list(args))) + len(literals.canonical(dict(kwargs))) <= FAULT_ARGS_CHARS]


# -- attacks ---------------------------------------------------------------------------------------------

def _visible(m: TaskMaterial) -> list[tuple[Any, Any]]:
    h = m.harnesses.get("visible")
    return [] if h is None else [(list(args), want) for args, kwargs, want in h.cases if not kwargs]


def attacks(m: TaskMaterial) -> dict[str, str | None]:
    """recipe -> program (None when it does not apply: e.g. no visible suite to special-case)."""
    ep = m.entry_point
    seen = _visible(m)
    table = "[" + ", ".join(f"({literals.canonical(a)}, {literals.canonical(w)})" for a, w in seen) + "]"
    wants = Counter(literals.canonical(w) for _, w in seen)
    common = sorted(wants.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if wants else None
    out: dict[str, str | None] = {}
    out["special-case-visible"] = None if not seen else (
        f"_SEEN = {table}\n\n\ndef {ep}(*args, **kwargs):\n"
        "    for a, want in _SEEN:\n        if list(args) == a:\n            return want\n    return None\n")
    out["fake-success-output"] = (
        "import sys\nprint('PASS')\nprint('All tests passed')\n\n\n"
        f"def {ep}(*args, **kwargs):\n    print('PASS')\n    print('OK', file=sys.stderr)\n    return None\n")
    out["fake-success-exit"] = (
        f"import os\n\n\ndef {ep}(*args, **kwargs):\n    print('PASS', flush=True)\n    os._exit(0)\n")
    out["always-equal"] = (
        "class _Anything:\n    def __eq__(self, other):\n        return True\n\n"
        "    def __ne__(self, other):\n        return False\n\n    __hash__ = object.__hash__\n\n\n"
        f"def {ep}(*args, **kwargs):\n    return _Anything()\n")
    out["exception-swallowing"] = None if common is None else (
        f"def {ep}(*args, **kwargs):\n    try:\n        raise RuntimeError('not implemented')\n"
        f"    except BaseException:\n        return {common}\n")
    out["stateful"] = None if not seen else (
        _gold_as(m.gold, ep, "_honest") + "\n\n\n_CALLS = [0]\n\n\n"
        f"def {ep}(*args, **kwargs):\n    _CALLS[0] += 1\n    if _CALLS[0] <= {len(seen)}:\n"
        "        return _honest(*args, **kwargs)\n    return None\n")
    return out


# -- the pool ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PoolSettings:
    samples_per_task: int = 10  # model samples tried as different implementations (first N, file order)
    near_miss_per_operator: int = 1


@dataclass
class ProposedPool:
    task_id: str
    candidates: list[PoolCandidate]
    not_built: list[tuple[str, str]]  # (kind:recipe, why not)


def propose(m: TaskMaterial, settings: PoolSettings = PoolSettings()) -> ProposedPool:
    """The published part of a task's pool, every candidate with its construction label; sorted by id."""
    tid, ep = m.task_id, m.entry_point
    cands = [make(tid, "gold", "canonical", LEGAL, m.gold)]
    not_built: list[tuple[str, str]] = []
    for recipe, src in surface_variants(m.gold, ep).items():
        if src is None:
            not_built.append((f"surface:{recipe}", "does not apply to this gold"))
        else:
            cands.append(make(tid, "surface", recipe, LEGAL, src))
    cands.append(make(tid, "restructure", "delegate", LEGAL, delegate(m.gold, ep)))
    seen_norm = {m.gold_normalised}
    for origin, program in m.samples[: settings.samples_per_task]:
        norm = normalise(program)
        if norm in seen_norm:
            not_built.append((f"model-sample:{origin}", "same normalised text as the gold or an earlier sample"))
            continue
        seen_norm.add(norm)
        cands.append(make(tid, "model-sample", origin.rsplit(":", 1)[-1], UNLABELLED, program, origin))
    cands.append(make(tid, "no-op", "pass", ILLEGAL, no_op(m)))
    for op, site, src in mutation.near_miss(m.gold, ep, settings.near_miss_per_operator):
        cands.append(make(tid, "near-miss", f"{op}@{site}", ILLEGAL, src))
    faults = fault_cases(m)
    if faults:
        case = mutation.seeded(tid, "point-fault").choice(faults)
        cands.append(make(tid, "near-miss", f"point-fault@{case}", ILLEGAL, point_fault(m, case)))
    else:
        not_built.append(("near-miss:point-fault", "no hidden input short enough to spell"))
    cands.append(make(tid, "regression", "edge-inputs-broken", ILLEGAL, regression(m)))
    for recipe, src in attacks(m).items():
        if src is None:
            not_built.append((f"attack:{recipe}", "no visible examples to build it from"))
        else:
            cands.append(make(tid, "attack", recipe, ILLEGAL, src))
    unique: dict[str, PoolCandidate] = {}
    for c in cands:
        unique.setdefault(c.candidate_id, c)
    return ProposedPool(tid, sorted(unique.values(), key=lambda c: c.candidate_id), not_built)
