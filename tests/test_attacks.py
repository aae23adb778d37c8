"""The attack suite: hostile candidates (data in tests/attacks/) run on every sandbox backend.

Each attack must get its verdict, and each escape check must hold afterwards (a sentinel file outside
the sandbox is untouched, a listener saw no connection, no process survived, ...). A backend that
cannot block an attack must say so: its known difference is recorded in attacks.toml and accepted only
when the result's ``isolation.not_enforced`` names the missing layer.

All attacks for one backend run once, in parallel threads, the first time a test asks for them; each
test then asserts on its attack's outcome.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from acceptgate.suites import literals, render, suitespec
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import execute

HERE = Path(__file__).resolve().parent
ATTACK_DIR = HERE / "attacks"
REPO = HERE.parent
SECRET = "AGSECRET-" + secrets.token_hex(16)  # the expected value the info-stealing attacks hunt for
SECRET_ENV = "ACCEPTGATE_ATTACK_SECRET"
SANDBOX_UID = 65534
WORKERS = 4


@dataclass(frozen=True)
class Expectation:
    verdicts: tuple[str, ...]
    checks: tuple[str, ...]
    because: str = ""  # phrase the backend's isolation.not_enforced must contain
    skip: str = ""


@dataclass(frozen=True)
class Attack:
    name: str
    what: str
    source: str
    cases: list
    expect: Expectation
    on: dict[str, Expectation]
    wall_seconds: float = 10.0
    runs: int = 1
    harness: str = "in-process"
    dialect: str = "python-call/1"
    unsafe_if_missing: str = ""  # not run where isolation.not_enforced names this (e.g. no process cap)

    def expectation(self, profile: str) -> Expectation:
        return self.on.get(profile, self.expect)

    def unsafe_on(self, backend: Backend) -> str:
        """Why this attack must not run on this backend (it would harm the host), or ""."""
        if not self.unsafe_if_missing:
            return ""
        missing = [m for m in backend.isolation(Limits()).not_enforced if self.unsafe_if_missing in m]
        return f"unsafe here: {missing[0]}" if missing else ""


def _expectation(doc: dict) -> Expectation:
    verdicts = tuple(doc["verdicts"]) if "verdicts" in doc else (doc["verdict"],) if "verdict" in doc else ()
    return Expectation(verdicts=verdicts, checks=tuple(doc.get("checks", ())),
                       because=doc.get("because", ""), skip=doc.get("skip", ""))


def load_attacks() -> list[Attack]:
    doc = tomllib.loads((ATTACK_DIR / "attacks.toml").read_text())
    attacks = []
    for item in doc["attack"]:
        attacks.append(Attack(
            name=item["name"], what=item["what"],
            source=(ATTACK_DIR / item["candidate"]).read_text(),
            cases=item["cases"], expect=_expectation(item),
            on={name: _expectation(sub) for name, sub in item.get("on", {}).items()},
            wall_seconds=float(item.get("wall_seconds", 10.0)), runs=int(item.get("runs", 1)),
            harness=item.get("harness", "in-process"), dialect=item.get("dialect", "python-call/1"),
            unsafe_if_missing=item.get("unsafe_if_missing", ""),
        ))
    return attacks


ATTACKS = load_attacks()


# --- what each attack is given, and what the checks look at -------------------------------------

def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Canary:
    """A process running as the sandbox uid outside any sandbox: kill(-1) from inside must miss it."""

    def __init__(self) -> None:
        ids = {"user": SANDBOX_UID, "group": SANDBOX_UID, "extra_groups": []} if os.geteuid() == 0 else {}
        self.proc = subprocess.Popen(["sleep", "600"], env={}, **ids)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Context:
    """The things one attack is pointed at, made on first use: files, listeners, a tag."""

    def __init__(self, canary: Canary, dataset: Path) -> None:
        self.tag = "ag" + secrets.token_hex(4)  # fits /proc/<pid>/comm (15 chars)
        self._canary = canary
        self._dataset = dataset
        self._values: dict[str, Any] = {}
        self._cleanups: list[Callable[[], None]] = []
        self.tcp: socket.socket | None = None
        self.unix: socket.socket | None = None
        self.sentinel_dir: str | None = None

    def value(self, key: str) -> Any:
        if key not in self._values:
            self._values[key] = getattr(self, "_make_" + key)()
        return self._values[key]

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            return self.value(value[1:])
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        return value

    def close(self) -> None:
        for cleanup in reversed(self._cleanups):
            cleanup()

    # makers, one per "$name" used in attacks.toml
    def _make_secret(self) -> str:
        return SECRET

    def _make_secret_env(self) -> str:
        return SECRET_ENV

    def _make_harness_pid(self) -> int:
        return os.getpid()

    def _make_harness_cmdline_sha(self) -> str:
        return _sha(Path("/proc/self/cmdline").read_bytes())

    def _make_canary_pid(self) -> int:
        return self._canary.proc.pid

    def _make_tag(self) -> str:
        return self.tag

    def _make_sentinel_dir(self) -> str:
        # World-writable and world-readable on purpose: only the sandbox may stand in the way.
        path = tempfile.mkdtemp(prefix="acceptgate-sentinel-")
        os.chmod(path, 0o777)
        self._cleanups.append(lambda: shutil.rmtree(path, ignore_errors=True))
        self.sentinel_dir = path
        return path

    def _make_sentinel(self) -> str:
        path = os.path.join(self.value("sentinel_dir"), "secret.txt")
        Path(path).write_text(SECRET)
        os.chmod(path, 0o644)
        return path

    def _make_sentinel_sha(self) -> str:
        return _sha(Path(self.value("sentinel")).read_bytes())

    def _make_sentinel_w(self) -> str:
        path = os.path.join(self.value("sentinel_dir"), "writable.txt")
        Path(path).write_text("original")
        os.chmod(path, 0o666)
        return path

    def _make_shadow_sha(self) -> str:
        try:
            return _sha(Path("/etc/shadow").read_bytes())
        except OSError:
            return "unreadable-here"

    def _make_repo_dir(self) -> str:
        return str(REPO)

    def _make_repo_file(self) -> str:
        return str(REPO / "pyproject.toml")

    def _make_repo_file_sha(self) -> str:
        return _sha(Path(self.value("repo_file")).read_bytes())

    def _make_dataset_file(self) -> str:
        return str(self._dataset)

    def _make_dataset_file_sha(self) -> str:
        return _sha(self._dataset.read_bytes())

    def _make_huge_int(self) -> int:
        return 10 ** 400  # beyond float range: math.isinf and float arithmetic raise OverflowError

    def _make_digest_small(self) -> tuple:
        return ("value", 1)

    def _make_digest_big(self) -> tuple:
        from acceptgate.suites import dialects
        return ("sha256", *dialects.equality_digest("b" * 1_000_000))

    def _make_all_syscalls(self) -> list:
        return list(SYSCALL_PROBES)

    def _make_port(self) -> int:
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self._cleanups.append(self.tcp.close)
        return self.tcp.getsockname()[1]

    def _make_abstract(self) -> str:
        name = "acceptgate-attack-" + self.tag
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + name)
        self.unix.listen(8)
        self._cleanups.append(self.unix.close)
        return name


@dataclass
class Outcome:
    attack: Attack
    context: Context
    result: dict  # ExecutionResult.as_dict() of the last run
    runs: list[dict] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return self.result["verdict"]

    def said(self) -> str:
        """Everything the candidate's side produced in every run (not the expected values)."""
        parts = []
        for run in self.runs:
            parts.append(run["detail"])
            for case in run["cases"]:
                parts += [case.get("got") or "", case.get("message") or "", case.get("error_type") or ""]
        return "\n".join(parts)


