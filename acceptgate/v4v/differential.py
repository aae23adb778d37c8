"""Differential testing against the reference: the evidence that settles a disagreement between a
construction label and the source verifier (GT) without taking either side's word for it.

Inputs: the GT inputs on which the candidate failed (when there are any), then ``n`` random inputs
made by mutating the GT inputs (numbers moved, strings and lists edited, shuffled, shortened or
emptied), drawn from ``random.Random`` seeded by the task and candidate (the same witnesses on every
run). The reference runs on them in the sandbox; an input it rejects -- by raising, which includes the
data set's input contract (``TaskMaterial.domain_gold``, run first) -- is outside the task's domain and
skipped. A digest suite's expected values are compared in its ``("value", v)`` form.
The candidate then runs on the same inputs; the first input where the suite's own judgement does not
accept its answer for the reference's is the witness. A candidate that times out or crashes gives no
evidence from there on (its earlier answers still count).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from acceptgate.suites import dialects, literals
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import run_calls
from acceptgate.v4v import mutation
from acceptgate.v4v.candidates import PoolCandidate, TaskMaterial

RANDOM_INPUTS = 100  # per differential test (Settings.differential_inputs)
MAX_INPUT_CHARS = 5_000  # a hidden input longer than this (spelled) is not used as a base: cost
SHOWN = 300  # characters of an input or answer kept in a witness


@dataclass(frozen=True)
class Evidence:
    inputs_tried: int  # inputs the reference answered (the domain), on which the candidate was compared
    witness: dict | None  # the first input where the candidate differs: input, reference, candidate

    @property
    def differs(self) -> bool:
        return self.witness is not None


def _mutate(value: Any, rng: random.Random, depth: int = 0) -> Any:
    t = type(value)
    if t is bool:
        return rng.random() < 0.5
    if t is int:
        return rng.choice([value + rng.randint(-3, 3), -value, 0, rng.randint(-10, 100), value * 2])
    if t is float:
        if not math.isfinite(value):
            return value
        return rng.choice([value + rng.uniform(-2.0, 2.0), value * rng.uniform(0.5, 2.0), 0.0, -value])
    if t in (str, bytes):
        return _edit_sequence(value, rng)
    if t in (list, tuple):
        return t(_edit_list(list(value), rng, depth))
    if t is dict:
        items = list(value.items())
        if items and rng.random() < 0.3:
            items.pop(rng.randrange(len(items)))
        elif items:
            i = rng.randrange(len(items))
            items[i] = (items[i][0], _mutate(items[i][1], rng, depth + 1))
        return dict(items)
    if t is set:
        return set(_edit_list(sorted(value, key=repr), rng, depth))
    return value


def _edit_sequence(value, rng: random.Random):
    empty = value[:0]
    if not value or rng.random() < 0.1:
        return empty if value else (b"a" if isinstance(value, bytes) else "a")
    i = rng.randrange(len(value))
    how = rng.randrange(4)
    if how == 0:
        return value[:i] + value[i + 1:]
    if how == 1:
        j = rng.randrange(len(value))
        return value[:i] + value[j:j + 1] * 2 + value[i:]
    if how == 2:
        return value[::-1]
    chars = list(value)
    rng.shuffle(chars)
    return empty.join(chars) if isinstance(value, str) else bytes(chars)


def _edit_list(items: list, rng: random.Random, depth: int) -> list:
    if not items or rng.random() < 0.1:
        return [] if items else items
    how = rng.randrange(5)
    if how == 0:
        rng.shuffle(items)
    elif how == 1:
        items.pop(rng.randrange(len(items)))
    elif how == 2:
        items.insert(rng.randrange(len(items) + 1), items[rng.randrange(len(items))])
    elif how == 3 and depth < 3:
        i = rng.randrange(len(items))
        items[i] = _mutate(items[i], rng, depth + 1)
    else:
        items = items[: rng.randrange(len(items) + 1)]
    return items


def random_inputs(m: TaskMaterial, n: int, *parts: str) -> list[tuple[tuple, dict]]:
    """``n`` inputs made from the task's hidden inputs, seeded by the task and ``parts``."""
    h = m.harnesses.get("hidden")
    if h is None:
        return []
    bases = [(args, kwargs) for args, kwargs, _ in h.cases
             if len(literals.canonical(list(args))) + len(literals.canonical(dict(kwargs))) <= MAX_INPUT_CHARS]
    if not bases:
        return []
    rng = mutation.seeded(m.task_id, "differential", *parts)
    out = []
    for _ in range(n):
        args, kwargs = rng.choice(bases)
        new = [_mutate(a, rng) if rng.random() < 0.7 else a for a in args]
        if args and new == list(args):
            i = rng.randrange(len(args))
            new[i] = _mutate(args[i], rng)
        out.append((tuple(new), {k: _mutate(v, rng) if rng.random() < 0.5 else v for k, v in kwargs.items()}))
    return out


def _show(value: Any) -> str:
    if type(value) is tuple and len(value) == 2 and value[0] == "value":  # a digest suite's expected form
        value = value[1]
    text = literals.canonical(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + f"...<{len(text)} chars>"


def _answers(m: TaskMaterial, source: str, calls: list[tuple[tuple, dict]], backend: Backend, limits: Limits):
    outcomes, _ = run_calls(m.entry_point, calls, source, backend, limits=limits)
    return outcomes


def compare(m: TaskMaterial, candidate: PoolCandidate, gt_inputs: list[tuple[tuple, dict]], backend: Backend, *,
            n: int = RANDOM_INPUTS, limits: Limits = Limits()) -> Evidence:
    """The candidate against the reference on ``gt_inputs`` and ``n`` random inputs (see the module)."""
    calls = list(gt_inputs) + random_inputs(m, n, candidate.candidate_id)
    if m.domain_gold and calls:  # the contract first: the reference never runs on an input outside the task
        domain = _answers(m, m.domain_gold, calls, backend, limits)
        calls = [c for c, d in zip(calls, domain) if d.status == "ok"]
    if not calls:
        return Evidence(0, None)
    h = m.harnesses["hidden"]
    reference = _answers(m, m.gold, calls, backend, limits)
    inside = [i for i, r in enumerate(reference) if r.status == "ok"]
    if not inside:
        return Evidence(0, None)
    got = _answers(m, candidate.source, [calls[i] for i in inside], backend, limits)
    tried = 0
    for i, outcome in zip(inside, got):
        if outcome.status in ("timeout", "crash", "memory"):
            break  # no answer from here on: no evidence either way
        tried += 1
        args, kwargs = calls[i]
        want = ("value", reference[i].value) if h.dialect == dialects.DIGEST else reference[i].value
        same = outcome.status == "ok" and _judged(h, outcome.value, want, args, kwargs)
        if not same:
            shown = _show(outcome.value) if outcome.status == "ok" else f"{outcome.status}: {outcome.error_type}"
            origin = "GT input" if i < len(gt_inputs) else "random input"
            return Evidence(tried, {"input": _show(list(args)) + ("" if not kwargs else " " + _show(kwargs)),
                                    "origin": origin, "reference": _show(want), "candidate": shown})
    return Evidence(tried, None)


def _judged(harness, got: Any, want: Any, args: tuple, kwargs: dict) -> bool:
    try:
        return bool(harness.judge(got, want, args, kwargs))
    except Exception:  # noqa: BLE001  (a judgement that raises does not accept)
        return False
