"""External verifiers (issue 11, item 6): any command, run in the sandbox, and EvalPlus 0.3.1 itself.

The command path (``sandbox/command.py``) runs real programs under the real local backend; the
EvalPlus test runs EvalPlus's own code from its venv (``ACCEPTGATE_EVALPLUS_VENV``, else
``.venv-evalplus-core`` -- which ``scripts/test.sh`` creates -- else ``bench/.venv-evalplus``, the venv
``bench/bench_agreement.py`` makes) and is skipped, saying why, when none has evalplus==0.3.1.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import command
from acceptgate.sandbox.backend import Limits
from acceptgate.v4v import certify as C
from acceptgate.v4v import external, pools
from acceptgate.v4v.pools import PoolSettings
from acceptgate.v4v.verifiers import ERROR, FAIL, PASS

REPO = Path(__file__).resolve().parents[1]
JUDGES = REPO / "tests" / "judges"
SETTINGS = C.Settings(pool=PoolSettings(samples_per_task=2), repeat_sample=1, heldout_seed="5" * 32)
FAST = external.ExternalOptions(limits=Limits(wall_seconds=10, memory_bytes=512 * 1024 * 1024, cpu_seconds=11,
                                              processes=32))


def _python(backend) -> str:
    return backend.caps.bwrap.python if backend.plan.namespaces else backend.python


# -- the sandbox's command path ------------------------------------------------------------------------

def test_command_reads_stdin_and_input_files_in_an_empty_environment(local_backend):
    probe = ("import os, sys; data = sys.stdin.read(); f = open('{input}/c.py').read(); "
             "print(len(data), f, sorted(set(os.environ) - {'PWD'}), os.getcwd() != '/'); print('PASS')")
    r = command.run_command(local_backend, [_python(local_backend), "-I", "-c", probe], b"hello", Limits(),
                            files={"c.py": b"xyz"})
    assert (r.returncode, r.timed_out, r.stdout_overflow) == (0, False, False)
    assert r.stdout.decode().split("\n")[:2] == ["5 xyz [] True", "PASS"]


def test_command_wall_clock_output_bound_and_exit_status(local_backend):
    py = _python(local_backend)
    slow = command.run_command(local_backend, [py, "-c", "import time; time.sleep(30)"], b"", Limits(wall_seconds=1))
    assert slow.timed_out and slow.seconds < 10
    flood = command.run_command(local_backend, [py, "-c", "print('x' * 10**6)"], b"", Limits())
    assert flood.stdout_overflow and len(flood.stdout) == command.STDOUT_BYTES
    crash = command.run_command(local_backend, [py, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                                b"", Limits())
    assert crash.signal == 9 and crash.describe() == "killed by SIGKILL"
    huge = command.run_command(local_backend, [py, "-c", "b = bytearray(400 * 2**20); print('PASS')"], b"",
                               Limits(memory_bytes=128 * 2**20))
    assert huge.returncode != 0 and b"MemoryError" in huge.stderr_tail


def test_command_has_no_network_and_a_read_only_view(local_backend):
    if not local_backend.plan.namespaces:
        pytest.skip("this host's local backend has no namespaces: commands see the network (isolation says so)")
    py = _python(local_backend)
    net = command.run_command(local_backend, [py, "-c", "import socket; socket.create_connection(('1.1.1.1', 80), 2)"],
                              b"", Limits())
    # socket() itself is denied by the syscall filter (and the network namespace is empty besides)
    assert net.returncode == 1 and b"Operation not permitted" in net.stderr_tail
    write = command.run_command(local_backend, [py, "-c", f"open({str(JUDGES / 'x')!r}, 'w')"], b"", Limits(),
                                mounts=(str(JUDGES),))
    assert write.returncode == 1 and b"Read-only file system" in write.stderr_tail
    assert not (JUDGES / "x").exists()
    iso = command.isolation(local_backend, Limits(), (str(JUDGES),))
    assert any("read-only binds" in line and str(JUDGES) in line for line in iso.enforced)


# -- the decision a command's run stands for ------------------------------------------------------------

def _result(rc=0, out=b"", *, sig=None, timed_out=False, overflow=False):
    return command.CommandResult(rc, sig, timed_out, False, out, overflow, b"boom\n", 0.1)


@pytest.mark.parametrize("result, outcome, kind", [
    (_result(0, b"log line\nPASS\n"), PASS, None),
    (_result(0, b"FAIL\n"), FAIL, None),
    (_result(1, b"FAIL\n"), FAIL, None),  # judges often exit 1 on a failure
    (_result(1, b"PASS\n"), ERROR, "malformed"),  # a contradiction is no decision
    (_result(1, b""), ERROR, "crash"),  # non-zero exit without a verdict: never a correct rejection
    (_result(2, b"FAIL\n"), ERROR, "crash"),
    (_result(0, b""), ERROR, "malformed"),
    (_result(0, b"maybe\n"), ERROR, "malformed"),
    (_result(0, b"PASS\n", overflow=True), ERROR, "malformed"),
    (_result(None, b"PASS\n", timed_out=True), ERROR, "timeout"),
    (_result(137, b"", sig=9), ERROR, "crash"),
])
def test_interpret(result, outcome, kind):
    d = external.interpret(result)
    assert (d.outcome, d.error_kind) == (outcome, kind)


# -- certifying command verifiers --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory, humanevalplus_path, codet_samples_path, local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=3)
    suites = suitefiles.write_suites(result, tmp_path_factory.mktemp("v4vext") / "suites")
    return C.load_materials(str(suites), str(humanevalplus_path), str(codet_samples_path),
                            task_ids=["HumanEval/0", "HumanEval/2"])


@pytest.fixture(scope="module")
def two_task_runs(two_tasks, local_backend):
    proposed = C.propose_pools(two_tasks, SETTINGS)
    runs = C.execute_pools(two_tasks, proposed, local_backend, SETTINGS)
    kept, _ = C.check_construction(two_tasks, proposed, runs, local_backend, SETTINGS)
    runs.update(C.repeat_runs(two_tasks, kept, local_backend, SETTINGS))
    return kept, runs


def _certify(names, materials, kept_runs, backend, options=FAST):
    kept, runs = kept_runs
    verifiers = C.make_verifiers(tuple(names), backend, SETTINGS.limits, options)
    records, verdicts, reports, _ = C.evaluate(materials, kept, runs, verifiers, SETTINGS)
    return records, verdicts, reports


def test_a_weak_command_verifier_is_measured_and_exposed(two_tasks, two_task_runs, local_backend):
    """A verifier under study is measured on the tasks' pools, not held to the task's gates: its
    diagnosis and rates expose it; it is checked for repeatability and provenance."""
    name = f"cmd:python3 {JUDGES / 'defines_entry.py'} {{file}} {{entry_point}}"
    records, verdicts, reports = _certify([name], two_tasks, two_task_runs, local_backend)
    (rep,) = reports
    assert rep.family == "external" and rep.role == "measured"
    assert rep.summary.diagnosis == "all-accept"  # it never runs the candidate
    assert rep.summary.tnr == 0 and rep.summary.tpr == 100 and sum(rep.summary.errors.values()) == 0
    assert rep.summary.fpr_attack == 100 and rep.summary.heldout_tnr == 0
    by_gate = {(v.task_id, g.gate): g for v in verdicts for g in v.gates}
    for tid in ("HumanEval/0", "HumanEval/2"):
        assert by_gate[(tid, "repeatability")].status == "pass"
        assert by_gate[(tid, "provenance")].status == "pass"
        assert (tid, "replay") not in by_gate and (tid, "mutation") not in by_gate
    assert rep.gates_applicable == 2
    versions = {r.verifier_version for r in records}
    assert len(versions) == 1 and versions.pop().startswith("acceptgate-v4v/1:command:sha256=")


@pytest.fixture
def readable_dir():
    """A directory the sandbox's uid can read (pytest's tmp_path sits under a 0700 directory)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="acceptgate-test-judge-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_command_verifier_is_bound_to_its_files(readable_dir):
    judge = readable_dir / "judge.py"
    shutil.copy(JUDGES / "defines_entry.py", judge)
    before = external.CommandVerifier(f"python3 {judge} {{file}} {{entry_point}}")
    judge.write_text(judge.read_text() + "\n# changed\n")
    after = external.CommandVerifier(f"python3 {judge} {{file}} {{entry_point}}")
    assert before.version != after.version and before.command_sha256 == after.command_sha256
    assert str(judge) in after.mounts
    with pytest.raises(InvalidInput, match="--verifier-mount"):
        external.CommandVerifier("python3 x.py", external.ExternalOptions(mounts=("/nonexistent/dir",)))
    with pytest.raises(InvalidInput, match="empty command"):
        external.CommandVerifier("  ")


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox reads as another uid only when the harness is root")
def test_an_unreadable_command_verifier_is_refused_before_any_execution(tmp_path, readable_dir):
    private = readable_dir / "private"
    private.mkdir()
    shutil.copy(JUDGES / "defines_entry.py", private / "judge.py")
    private.chmod(0o700)
    with pytest.raises(InvalidInput) as err:
        external.CommandVerifier(f"python3 {private / 'judge.py'} {{file}} {{entry_point}}")
    msg = str(err.value)
    assert f"directory {private} (mode 0700" in msg and "chmod o+rx" in msg and "--verifier-command" in msg
    private.chmod(0o755)
    (private / "judge.py").chmod(0o600)
    with pytest.raises(InvalidInput, match="is not readable by other users"):
        external.CommandVerifier(f"python3 {private / 'judge.py'} {{file}}")
    with pytest.raises(InvalidInput, match="could not read this"):  # the flow's entry refuses it too
        C.with_external(C.Settings(), [f"python3 {private / 'judge.py'}"], [], None, "x.jsonl")
    (private / "judge.py").chmod(0o644)
    assert external.CommandVerifier(f"python3 {private / 'judge.py'} {{file}}").mounts == (str(private / "judge.py"),)