# --- running ------------------------------------------------------------------------------------

CHILD_HARNESS = r"""
import json, os, resource, sys, time
from acceptgate.suites import literals, render, suitespec
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import execute
job = json.loads(sys.stdin.read())
me = os.getpid()
# expected values travel as literal text: JSON would turn a tuple into a list
cases = [(tuple(me if a == "$harness_pid" else a for a in args), {}, literals.parse(want))
         for args, want in job["cases"]]
harness = render.harness_for(suitespec.build(job["dialect"], "f", cases))
def peak_mib():  # this process's own peak (VmHWM): ru_maxrss would also count a vfork parent's
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)  # this process's threads; the sandbox is a child
    return usage.ru_utime + usage.ru_stime
with backends.create(job["backend"]) as backend:
    started, used = time.monotonic(), cpu()
    result = execute(harness, job["source"], backend, limits=Limits(wall_seconds=job["wall"]))
    wall, used = time.monotonic() - started, cpu() - used
    pinned = getattr(backend, "pinned", None)  # the sandbox view, locked resident from start to end
    pinned_mib = pinned.bytes / 2**20 if pinned is not None else 0.0
# What the trusted side paid for this answer: its peak memory (beyond the pinned view every harness holds
# whatever the candidate does), its CPU and wall time, and the stored size.
out = result.as_dict() | {"harness": {"maxrss_mib": peak_mib() - pinned_mib,
                                      "wall_seconds": wall, "cpu_seconds": used,
                                      "stored_bytes": len(result.to_json())}}
print(json.dumps(out))
"""


