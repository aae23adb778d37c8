"""What a verifier of one task is shown: the task's material and the pool's candidates, labelled by
construction (``pools`` builds them), and the programs' canonical text. A leaf of ``v4v``: the
verifiers and the pools both use these, and it imports neither.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field

from acceptgate.hashing import sha256_text
from acceptgate.render import Harness, harness_for
from acceptgate.suitespec import SuiteSpec

LEGAL, ILLEGAL = "legal", "illegal"
KIND_CLASS = {"gold": "gold", "surface": "legal-variant", "different-impl": "legal-variant",
              "no-op": "ordinary-wrong", "near-miss": "ordinary-wrong", "regression": "ordinary-wrong",
              "model-wrong": "ordinary-wrong", "attack": "attack"}


@functools.lru_cache(maxsize=1 << 16)
def normalise(source: str) -> str:
    """The program's canonical text: parsed and unparsed, docstrings and comments gone.

    Text that does not parse is only stripped of surrounding whitespace.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source.strip()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


@dataclass(frozen=True)
class PoolCandidate:
    task_id: str
    kind: str
    recipe: str
    label: str  # legal | illegal
    source: str
    sha256: str = ""
    origin: str = ""  # where it came from: "construction", or the samples file and index

    @property
    def candidate_id(self) -> str:
        return f"{self.task_id}:{self.kind}:{self.recipe}"

    @property
    def cls(self) -> str:
        return KIND_CLASS[self.kind]


def make(task_id: str, kind: str, recipe: str, label: str, source: str, origin: str = "construction") -> PoolCandidate:
    return PoolCandidate(task_id, kind, recipe, label, source, sha256_text(source), origin)


@dataclass
class TaskMaterial:
    """What a pool is built from and what the verifiers of one task see."""

    task_id: str
    entry_point: str
    prompt: str
    gold: str
    suites: dict[str, SuiteSpec]
    harnesses: dict[str, Harness]
    samples: list[tuple[str, str]] = field(default_factory=list)  # (origin, full program)

    def __getstate__(self) -> dict:
        # A harness holds functions compiled from its suite, in no importable module: a copy for another
        # process (a Dask worker, acceptgate.shards) carries the suites and compiles its own harnesses.
        state = {k: v for k, v in self.__dict__.items() if k != "_gold_norm"}
        state["harnesses"] = sorted(self.harnesses)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.harnesses = {k: harness_for(self.suites[k]) for k in state["harnesses"]}

    @property
    def gold_sha256(self) -> str:
        return sha256_text(self.gold)

    @property
    def gold_normalised(self) -> str:
        cached = self.__dict__.get("_gold_norm")
        if cached is None:
            cached = self.__dict__["_gold_norm"] = normalise(self.gold)
        return cached