def test_a_flaky_command_verifier_fails_repeatability(two_tasks, two_task_runs, local_backend):
    _, verdicts, _ = _certify([f"cmd:python3 {JUDGES / 'coin.py'}"], two_tasks, two_task_runs, local_backend)
    repeat = [g for v in verdicts for g in v.gates if g.gate == "repeatability"]
    assert all(g.status == "fail" and "changed decision" in g.reason for g in repeat)


@pytest.mark.parametrize("how, outcome, kind", [
    ("crash", ERROR, "crash"), ("sleep", ERROR, "timeout"), ("garbage", ERROR, "malformed"),
    ("flood", ERROR, "malformed"), ("net", ERROR, "crash"), ("env", PASS, None),
])
def test_command_verifier_execution_errors_are_kept_apart(how, outcome, kind, two_tasks, local_backend):
    if how == "net" and not local_backend.plan.namespaces:
        pytest.skip("no network namespace on this host's local backend")
    options = external.ExternalOptions(limits=Limits(wall_seconds=2, memory_bytes=512 * 2**20, cpu_seconds=3))
    (v,) = C.make_verifiers((f"cmd:python3 {JUDGES / 'misbehaves.py'} {how}",), local_backend, Limits(), options)
    m = two_tasks[0]
    gold = pools.make(m.task_id, "gold", "canonical", "legal", m.gold)
    d = v.decide(gold, m, None)
    assert (d.outcome, d.error_kind) == (outcome, kind)


