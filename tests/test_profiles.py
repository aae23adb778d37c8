"""Scoring profiles: EvalPlus's per-input limits and float rule, and the profile in every row."""

from __future__ import annotations

import json

import pytest

from acceptgate.suites import dialects, suitespec

from acceptgate.scoring import profiles
from acceptgate.sandbox.backend import Limits
from acceptgate.scoring.score import score_samples
from acceptgate.datasets.samples import read_samples


def test_limits_follow_evalplus():
    assert profiles.case_limits([0.01, 0.5, 2.0]) == (1.0, 2.0, 8.0)  # max(1 s, 4 x reference)
    spec = suitespec.build("python-call/1", "f", [((1,), {}, 1), ((2,), {}, 2)])
    how = profiles.scoring("evalplus", spec, Limits(), [0.01, 0.5])
    assert how.limits.case_seconds == (1.0, 2.0) and how.limits.wall_seconds == 5.0
    assert how.limits.memory_bytes == profiles.evalplus_memory_bytes() > Limits().memory_bytes  # EvalPlus's 4 GiB
    # module-level code too has a limit: EvalPlus's bound on a whole run, min(60 s, the limits' sum) + 1 s
    assert how.limits.load_seconds == 4.0
    assert profiles.scoring("default", spec, Limits()).limits == Limits()
    with pytest.raises(profiles.MissingTiming):
        profiles.scoring("evalplus", spec, Limits(), None)
    with pytest.raises(ValueError, match="valid profiles"):
        profiles.check("fast")


def test_evalplus_float_rule():
    floats = suitespec.build("python-call/1", "f", [((1,), {}, 0.1), ((2,), {}, [0.5, 1.5])])
    assert profiles.float_rule(floats).dialect == dialects.atol_name(1e-6)
    ints = suitespec.build("python-call/1", "f", [((1,), {}, 1)])
    assert profiles.float_rule(ints) is ints


def test_per_input_limits_in_the_sandbox(tmp_path, local_backend):
    """Case 1's reference took 0.01 s, so the limit is 1 s: a candidate needing 1.3 s of CPU there times
    out under the evalplus profile and passes under the default one (10 s for the whole suite)."""
    spec = suitespec.build("python-call/1", "slow", [((0,), {}, 0), ((1,), {}, 1)])
    program = ("import time\ndef slow(x):\n    if x == 1:\n        t = time.process_time()\n"
               "        while time.process_time() - t < 1.3: pass\n    return x\n")
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "T/0", "solution": program}) + "\n")
    rows = {}
    for profile in profiles.PROFILES:
        report = score_samples(read_samples(str(samples)), {"T/0": spec}, {}, local_backend, suite="hidden",
                               profile=profile, reference_seconds={"T/0": [0.01, 0.01]})
        [rows[profile]] = report.rows
    assert rows["default"].verdict == "pass" and rows["default"].profile == "default"
    assert rows["evalplus"].verdict == "timeout" and rows["evalplus"].profile == "evalplus"
    assert "1 s per case" in rows["evalplus"].detail


def test_evalplus_memory_lets_a_reference_build_what_it_returns(tmp_path, local_backend):
    """A 300 MB result (MBPP+ /255's reference builds a 1 GB list): out of the default 128 MiB, within
    EvalPlus's 4 GiB; the digest case judges it without shipping it."""
    big = ["a" * 20] * 40_000_000
    spec = suitespec.build(dialects.DIGEST, "big", [((0,), {}, ("sha256", *dialects.equality_digest(big)))])
    del big
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "T/0", "solution": "def big(x):\n    return ['a' * 20] * 40_000_000\n"}) + "\n")
    verdicts = {}
    for profile in profiles.PROFILES:
        report = score_samples(read_samples(str(samples)), {"T/0": spec}, {}, local_backend, suite="hidden",
                               profile=profile, reference_seconds={"T/0": [5.0]})
        verdicts[profile] = report.rows[0].verdict
    assert verdicts == {"default": "memory", "evalplus": "pass"}