def _cases(attack: Attack, ctx: Context, keep_pid_placeholder: bool = False) -> list[tuple[list, Any]]:
    out = []
    for case in attack.cases:
        args = [a if (keep_pid_placeholder and a == "$harness_pid") else ctx.resolve(a) for a in case["args"]]
        out.append((args, ctx.resolve(case["expected"])))
    return out


def run_in_process(attack: Attack, ctx: Context, backend: Backend) -> dict:
    cases = [(tuple(args), {}, want) for args, want in _cases(attack, ctx)]
    harness = render.harness_for(suitespec.build(attack.dialect, "f", cases))
    return execute(harness, attack.source, backend, limits=Limits(wall_seconds=attack.wall_seconds)).as_dict()


def run_in_child_harness(attack: Attack, ctx: Context, backend: Backend) -> dict:
    """Run the execution in a separate harness process whose *initial* environment holds the secret.

    (A variable set later with os.environ never shows in /proc/<pid>/environ, which holds the
    environment the process started with.)
    """
    job = {"backend": backend.name, "source": attack.source, "wall": attack.wall_seconds, "dialect": attack.dialect,
           "cases": [(args, literals.canonical(want))
                     for args, want in _cases(attack, ctx, keep_pid_placeholder=True)]}
    env = {**os.environ, SECRET_ENV: SECRET}
    proc = subprocess.run([sys.executable, "-c", CHILD_HARNESS], input=json.dumps(job), text=True,
                          capture_output=True, env=env, timeout=120, cwd=str(REPO))
    assert proc.returncode == 0, f"child harness failed: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_attack(attack: Attack, ctx: Context, backend: Backend) -> Outcome:
    runner = run_in_child_harness if attack.harness == "subprocess" else run_in_process
    runs = [runner(attack, ctx, backend) for _ in range(attack.runs)]
    return Outcome(attack=attack, context=ctx, result=runs[-1], runs=runs)


def profile(backend: Backend, result: dict) -> str:
    """Which expectations apply: "local" without namespaces is held to the rlimits profile."""
    enforced = result["isolation"]["enforced"]
    if backend.name.startswith("local") and not any(e.startswith("namespaces:") for e in enforced):
        return "local-rlimits"
    return backend.name


@pytest.fixture(scope="session")
def attack_runs(humanevalplus_path):
    canary = Canary()
    cache: dict[str, dict[str, Outcome]] = {}
    lock = threading.Lock()
    contexts: list[Context] = []

    def get(backend: Backend) -> dict[str, Outcome]:
        with lock:
            if backend.name not in cache:
                jobs = []
                for attack in ATTACKS:
                    if attack.expectation(backend.name).skip or attack.unsafe_on(backend):
                        continue
                    ctx = Context(canary, humanevalplus_path)
                    contexts.append(ctx)
                    # Resolve the attack's placeholders here, in one thread, before the pool starts.
                    _cases(attack, ctx, keep_pid_placeholder=attack.harness == "subprocess")
                    jobs.append((attack, ctx))
                with ThreadPoolExecutor(max_workers=WORKERS) as pool:
                    outcomes = list(pool.map(lambda job: run_attack(job[0], job[1], backend), jobs))
                cache[backend.name] = {o.attack.name: o for o in outcomes}
            return cache[backend.name]

    yield get
    for ctx in contexts:
        ctx.close()
    canary.close()