# -- EvalPlus 0.3.1 itself -----------------------------------------------------------------------------------

def _evalplus_venv() -> str:
    tried = [os.environ.get("ACCEPTGATE_EVALPLUS_VENV") or "", str(REPO / ".venv-evalplus-core"),
             str(REPO / "bench" / ".venv-evalplus")]
    for venv in filter(None, tried):
        try:
            external.evalplus_site_packages(venv)
            return venv
        except InvalidInput:
            continue
    pytest.skip(f"EvalPlus 0.3.1 is not installed in any of {', '.join(filter(None, tried))} "
                "(scripts/test.sh creates .venv-evalplus-core; or set ACCEPTGATE_EVALPLUS_VENV)")


def test_evalplus_certified_as_a_verifier(two_tasks, two_task_runs, local_backend, humanevalplus_path):
    venv = _evalplus_venv()
    options = external.ExternalOptions(evalplus_venv=venv, dataset=str(humanevalplus_path))
    records, verdicts, reports = _certify(["GT", "evalplus"], two_tasks, two_task_runs, local_backend, options)
    ep = next(r for r in reports if r.name == "evalplus")
    assert ep.family == "external" and sum(ep.summary.errors.values()) == 0
    assert ep.summary.tpr == 100  # every legal candidate (gold, variants, passing samples) passes EvalPlus
    assert ep.summary.tnr > 50 and ep.summary.diagnosis == "-"
    mine = [r for r in records if r.verifier == "evalplus"]
    assert {r.verifier_version for r in mine} == {f"evalplus==0.3.1:judge-sha256={external.sha256_text(external.JUDGE.read_text())}"}
    assert all(r.spec_hash and len(r.spec_hash) == 64 for r in mine)  # each task's dataset record
    by_gate = {(v.verifier, v.task_id, g.gate): g.status for v in verdicts for g in v.gates}
    assert by_gate[("evalplus", "HumanEval/0", "provenance")] == "pass"
    assert by_gate[("evalplus", "HumanEval/0", "repeatability")] == "pass"
    assert ("evalplus", "HumanEval/0", "mutation") not in by_gate  # measured: not held to the task's gates
    # the decisions EvalPlus gives the gold and a no-op
    gold = next(r for r in mine if r.candidate_id == "HumanEval/0:gold:canonical" and r.round == 0)
    noop = next(r for r in mine if r.candidate_id.startswith("HumanEval/0:no-op") and r.round == 0)
    assert (gold.decision.outcome, noop.decision.outcome) == (PASS, FAIL)
