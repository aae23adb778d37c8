"""Scoring profiles: the time limits and float rule a suite is scored under, by name.

- ``default``: the seed's limits -- 10 s wall clock and 128 MiB per execution (a whole suite), no
  per-case limit unless ``--case-seconds`` asks for one; each suite's own dialect.
- ``evalplus``: what EvalPlus 0.3.1's ``evaluate`` does (``evalplus/eval/__init__.py``,
  ``untrusted_check``): each input gets ``max(1 s, 4 x the reference's time on this machine)`` --
  the reference's times come from the import's timing sidecar (``DIR/<task>/<suite>.timing.json``),
  never from the spec; the whole sample gets ``min(60, sum of the limits) + 1`` s for base and plus
  inputs each (so here, one suite: ``min(120, sum) + 2``); and EvalPlus's float rule: an exact suite
  whose expected values include a float or a list/tuple of floats is compared with
  ``python-call+atol=1e-06/1`` (numpy's allclose with atol 1e-6, rtol 1e-7); and EvalPlus's memory
  limit, 4 GiB or the machine's memory if less (``evalplus.eval.query_maximum_memory_bytes``): a
  reference whose own output takes more than the sandbox's default 128 MiB (MBPP+ /255 builds a 1 GB
  list) passes its suite, as it does there. A reference time measured at import includes, for an
  output held as a digest, the time to digest it: a candidate's result is digested in the sandbox.

Every scored row names its profile, so verdicts of both profiles can be stored side by side.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from acceptgate.suites import dialects, suitespec
from acceptgate.sandbox.backend import Limits

DEFAULT = "default"
EVALPLUS = "evalplus"
PROFILES = (DEFAULT, EVALPLUS)

EVALPLUS_MIN_SECONDS = 1.0  # evalplus.config.DEFAULT_MIN_TIME_LIMIT
EVALPLUS_FACTOR = 4.0  # evalplus.config.DEFAULT_GT_TIME_LIMIT_FACTOR
EVALPLUS_TASK_SECONDS = 60.0  # EVALPLUS_TIMEOUT_PER_TASK, per base or plus run
EVALPLUS_FLOAT_ATOL = 1e-6
EVALPLUS_MEMORY_BYTES = 4 * 1024 ** 3  # EVALPLUS_MAX_MEMORY_BYTES' default, capped at the machine's memory


def evalplus_memory_bytes() -> int:
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = EVALPLUS_MEMORY_BYTES
    return min(EVALPLUS_MEMORY_BYTES, physical)


class MissingTiming(ValueError):
    """The evalplus profile needs the reference's times, and the suite directory has none."""


@dataclass(frozen=True)
class Scoring:
    spec: suitespec.SuiteSpec
    limits: Limits


def check(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; valid profiles: {', '.join(PROFILES)}")
    return name


def case_limits(reference_seconds: list[float]) -> tuple[float, ...]:
    return tuple(max(EVALPLUS_MIN_SECONDS, EVALPLUS_FACTOR * t) for t in reference_seconds)


def scoring(profile: str, spec: suitespec.SuiteSpec, base: Limits,
            reference_seconds: list[float] | None = None) -> Scoring:
    """The spec and limits one suite is scored with under ``profile``."""
    if check(profile) == DEFAULT:
        return Scoring(spec, base)
    if reference_seconds is None or len(reference_seconds) != len(spec.cases):
        raise MissingTiming("the evalplus profile needs the reference's time per case (the suite directory's "
                            "timing sidecars, written by 'acceptgate import'); re-import the suites")
    limits = case_limits(reference_seconds)
    wall = min(2 * EVALPLUS_TASK_SECONDS, sum(limits)) + 2
    # Module-level code has a limit of its own, EvalPlus's for a whole run (its per-input limits start
    # at the first call; the run, load included, ends after min(60 s, their sum) + 1 s).
    load = min(EVALPLUS_TASK_SECONDS, sum(limits)) + 1
    return Scoring(float_rule(spec), replace(base, wall_seconds=wall, cpu_seconds=int(wall) + 1,
                                             case_seconds=limits, load_seconds=load,
                                             memory_bytes=evalplus_memory_bytes()))


def float_rule(spec: suitespec.SuiteSpec) -> suitespec.SuiteSpec:
    """EvalPlus compares float outputs with atol 1e-6: an exact suite with float outputs gets that dialect."""
    if spec.dialect != "python-call/1" or not any(_is_floats(c.expected) for c in spec.cases):
        return spec
    # the same cases (values and spellings) under another dialect: nothing to spell again
    return suitespec.from_cases(dialects.atol_name(EVALPLUS_FLOAT_ATOL), spec.entry_point, list(spec.cases))


def _is_floats(value) -> bool:
    if type(value) is float:
        return True
    return type(value) in (list, tuple) and bool(value) and all(type(v) is float for v in value)