# --- escape checks ------------------------------------------------------------------------------

def check_secret_absent(o: Outcome) -> None:
    said = o.said()
    assert SECRET not in said, "the secret reached the candidate's answers"
    for key in ("sentinel_sha", "harness_cmdline_sha", "dataset_file_sha", "repo_file_sha", "shadow_sha"):
        if key in o.context._values:
            assert o.context._values[key] not in said, f"{key} reached the candidate's answers"


def check_sentinel_untouched(o: Outcome) -> None:
    ctx = o.context
    assert Path(ctx.value("sentinel_w")).read_text() == "original", "sentinel file was changed"


PLANT_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def check_nothing_planted(o: Outcome) -> None:
    dirs = list(PLANT_DIRS) + [str(REPO)] + ([o.context.sentinel_dir] if o.context.sentinel_dir else [])
    planted = [os.path.join(d, n) for d in dirs if os.path.isdir(d) for n in os.listdir(d)
               if n.endswith(o.context.tag)]
    assert not planted, f"files planted outside the sandbox: {planted}"


def _pending(sock: socket.socket | None) -> bool:
    if sock is None:
        return False
    ready, _, _ = select.select([sock], [], [], 0.2)
    return bool(ready)


def check_no_connection(o: Outcome) -> None:
    assert not _pending(o.context.tcp), "the TCP listener saw a connection"
    assert not _pending(o.context.unix), "the abstract unix listener saw a connection"


