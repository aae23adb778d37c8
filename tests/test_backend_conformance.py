"""One conformance suite, run against every sandbox backend (see SANDBOX_BACKENDS in conftest.py).

Every backend must give the same verdicts for the same programs and start every execution from the
same blank state. Differences in *isolation* are covered by test_attacks.py and its known differences;
there are none in behaviour here.
"""

from __future__ import annotations

import pytest

from acceptgate.suites import render, suitespec
from acceptgate.sandbox.backend import PRELOAD, Limits
from acceptgate.sandbox.executor import VERDICTS, execute, execute_many, run_calls

SHORT = Limits(wall_seconds=2)

ADD = render.harness_for(suitespec.build(
    "python-call/1", "add", [((1, 2), {}, 3), ((2, 2), {}, 4), ((-1, 1), {}, 0), ((1,), {"b": 5}, 6)]))


@pytest.mark.parametrize("source,verdict", [
    ("def add(a, b): return a + b", "pass"),
    ("def add(a, b): return a - b", "fail"),
    ("def add(a, b): raise ValueError('no')", "error"),
    ("def add(a, b) return", "error"),
    ("def add(a, b):\n    while True: pass", "timeout"),
    ("def add(a, b):\n    x = bytearray(1 << 30)\n    return a + b", "memory"),
    ("import os, signal\ndef add(a, b): os.kill(os.getpid(), signal.SIGABRT)", "crash"),
    ("import os\ndef add(a, b): os._exit(0)", "protocol"),
    ("def add(a, b): return [a + b, object()]", "protocol"),
], ids=["pass", "fail", "error", "syntax", "timeout", "memory", "crash", "protocol-exit", "protocol-object"])
def test_verdicts(sandbox_backend, source, verdict):
    result = execute(ADD, source, sandbox_backend, limits=SHORT if verdict == "timeout" else Limits())
    assert result.verdict == verdict, result.as_dict()
    assert result.verdict in VERDICTS


ONE = render.harness_for(suitespec.build("python-call/1", "add", [((1, 2), {}, 3)]))

# Three children of 60 MiB each: together over the 128 MiB cap, each alone under it. The runner answers
# right once the kernel has killed one of them (os.wait returns on that death).
OOM_CHILD = """
import os, time
def add(a, b):
    for _ in range(3):
        if os.fork() == 0:
            block = bytearray(60 << 20)
            time.sleep(30)
            os._exit(0)
    os.wait()
    return a + b
"""


def test_an_answer_after_the_memory_limit_killed_a_child_is_memory(sandbox_backend):
    """Which process the kernel kills when the limit is hit (a child, or the runner) is a matter of timing,
    so of load: hitting the limit decides, whoever answered."""
    if sandbox_backend.name == "local-rlimits":
        pytest.skip("local-rlimits caps each process's address space, not the process tree's memory")
    result = execute(ONE, OOM_CHILD, sandbox_backend)
    assert result.verdict == "memory", result.as_dict()
    assert "memory limit was hit" in result.detail and "128 MiB" in result.detail, result.detail
    after = execute(ONE, "def add(a, b): return a + b", sandbox_backend)
    assert after.verdict == "pass", after.as_dict()  # the next execution's count starts from its own start


def test_per_case_results_and_fail_fast(sandbox_backend):
    result = execute(ADD, "def add(a, b): return a * b", sandbox_backend)
    assert [c.status for c in result.cases] == ["fail", "pass", "fail", "fail"]
    assert (result.cases[0].args, result.cases[0].got, result.cases[0].want) == ("(1, 2)", "2", "3")
    assert result.cases[3].args == "(1,), **{'b': 5}"
    quick = execute(ADD, "def add(a, b): return 0", sandbox_backend, fail_fast=True)
    assert quick.verdict == "fail" and len(quick.cases) == 1


def test_isolation_names_the_backend_and_what_it_enforced(sandbox_backend):
    result = execute(ADD, "def add(a, b): return a + b", sandbox_backend)
    iso = result.isolation
    assert iso["backend"] == sandbox_backend.name
    assert iso["enforced"] and all(isinstance(x, str) and x for x in iso["enforced"])
    assert isinstance(iso["not_enforced"], list)
    joined = " ".join(iso["enforced"]).lower()
    assert "128 mib" in joined
    # the time limit, on CPU time and on wall time less the wait for a CPU, with its wall-clock backstop where
    # the backend counts them (all do here)
    assert "of cpu time" in joined and "waiting for a cpu" in joined and "wall-clock backstop" in joined, joined


