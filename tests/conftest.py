"""Shared fixtures. Data comes from ../shared/data (never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from prefect_harness import PREFECT_STARTUP_TIMEOUT, SHARED_ENV, controller_configure, controller_unconfigure

REPO = Path(__file__).resolve().parents[1]

# Under pytest-xdist (scripts/test.sh runs several workers) each worker gets a Prefect home of its own: the
# temporary servers that CLI subprocesses start keep their SQLite database there, and one database written
# by several servers at once is locked. Set before prefect is imported; subprocesses inherit it.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER:
    os.environ["PREFECT_HOME"] = str(Path(os.environ.get("PREFECT_HOME") or REPO / ".prefect") / f"xdist-{_WORKER}")
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
# The temporary servers the CLI starts get the same generous backstop as the harness (prefect_harness.py).
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(PREFECT_STARTUP_TIMEOUT))


@pytest.fixture(scope="session", autouse=True)
def import_cache(tmp_path_factory):
    """One import cache for the session (the flows and CLI processes it starts inherit it): the user's
    own cache is never read or written, and every session starts cold. Under pytest-xdist the workers
    share it, in the controller's directory (removed at the end): an import that another worker is
    filling is waited for and copied (acceptgate.datasets.importcache.filling), so the documentation's
    parts, which each import the whole of HumanEval+, import it once (about 12 s of CPU each)."""
    shared = os.environ.get(SHARED_ENV) if os.environ.get("PYTEST_XDIST_WORKER") else None
    path = Path(shared) / "import-cache" if shared else tmp_path_factory.mktemp("import-cache")
    before = os.environ.get("ACCEPTGATE_CACHE_DIR")
    os.environ["ACCEPTGATE_CACHE_DIR"] = str(path)
    yield path
    if before is None:
        os.environ.pop("ACCEPTGATE_CACHE_DIR", None)
    else:
        os.environ["ACCEPTGATE_CACHE_DIR"] = before


@pytest.fixture(autouse=True)
def fresh_settings():
    """acceptgate reads its settings once per process; a test that changes the environment in-process
    calls settings.reload() itself, and no test sees the settings another test left."""
    from acceptgate._util import settings

    settings.reload()
    yield
    settings.reload()


def shared_data_dir() -> Path:
    return Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.fail(f"shared data not found at {path} (set ACCEPTGATE_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def humanevalplus_path(shared_data: Path) -> Path:
    return shared_data / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"


@pytest.fixture(scope="session")
def codet_samples_path(shared_data: Path) -> Path:
    return shared_data / "samples" / "codet_codegen16B.jsonl.gz"


@pytest.fixture(scope="session")
def local_backend():
    from acceptgate.sandbox import backend

    with backend.create("local") as b:
        yield b


# Every sandbox backend the attack and conformance suites run on. "docker" is skipped when no engine
# is reachable -- except under CI (CI=true), where an unavailable backend fails the run.
# "docker:attach" is the docker backend with its keeper spoken to through the engine's attach instead of
# the socket it uses on this machine (where each runner holds the harness's own pipes): both channels
# face every attack.
SANDBOX_BACKENDS = ("local", "local-rlimits", pytest.param("docker", marks=pytest.mark.docker),
                    pytest.param("docker:attach", marks=pytest.mark.docker))


@pytest.fixture(scope="session")
def open_backend():
    """name (or name:channel for docker) -> an open Backend, created once per session and closed at its end."""
    from acceptgate.sandbox import backend as backends

    opened: dict = {}

    def get(name: str):
        if name not in opened:
            base, _, channel = name.partition(":")
            try:
                opened[name] = backends.create(base, **({"channel": channel} if channel else {}))
            except (ValueError, backends.BackendUnavailable) as exc:
                opened[name] = exc
        found = opened[name]
        if isinstance(found, Exception):
            reason = f"sandbox backend {name!r} unavailable: {found}"
            if os.environ.get("CI") == "true":
                pytest.fail(reason + " (CI=true: every backend must run)")
            pytest.skip(reason)
        return found

    yield get
    for found in opened.values():
        if not isinstance(found, Exception):
            found.close()


@pytest.fixture(scope="module", params=SANDBOX_BACKENDS)
def sandbox_backend(request, open_backend):
    return open_backend(request.param)


# The session-scoped Prefect test server for flow tests (prefect is imported only when a test uses it);
# under pytest-xdist one server for all workers, which the controller stops at the end (prefect_harness.py).
from prefect_harness import prefect_harness  # noqa: E402,F401
from prefect_harness import shared_server_url  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def prefect_api_for_subprocesses():
    """Under pytest-xdist, every ``acceptgate`` command a test starts talks to the session's one Prefect
    server instead of starting a temporary server of its own (about 14 s of CPU per start, measured: a
    one-task audit took 32.8 s of CPU against 18.5 s with PREFECT_API_URL set). The tests whose subject is
    the temporary server (test_signals, test_bad_ids, test_serve) remove PREFECT_API_URL from the
    environment they pass, as before."""
    directory = os.environ.get(SHARED_ENV)
    if not (os.environ.get("PYTEST_XDIST_WORKER") and directory) or "PREFECT_API_URL" in os.environ:
        yield
        return
    os.environ["PREFECT_API_URL"] = shared_server_url(Path(directory))
    yield
    os.environ.pop("PREFECT_API_URL", None)


def sandbox_cgroups_of(pids: list[int]) -> list[str]:
    """The per-execution and slot cgroups that the processes ``pids`` made and that still exist, under
    every cgroup parent this host has (pids, memory, cpuacct)."""
    from acceptgate.sandbox import cgroup, hostprobe

    caps = hostprobe.probe()
    parents = [caps.cgroups.pids, caps.cgroups.memory] if caps.cgroups else []
    parents += [cgroup.cpuacct_parent()] if cgroup.cpuacct_parent() else []
    owners = {str(p) for p in pids}
    return [str(g) for parent in parents for g in Path(parent).glob(f"{cgroup.PREFIX}*")
            if g.name[len(cgroup.PREFIX):].removeprefix(cgroup.SLOT).split("-")[0] in owners]


def pytest_configure(config):
    controller_configure(config)


def pytest_unconfigure(config):
    controller_unconfigure(config)


# The files that take longest start first, longest first (a list-scheduling rule: the last file to start
# is then a short one, and the workers end together). Their order is the total seconds per file of a full
# run (`--junitxml`, summed per file: 2026-12-02, `scripts/test.sh --under-load`); scripts/test.sh passes
# --no-loadscope-reorder, since pytest-xdist would otherwise start the files with the most tests first
# (and a one-test file of three minutes last: it was the end of every run). The three doc-example parts
# come first, by their CPU (`python3 bench/bench_doc_examples.py`).
SLOW_FILES = ("test_doc_examples.py", "test_doc_examples_pages.py", "test_doc_examples_commands.py", "test_exit_codes.py", "test_dask_cluster.py", "test_serve.py", "test_service_api.py", "test_signals.py",
              "test_attacks.py", "test_gate_flow.py", "test_concurrency.py", "test_ledger.py", "test_crash_safety.py",
              "test_judge_backends.py", "test_leak_audit.py", "test_service_fuzz.py", "test_judge_core.py",
              "test_stats_gates.py", "test_dask.py", "test_quarantine.py", "test_nightly_chain.py", "test_report.py",
              "test_warehouse.py", "test_v4v_external.py", "test_audit.py", "test_experiments.py",
              "test_expectations.py", "test_v4v_flow.py", "test_audit_flow.py", "test_shards.py", "test_digest.py",
              "test_docker_backend.py", "test_channels.py", "test_bad_ids.py", "test_stats_seed004.py",
              "test_v4v_certified.py", "test_cpu_time_limit.py", "test_v4v_certify.py", "test_importers.py")


_CPU_LOG = os.environ.get("ACCEPTGATE_TEST_CPU_LOG")
if _CPU_LOG:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        """Where the suite's CPU goes: each test's CPU seconds (this worker's and the children it reaped:
        CLI commands, harness processes; not containers nor the shared Prefect server), one line per
        test appended to $ACCEPTGATE_TEST_CPU_LOG. Fixture set-up counts with the test that needed it."""
        before = os.times()
        yield
        after = os.times()
        cpu = sum(b - a for a, b in zip(before[:4], after[:4]))
        with open(_CPU_LOG, "a") as log:
            log.write(f"{item.nodeid}\t{cpu:.2f}\n")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES)))  # stable: file order kept otherwise
