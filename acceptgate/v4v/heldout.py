"""The held-out part of a pool: candidates made fresh for each certification run from a secret seed.

The published part of a pool is deterministic, so a verifier can have seen it: one that looks up the
sha256 of the published programs scores perfectly there without deciding anything. The held-out part
is built from the same recipes with names, sites and inputs drawn from ``random.Random`` seeded with
the run's secret seed (``new_seed``) and the task id. The seed is stored with the run only once it
has finished, so nobody can build these programs before the run; with it, anyone can rebuild them
(``candidates``) and check the run.

Legal (semantics-preserving transformations of the gold): locals renamed to random names, an unused
assignment of a random constant, the gold behind a delegating entry point of a random name. Illegal
(by construction): a near-miss mutant at a random operator and site, a point fault on a random hidden
input, and a constant answer (a random expected value of the hidden suite). A construction that turns
out not to hold (an equivalent mutant) is a finding of the task's certification, not a relabel.
"""

from __future__ import annotations

import ast
import copy
import random
import secrets

from acceptgate._util import pyast
from acceptgate.suites import literals
from acceptgate._util.hashing import sha256_text
from acceptgate.v4v import mutation, pools
from acceptgate.v4v.candidates import HELD_OUT, ILLEGAL, LEGAL, PoolCandidate, TaskMaterial, make

SEED_BYTES = 16
LEGAL_RECIPES = ("rename", "unused-assignment", "delegate")
ILLEGAL_RECIPES = ("near-miss", "point-fault", "constant")


def new_seed() -> str:
    return secrets.token_hex(SEED_BYTES)


def seed_sha256(seed: str) -> str:
    """What a run commits to before it starts; the seed itself is published when it ends."""
    return sha256_text(seed)


def _rng(seed: str, task_id: str) -> random.Random:
    return random.Random(int(sha256_text(f"{seed}\x00{task_id}"), 16))


def _name(rng: random.Random, stem: str) -> str:
    return f"_{stem}_{rng.getrandbits(32):08x}"


def _renamed(gold: str, entry_point: str, rng: random.Random) -> str | None:
    tree = pyast.parse(gold)
    fn = pools._entry_def(tree, entry_point)
    if fn is None:
        return None
    local = pools.local_names(fn)
    if not local:
        return None
    pools.rename_locals(fn, {name: f"{name}{_name(rng, 'v')}" for name in sorted(local)})
    return ast.unparse(tree)


def _unused_assignment(gold: str, entry_point: str, rng: random.Random) -> str | None:
    tree = pyast.parse(gold)
    fn = pools._entry_def(tree, entry_point)
    if fn is None:
        return None
    body = fn.body
    at = 1 if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
        and isinstance(body[0].value.value, str) else 0
    stmt = pyast.parse(f"{_name(rng, 'unused')} = {rng.randrange(10 ** 6)}").body[0]
    body.insert(at, stmt)
    return ast.unparse(ast.fix_missing_locations(tree))


def _near_miss(gold: str, entry_point: str, rng: random.Random) -> tuple[str, str] | None:
    """(recipe, program): a random operator at a random site of the entry point, then renamed apart."""
    tree = pyast.parse(gold)
    base = ast.unparse(tree)
    docs = mutation._docstrings(tree)
    options = [(op, k) for op in mutation.NEAR_MISS_OPERATORS
               for k in range(len(mutation._sites(op, mutation._entry(tree, entry_point), docs)))]
    rng.shuffle(options)
    for op, k in options:
        mutant = copy.deepcopy(tree)
        node = mutation._sites(op, mutation._entry(mutant, entry_point), mutation._docstrings(mutant))[k]
        mutation._apply(op, mutant, node)
        text = ast.unparse(ast.fix_missing_locations(mutant))
        if text != base:
            renamed = _renamed(text, entry_point, rng) or text
            return f"{op}@{k}", renamed
    return None


def _constant(m: TaskMaterial, rng: random.Random) -> tuple[str, str] | None:
    h = m.harnesses.get("hidden")
    if h is None or not h.cases:
        return None
    case = rng.randrange(len(h.cases))
    value = h.cases[case][2]
    text = literals.canonical(value)
    if len(text) > pools.FAULT_ARGS_CHARS:
        return None
    return f"constant@{case}", f"def {m.entry_point}(*args, **kwargs):\n    {_name(rng, 'k')} = 0\n    return {text}\n"


def candidates(m: TaskMaterial, seed: str) -> list[PoolCandidate]:
    """The held-out candidates of one task for one seed (the same seed always gives the same ones)."""
    rng = _rng(seed, m.task_id)
    tid, ep = m.task_id, m.entry_point
    out: list[PoolCandidate] = []

    def add(kind: str, recipe: str, label: str, source: str | None) -> None:
        if source is not None:
            out.append(make(tid, kind, f"held-out-{len(out)}-{recipe}", label, source, part=HELD_OUT))

    add("surface", "rename", LEGAL, _renamed(m.gold, ep, rng))
    add("surface", "unused-assignment", LEGAL, _unused_assignment(m.gold, ep, rng))
    add("restructure", "delegate", LEGAL, pools.delegate(m.gold, ep, _name(rng, "impl")))
    found = _near_miss(m.gold, ep, rng)
    if found is not None:
        add("near-miss", found[0], ILLEGAL, found[1])
    faults = pools.fault_cases(m)
    if faults:
        case = rng.choice(faults)
        add("near-miss", f"point-fault@{case}", ILLEGAL, pools.point_fault(m, case, _name(rng, "honest")))
    constant = _constant(m, rng)
    if constant is not None:
        add("near-miss", constant[0], ILLEGAL, constant[1])
    return out
