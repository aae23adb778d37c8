"""Mutation, both ways: near-miss mutants of a gold program (ordinary wrong candidates for the pools),
and mutants of a suite verifier (the mutation gate).

Everything is deterministic: sites are enumerated in ``ast.walk`` order and a sample of them is drawn
with ``random.Random`` seeded from the sha256 of the program (or spec) and the operator's name, so the
same inputs give the same mutants, ids and hashes on every run and machine.
"""

from __future__ import annotations

import ast
import copy
import math
import random
from typing import Any, Iterator

from acceptgate._util import pyast
from acceptgate._util.hashing import sha256_text
from acceptgate.suites import dialects, literals
from acceptgate.suites.render import Harness
from acceptgate.v4v.verifiers import WEAKENINGS, SuiteMutation

# -- near-miss mutants of a program ------------------------------------------------------------------

_SWAP_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            ids.add(id(body[0].value))
    return ids


def _sites(op: str, root: ast.AST, docs: set[int]) -> list[ast.AST]:
    out = []
    for node in ast.walk(root):
        if op == "comparison" and isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAP_CMP:
            out.append(node)
        elif op == "off-by-one" and isinstance(node, ast.Constant) and type(node.value) is int:
            out.append(node)
        elif op == "boolean" and (isinstance(node, ast.BoolOp)
                                  or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))):
            out.append(node)
        elif op == "constant" and isinstance(node, ast.Constant) and id(node) not in docs \
                and type(node.value) in (bool, str, float, type(None)):
            out.append(node)
        elif op == "return-value" and isinstance(node, ast.Return) and node.value is not None:
            out.append(node)
        elif op == "removed-statement" and isinstance(node, ast.stmt) and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)) and id(getattr(
                    node, "value", None)) not in docs:
            out.append(node)
    return out


def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    found = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for i, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        found[id(child)] = (parent, name, i)
            elif isinstance(value, ast.AST):
                found[id(value)] = (parent, name, None)
    return found


def _replace(tree: ast.AST, node: ast.AST, new: ast.AST) -> None:
    parent, name, index = _parents(tree)[id(node)]
    if index is None:
        setattr(parent, name, new)
    else:
        getattr(parent, name)[index] = new


def _apply(op: str, tree: ast.AST, node: ast.AST) -> None:
    if op == "comparison":
        node.ops[0] = _SWAP_CMP[type(node.ops[0])]()
    elif op == "off-by-one":
        node.value = node.value + 1
    elif op == "boolean":
        if isinstance(node, ast.BoolOp):
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        else:
            _replace(tree, node, node.operand)
    elif op == "constant":
        v = node.value
        node.value = (not v) if type(v) is bool else (v + "_" if type(v) is str else (
            v + 1.0 if type(v) is float else 0))
    elif op == "return-value":
        value = node.value
        boolish = isinstance(value, (ast.Compare, ast.BoolOp)) or (
            isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not))
        node.value = ast.UnaryOp(ast.Not(), value) if boolish else ast.Constant(None)
    elif op == "removed-statement":
        _replace(tree, node, ast.Pass())


NEAR_MISS_OPERATORS = ("comparison", "off-by-one", "boolean", "constant", "return-value", "removed-statement")


def _entry(tree: ast.Module, entry_point: str) -> ast.AST:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            return node
    return tree


def seeded(*parts: str) -> random.Random:
    return random.Random(int(sha256_text("\x00".join(parts))[:16], 16))


def near_miss(source: str, entry_point: str, per_operator: int = 1) -> Iterator[tuple[str, int, str]]:
    """(operator, site index, mutant source) for a seeded sample of sites per operator, in operator order.

    Sites are looked for in the entry point's function (helpers outside it are left alone).
    """
    tree = pyast.parse(source)
    base = ast.unparse(tree)
    for op in NEAR_MISS_OPERATORS:
        sites = _sites(op, _entry(tree, entry_point), _docstrings(tree))
        chosen = sorted(seeded(source, op).sample(range(len(sites)), min(per_operator, len(sites))))
        for k in chosen:
            mutant = copy.deepcopy(tree)
            node = _sites(op, _entry(mutant, entry_point), _docstrings(mutant))[k]
            _apply(op, mutant, node)
            text = ast.unparse(ast.fix_missing_locations(mutant))
            if text != base:
                yield op, k, text


# -- mutants of a suite verifier ---------------------------------------------------------------------

def perturb(value: Any) -> Any:
    """A different literal of the same shape where possible (the expected value a mutant checks).

    Numbers move by at least their own size (0 -> 1, 5 -> 10, 1e8 -> 2e8), so that no comparison
    dialect's tolerance, and no float rounding (1e8 + 1.0 is within a relative tolerance, 1e17 + 1.0
    == 1e17), can take the perturbed value for the original; inf and nan become 0.0.
    """
    t = type(value)
    if t is bool:
        return not value
    if t is int:
        return value + max(1, abs(value))
    if t is float:
        return value + max(1.0, abs(value)) if math.isfinite(value) else 0.0
    if t is str:
        return value + "_"
    if t is bytes:
        return value + b"_"
    if t is list:
        return value[:-1] if value else [0]
    if t is tuple:
        return value[:-1] if value else (0,)
    if t is dict:
        return {} if value else {0: 0}
    if t is set:
        return set() if value else {0}
    return 0  # None


def perturb_expected(value: Any, dialect: str) -> Any:
    """The perturbed expected value of one case, in the shape its dialect holds: a digest suite's
    ``('value', v)`` perturbs v, and its ``('sha256', hex, length)`` names another digest."""
    if dialect == dialects.DIGEST and type(value) is tuple and value:
        if value[0] == "value" and len(value) == 2:
            return ("value", perturb(value[1]))
        if value[0] == "sha256" and len(value) == 3:
            digest = value[1]
            return ("sha256", ("1" if digest[:1] == "0" else "0") + digest[1:], value[2])
    return perturb(value)


def suite_mutations(harness: Harness, max_cases: int | None = None) -> list[SuiteMutation]:
    """Drop one case and perturb one expected value, for every case (deciding a mutant costs no
    execution, so all of them by default) or a seeded sample of ``max_cases`` cases; plus every
    weakened comparison."""
    n = len(harness.cases)
    cases = list(range(n)) if max_cases is None or n <= max_cases else sorted(
        seeded(harness.spec_hash, "cases").sample(range(n), max_cases))
    out = [SuiteMutation("drop-case", case=i) for i in cases]
    out += [SuiteMutation("perturb-expected", case=i,
                          expected_text=literals.canonical(perturb_expected(harness.cases[i][2], harness.dialect)))
            for i in cases]
    out += [SuiteMutation("weaken-comparison", weakening=w) for w in sorted(WEAKENINGS)]
    return out


MUTATION_OPERATORS = ("drop-case", "perturb-expected", "weaken-comparison")
