"""ONE Prefect test server per test session: a temporary database and API that flow tests run against.

Flow tests take the ``prefect_harness`` fixture (registered in conftest.py); each flow call then costs
about 1-2 s on top of the one server start (10-20 s cold, far more on a busy machine).

In one pytest process this is Prefect's ``prefect_test_harness``. Under pytest-xdist the workers share
one server (four cold starts at once on a 2-core machine took 45-110 s each): the xdist controller makes
a directory for it (``pytest_configure`` in conftest.py), the first worker that needs it starts
``shared_prefect_server.py`` there under a file lock while the others wait on the lock, and the controller
stops it at the end of the session, also after a Ctrl-C (``pytest_unconfigure``); the server process
also exits by itself when the controller is gone. Tests whose subject is a temporary server's own life
(the signal tests) start their own through the CLI, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from acceptgate._util.interrupt import pid_alive

# A server start is a wait on its health check, not a measurement: with several pytest-xdist workers on a
# busy 2-core machine a cold start (the SQLite migrations) has taken over 120 s, so the backstop is generous.
PREFECT_STARTUP_TIMEOUT = 900

SHARED_ENV = "ACCEPTGATE_TEST_PREFECT_DIR"  # set by the xdist controller, inherited by its workers
_SERVER_SCRIPT = Path(__file__).with_name("shared_prefect_server.py")


def is_xdist_controller(config) -> bool:
    return not hasattr(config, "workerinput") and (getattr(config.option, "numprocesses", None) or 0) != 0 \
        and getattr(config.option, "dist", "no") != "no"


def controller_configure(config) -> None:
    """In the xdist controller, before the workers start: the shared server's directory."""
    if not is_xdist_controller(config):
        return
    directory = Path(tempfile.mkdtemp(prefix="acceptgate-test-prefect-"))
    (directory / "controller.pid").write_text(str(os.getpid()))
    os.environ[SHARED_ENV] = str(directory)


def controller_unconfigure(config) -> None:
    """In the xdist controller, after the workers are done (or interrupted): stop the shared server."""
    directory = os.environ.get(SHARED_ENV)
    if not is_xdist_controller(config) or not directory:
        return
    directory = Path(directory)
    with _locked(directory):  # a worker still starting it has written its state by the time we hold the lock
        state = _read_state(directory)
    if state:
        with contextlib.suppress(ProcessLookupError):
            os.kill(state["pid"], signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_alive(state["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in (state["pid"], state["server_pid"]):  # a server that would not stop (its own session)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
    os.environ.pop(SHARED_ENV, None)
    shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def _locked(directory: Path):
    with open(directory / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_state(directory: Path) -> dict | None:
    try:
        return json.loads((directory / "server.json").read_text())
    except FileNotFoundError:
        return None


def shared_server_url(directory: Path) -> str:
    """The shared server's API URL, starting it if no worker has yet (under the lock)."""
    with _locked(directory):
        state = _read_state(directory)
        if state and pid_alive(state["pid"]):
            return state["url"]
        controller = int((directory / "controller.pid").read_text())
        log = open(directory / "server.log", "ab")
        proc = subprocess.Popen([sys.executable, str(_SERVER_SCRIPT), str(directory), str(controller)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)  # it outlives this worker; the controller stops it
        log.close()
        deadline = time.monotonic() + PREFECT_STARTUP_TIMEOUT
        while (state := _read_state(directory)) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the shared Prefect test server did not start; see {directory / 'server.log'}")
            time.sleep(0.2)
        return state["url"]


def seed_prefect_home(home: Path) -> bool:
    """Give a fresh Prefect home (no database yet) a copy of the shared server's migrated database, so that
    a server a test starts there skips the migrations (about 10 s of CPU; the shared server itself still
    runs them on an empty home every session). Under pytest-xdist, once the shared server is up; else
    nothing. Returns whether it copied."""
    directory = os.environ.get(SHARED_ENV)
    target = Path(home) / "prefect.db"
    if not (os.environ.get("PYTEST_XDIST_WORKER") and directory) or target.exists():
        return False
    shared_server_url(Path(directory))  # started, if no worker has yet: it writes the template first
    template = Path(directory) / "template-prefect.db"
    if not template.is_file():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, target.with_suffix(".tmp"))
    target.with_suffix(".tmp").replace(target)
    return True


@contextlib.contextmanager
def _against(url: str):
    """Prefect's settings in this process point at ``url`` (as prefect_test_harness does for its server)."""
    import prefect.context
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: url}), \
            prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()):
        yield
        _drain_workers()


def _drain_workers() -> None:
    """Send this process's buffered logs and events before its settings change back."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain():
        with contextlib.suppress(RuntimeError):  # a worker that never started
            result = APILogWorker.instance().drain()
            if hasattr(result, "__await__"):
                await result
        result = EventsWorker.drain_all()
        if hasattr(result, "__await__"):
            await result

    run_coro_as_sync(drain())


@pytest.fixture(scope="session")
def prefect_harness():
    from acceptgate.tasks import _prefect_env

    _prefect_env.apply()  # offline settings before prefect is imported

    directory = os.environ.get(SHARED_ENV)
    if os.environ.get("PYTEST_XDIST_WORKER") and directory:
        with _against(shared_server_url(Path(directory))):
            yield
        return
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=PREFECT_STARTUP_TIMEOUT):
        yield
