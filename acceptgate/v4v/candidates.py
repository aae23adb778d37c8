"""What a verifier of one task is shown: the task's material and the pool's candidates, labelled by
construction (``pools`` builds them), and the programs' canonical text. A leaf of ``v4v``: the
verifiers and the pools both use these, and it imports neither.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import Any

from acceptgate._util import pyast
from acceptgate._util.hashing import sha256_text
from acceptgate.suites.render import Harness, harness_for
from acceptgate.suites.suitespec import SuiteSpec

LEGAL, ILLEGAL = "legal", "illegal"
# A model sample has no construction label: every verifier decides it (measured), none is certified by it.
UNLABELLED = "unlabelled"
LABELS = (LEGAL, ILLEGAL, UNLABELLED)
KIND_CLASS = {"gold": "gold", "surface": "legal-variant", "restructure": "legal-variant",
              "no-op": "ordinary-wrong", "near-miss": "ordinary-wrong", "regression": "ordinary-wrong",
              "attack": "attack", "model-sample": "model-sample"}
PUBLISHED, HELD_OUT = "published", "held-out"  # held-out: made fresh per run from a secret seed
# Bumped whenever the published part of a pool would change for the same task: a certification record
# holds for the pool its version built.
POOL_VERSION = "acceptgate-pool/2"


@functools.lru_cache(maxsize=1 << 16)
def normalise(source: str) -> str:
    """The program's canonical text: parsed and unparsed, docstrings and comments gone.

    Text that does not parse is only stripped of surrounding whitespace.
    """
    try:
        tree = pyast.parse(source)
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
    label: str  # legal | illegal (by construction) | unlabelled (a model sample)
    source: str
    sha256: str = ""
    origin: str = ""  # where it came from: "construction", or the samples file and index
    part: str = PUBLISHED  # published (deterministic) | held-out (fresh per run, secret seed)

    @property
    def candidate_id(self) -> str:
        return f"{self.task_id}:{self.kind}:{self.recipe}"

    @property
    def cls(self) -> str:
        return KIND_CLASS[self.kind]

    @property
    def labelled(self) -> bool:
        return self.label != UNLABELLED


def make(task_id: str, kind: str, recipe: str, label: str, source: str, origin: str = "construction",
         part: str = PUBLISHED) -> PoolCandidate:
    return PoolCandidate(task_id, kind, recipe, label, source, sha256_text(source), origin, part)


def pool_key(task_id: str, entry_point: str, prompt: str, reference: str, spec_hashes: dict[str, str]) -> str:
    """What the published part of a task's pool is a function of: the pool code's version, the task's
    statement, reference and suites. A certification record holds for exactly this key, so a gate can
    check it without building the pool."""
    suites = " ".join(f"{k}={h}" for k, h in sorted(spec_hashes.items()))
    return sha256_text("\x00".join([POOL_VERSION, task_id, entry_point, sha256_text(prompt), sha256_text(reference),
                                    suites]))


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
    # the reference's time over every case of its suites where the import measured it (0: not known);
    # only to guess how long the task's certification takes (shards.task_cost)
    reference_seconds: float = 0.0
    # the gold with the data set's input contract (asserts on the arguments), where it has one: the
    # differential test skips inputs it rejects (outside the task's domain); "" = the gold itself
    domain_gold: str = ""

    @classmethod
    def from_suites(cls, task_id: str, entry_point: str, prompt: str, gold: str, suites: dict[str, SuiteSpec],
                    samples: list[tuple[str, str]], reference_seconds: float = 0.0,
                    domain_gold: str = "") -> "TaskMaterial":
        """A material whose harnesses are compiled where first read (``__getattr__``): a client that only
        ships materials to Dask workers never compiles them."""
        material = cls(task_id, entry_point, prompt, gold, suites, {}, samples, reference_seconds, domain_gold)
        del material.__dict__["harnesses"]
        material.__dict__["_harness_keys"] = list(suites)
        return material

    def __getstate__(self) -> dict:
        # A harness holds functions compiled from its suite, in no importable module: a copy for another
        # process (a Dask worker, acceptgate.pipelines.shards) carries the suites and compiles its own harnesses.
        state = {k: v for k, v in self.__dict__.items() if k not in ("_gold_norm", "_harness_keys")}
        keys = self.__dict__.get("_harness_keys")
        state["harnesses"] = sorted(keys if keys is not None else self.harnesses)
        return state

    def __setstate__(self, state: dict) -> None:
        # Compiled where first read: the copies that Dask's tokenizer and its scheduler unpickle in the
        # client never run one (compiling them there cost the client 9 s of a 40-task certify's CPU).
        self.__dict__.update({k: v for k, v in state.items() if k != "harnesses"})
        self.__dict__["_harness_keys"] = list(state["harnesses"])

    def __getattr__(self, name: str) -> Any:  # only for attributes not set: ``harnesses`` not compiled yet
        keys = self.__dict__.get("_harness_keys")
        if name != "harnesses" or keys is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        harnesses = self.__dict__["harnesses"] = {k: harness_for(self.suites[k]) for k in keys}
        self.__dict__.pop("_harness_keys", None)
        return harnesses

    @property
    def gold_sha256(self) -> str:
        return sha256_text(self.gold)

    @property
    def pool_key(self) -> str:
        return pool_key(self.task_id, self.entry_point, self.prompt, self.gold,
                        {k: s.spec_hash for k, s in self.suites.items()})

    @property
    def gold_normalised(self) -> str:
        cached = self.__dict__.get("_gold_norm")
        if cached is None:
            cached = self.__dict__["_gold_norm"] = normalise(self.gold)
        return cached