BLANK = r'''
import os
def f(x):
    here = sorted(os.listdir("."))
    open("mine", "w").write("x")
    return [here, sorted(os.environ), os.getuid() != 0]
'''


def test_every_execution_starts_blank(sandbox_backend):
    """Empty writable cwd, empty environment (bar the interpreter's locale coercion), not root."""
    for _ in range(2):
        outcomes, detail = run_calls("f", [((1,), {})], BLANK, sandbox_backend)
        assert detail == "" and outcomes[0].status == "ok", (outcomes, detail)
        here, env, not_root = outcomes[0].value
        assert here == [] and not_root
        assert set(env) <= {"LC_CTYPE", "PWD"}, env


def test_parallel_executions_keep_their_order(sandbox_backend):
    sources = ["def add(a, b): return a + b", "def add(a, b): return 0"] * 3
    results = execute_many([(ADD, s) for s in sources], sandbox_backend, workers=2)
    assert [r.verdict for r in results] == ["pass", "fail"] * 3


PRELOADED = """
import sys
def f(names):
    return sorted(name for name in names if name in sys.modules)
"""


def test_runners_from_a_fork_server_find_the_preloaded_modules(sandbox_backend):
    """Where runners are forked from a fork server (local's zygote, docker's keeper), backend.PRELOAD is
    imported there before any execution: a candidate's `import typing` costs no runner anything, on
    every such backend alike."""
    if sandbox_backend.name == "local-rlimits" or (sandbox_backend.name.startswith("local")
                                                   and getattr(sandbox_backend, "pool", None) is None):
        pytest.skip("a fresh interpreter per execution: nothing is preloaded")
    outcomes, detail = run_calls("f", [((list(PRELOAD),), {})], PRELOADED, sandbox_backend)
    assert detail == "" and outcomes[0].status == "ok", (outcomes, detail)
    assert outcomes[0].value == sorted(PRELOAD)


SET_ORDER = ("def first(x):\n"
             "    return [next(iter({'(', ')', '[', ']', '{', '}'})), hash('acceptgate')]\n")


def test_a_program_that_depends_on_the_hash_seed_gets_one_verdict(sandbox_backend):
    """Iterating a set of strings depends on the interpreter's hash seed: every sandboxed interpreter runs
    with backend.HASH_SEED (recorded in each result), so the same program gets the same answer, hence
    verdict, in every execution, on every backend and in any process: what a fresh interpreter with that
    seed computes here. (A fork server's runners share their seed: a fresh backend per run starts new
    ones.)"""
    import os
    import subprocess
    import sys

    from acceptgate.sandbox import backend as backends
    from acceptgate.sandbox.backend import HASH_SEED

    code = SET_ORDER + "print(repr(first(0)))\n"
    want = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": str(HASH_SEED)}).stdout.strip()
    harness = render.harness_for(suitespec.build("python-call/1", "first", [((0,), {}, eval(want))]))
    results = [execute(harness, SET_ORDER, sandbox_backend) for _ in range(3)]
    with backends.create(sandbox_backend.name) as fresh:  # new slots, containers or interpreters
        results += [execute(harness, SET_ORDER, fresh) for _ in range(3)]
    assert [r.verdict for r in results] == ["pass"] * 6, [r.first_failure for r in results]
    assert {r.hash_seed for r in results} == {HASH_SEED} and results[0].as_dict()["hash_seed"] == HASH_SEED


def test_humaneval_1_codet_sample_46_gets_one_answer_in_every_run(codet_samples_path):
    """The data set's own case: CodeT's sample 46 of HumanEval/1 pairs brackets by zipping two sets, so
    what it returns depends on the hash seed. Eight fresh interpreters (local-rlimits) and three fresh
    fork-server backends: one answer, hence one verdict."""
    import gzip
    import json

    from acceptgate.sandbox import backend as backends

    task = next(t for t in map(json.loads, gzip.open(codet_samples_path, "rt"))
                if "def separate_paren_groups" in t["prompt"])
    source = task["prompt"] + task["samples"][46]
    harness = render.harness_for(suitespec.build("python-call/1", "separate_paren_groups",
                                                 [(("( ) (( )) (( )( ))",), {}, ["()", "(())", "(()())"])]))
    answers = []
    with backends.create("local-rlimits") as fresh:
        answers += [execute(harness, source, fresh) for _ in range(8)]
    for _ in range(3):
        with backends.create("local") as fresh:
            answers.append(execute(harness, source, fresh))
    seen = {(r.verdict, r.first_failure.got if r.first_failure else None) for r in answers}
    assert len(seen) == 1, seen