def survivors(tag: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                comm = Path(entry.path, "comm").read_text().strip()
                state = Path(entry.path, "stat").read_text().rpartition(")")[2].split()[0]
            except OSError:
                continue
            if comm == tag and state not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def check_no_survivor(o: Outcome) -> None:
    deadline = time.monotonic() + 30.0  # the kernel's teardown of the killed tree, slow at load 8-12
    while survivors(o.context.tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not survivors(o.context.tag), f"processes of the execution survived: {survivors(o.context.tag)}"


def check_host_fine(o: Outcome) -> None:
    assert subprocess.run(["true"], timeout=10).returncode == 0, "the host cannot start a process"


def check_canary_alive(o: Outcome) -> None:
    assert o.context._canary.proc.poll() is None, "the canary process (uid 65534, outside) was killed"
    assert os.getppid() > 1  # the harness itself is alive by construction; its parent too


def check_got_killed(o: Outcome) -> None:
    assert o.result["cases"][0].get("got") == "'killed'", o.result["cases"]


def check_cases_judged_separately(o: Outcome) -> None:
    assert [c["status"] for c in o.result["cases"]] == ["pass", "fail", "fail"], o.result["cases"]


def check_held_within_memory_limit(o: Outcome) -> None:
    got = o.result["cases"][0].get("got")
    if o.verdict == "fail":
        assert got is not None and int(got) <= Limits().memory_bytes >> 20, f"held {got} MiB"


HARNESS_MAX_MIB = 1024
SYSCALL_PROBES = ("add_key", "bpf", "io_uring_setup", "keyctl", "perf_event_open", "process_vm_readv",
                  "ptrace", "request_key", "setns", "unshare", "userfaultfd")  # what probe_syscalls.py tries


def check_harness_bounded(o: Outcome) -> None:
    """The trusted side survived the answer: < 1 GiB peak, within the wall clock + 5 s of its own CPU
    time, a small record. CPU time, not wall time: the harness's judging stops the candidate's clock
    (executor.execute), and on a loaded machine its wall time is a multiple of its CPU cost."""
    for run in o.runs:
        paid = run["harness"]
        assert paid["maxrss_mib"] < HARNESS_MAX_MIB, f"harness peak RSS {paid['maxrss_mib']:.0f} MiB"
        assert paid["cpu_seconds"] <= o.attack.wall_seconds + 5, (
            f"harness CPU {paid['cpu_seconds']:.1f} s (wall {paid['wall_seconds']:.1f} s)")
        assert paid["stored_bytes"] < 64 * 1024, f"stored result of {paid['stored_bytes']} bytes"


def check_no_syscall_reachable(o: Outcome) -> None:
    got = o.result["cases"][0].get("got")
    assert got == "[]", f"reachable from the sandbox: {got}"


CHECKS: dict[str, Callable[[Outcome], None]] = {
    "harness_bounded": check_harness_bounded,
    "no_syscall_reachable": check_no_syscall_reachable,
    "secret_absent": check_secret_absent,
    "sentinel_untouched": check_sentinel_untouched,
    "nothing_planted": check_nothing_planted,
    "no_connection": check_no_connection,
    "no_survivor": check_no_survivor,
    "host_fine": check_host_fine,
    "canary_alive": check_canary_alive,
    "got_killed": check_got_killed,
    "cases_judged_separately": check_cases_judged_separately,
    "held_within_memory_limit": check_held_within_memory_limit,
}


# --- the tests ----------------------------------------------------------------------------------

def test_attack_data_is_complete():
    assert len(ATTACKS) >= 30
    assert len({a.name for a in ATTACKS}) == len(ATTACKS)
    used = {c for a in ATTACKS for e in (a.expect, *a.on.values()) for c in e.checks}
    assert used <= set(CHECKS), used - set(CHECKS)
    for attack in ATTACKS:
        assert attack.expect.verdicts, attack.name
    files = {p.name for p in ATTACK_DIR.glob("*.py")}
    referenced = {name for name in files if any(a.source == (ATTACK_DIR / name).read_text() for a in ATTACKS)}
    assert files == referenced, f"candidate files no attack uses: {files - referenced}"


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack(sandbox_backend, attack, attack_runs):
    expect = attack.expectation(sandbox_backend.name)
    if expect.skip or attack.unsafe_on(sandbox_backend):
        pytest.skip(expect.skip or attack.unsafe_on(sandbox_backend))
    outcome = attack_runs(sandbox_backend)[attack.name]
    expect = attack.expectation(profile(sandbox_backend, outcome.result))
    summary = {k: outcome.result[k] for k in ("verdict", "detail", "exit")} | {"cases": outcome.result["cases"]}
    assert outcome.verdict in expect.verdicts, f"{attack.name} ({attack.what}): {summary}"
    if expect.because:
        missing = outcome.result["isolation"]["not_enforced"]
        assert any(expect.because in item for item in missing), (
            f"{attack.name}: a known difference needs isolation.not_enforced to name "
            f"{expect.because!r}; it says {missing}")
    for name in expect.checks:
        CHECKS[name](outcome)


# --- nothing crosses between executions (issue 7) ------------------------------------------------
# A writer leaves its hidden input in the kernel's per-uid state (keyrings, the pipe-buffer quota); a
# reader scored right after it (--workers 1) or beside it (--workers 2) looks. The reader's expected
# values are what a leak would give, so it passes only through a channel between executions.

CROSSING = ATTACK_DIR / "crossing"


@pytest.mark.parametrize("workers", [1, 2])
def test_nothing_crosses_between_executions_through_score(sandbox_backend, workers, tmp_path):
    from acceptgate.scoring.score import score_samples
    from acceptgate.datasets.samples import read_samples

    secret = "AGLEAK" + secrets.token_hex(8)
    suites = {
        "X/writer": suitespec.build("python-call/1", "f", [((secret,), {}, secret)]),
        "X/reader": suitespec.build("python-call/1", "f", [(("keys",), {}, secret),
                                                           (("pipes",), {}, "pipe quota exhausted")]),
    }
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"X/{name}", "solution": (CROSSING / f"{name}.py").read_text()})
                               + "\n" for name in ("writer", "reader")))
    report = score_samples(read_samples(samples), suites, {}, sandbox_backend, suite="hidden", fail_fast=False,
                           workers=workers)
    got = {r.task_id: (r.verdict, r.cases_failed, r.detail) for r in report.rows}
    assert got["X/writer"][0] == "pass", got  # the writer ran to its end (its answer is its own input)
    assert got["X/reader"][:2] == ("fail", 2), got


def test_the_pipe_quota_probe_sees_exhaustion_within_one_execution(local_backend):
    """The reader's pipe probe can fail: inside the writer's own execution it sees the quota gone."""
    writer = (CROSSING / "writer.py").read_text()
    reader = (CROSSING / "reader.py").read_text().replace("def f(which):", "def look(which):")
    source = writer.replace("    time.sleep(3)\n    return secret", "    return look('pipes')") + "\n" + reader
    harness = render.harness_for(suitespec.build("python-call/1", "f", [(("x",), {}, "pipe quota exhausted")]))
    result = execute(harness, source, local_backend)
    assert result.verdict == "pass", result.as_dict()


def test_docs_show_the_threat_model_as_written():
    """The sandbox page is built with THREAT_MODEL in it (docs/_hooks expands its marker at build time)."""
    import importlib.util

    from acceptgate.sandbox.threat import THREAT_MODEL

    hook_file = REPO / "docs" / "_hooks" / "acceptgate_docs.py"
    spec = importlib.util.spec_from_file_location("acceptgate_docs_hook", hook_file)
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (REPO / "docs" / "sandbox.md").read_text(encoding="utf-8")
    assert page.count("<!-- threat-model -->") == 1
    assert THREAT_MODEL.rstrip() in hook.expand(page)


BATCH_HARNESS = r"""
import json, resource, sys, time
from acceptgate.suites import literals, render, suitespec
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.executor import execute_many
job = json.loads(sys.stdin.read())
jobs = []
for item in job["jobs"]:
    cases = [(tuple(args), {}, literals.parse(want)) for args, want in item["cases"]]  # literal text
    jobs.append((render.harness_for(suitespec.build(item["dialect"], "f", cases)), item["source"]))
def peak_mib():  # this process's own peak (VmHWM): ru_maxrss would also count a vfork parent's
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
with backends.create(job["backend"]) as backend:
    started = time.monotonic()
    results = execute_many(jobs, backend, workers=2)
    wall = time.monotonic() - started
    pinned = getattr(backend, "pinned", None)  # the sandbox view, locked resident from start to end
    pinned_mib = pinned.bytes / 2**20 if pinned is not None else 0.0
print(json.dumps({"verdicts": [r.verdict for r in results], "wall": wall,
                  "maxrss_mib": peak_mib() - pinned_mib}))
"""


def test_hostile_answers_in_one_batch_cost_no_other_sample_its_result(sandbox_backend):
    """The trusted-side attacks side by side in one batch with two workers (as score runs them), between
    honest samples: every sample gets its own result, and the harness stays bounded."""
    ctx = Context(canary=None, dataset=None)  # these attacks use no canary nor data set
    honest = {"source": "def f(x):\n    return x", "cases": [[[1], "1"]], "dialect": "python-call/1"}
    jobs = [honest]
    for attack in ATTACKS:
        if attack.harness == "subprocess" and attack.name.startswith(("huge", "colliding")):
            # expected values as literal text: JSON would turn a tuple into a list
            cases = [[[ctx.resolve(a) for a in c["args"]], literals.canonical(ctx.resolve(c["expected"]))]
                     for c in attack.cases]
            jobs += [{"source": attack.source, "cases": cases, "dialect": attack.dialect}, honest]
    assert len(jobs) >= 13
    proc = subprocess.run([sys.executable, "-c", BATCH_HARNESS], input=json.dumps({"backend": sandbox_backend.name,
                          "jobs": jobs}), text=True, capture_output=True, timeout=300, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["verdicts"][0::2] == ["pass"] * (len(jobs) // 2 + 1), out
    assert all(v != "pass" for v in out["verdicts"][1::2]), out
    assert out["maxrss_mib"] < HARNESS_MAX_MIB, out
