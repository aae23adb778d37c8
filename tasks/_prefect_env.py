"""Offline Prefect settings, applied by each entry point (the CLI before it imports a flow, the Dask
workers' preload, the test harness) before ``prefect`` is imported -- never as a side effect of an import.

No telemetry (Prefect's and Great Expectations'), a PREFECT_HOME of acceptgate's own (settings:
``prefect_home``, by default under acceptgate's cache directory), and Prefect's own logging at WARNING so the CLI's summary stays readable. A user's
explicit PREFECT_HOME / PREFECT_LOGGING_LEVEL / startup timeout win.

With no PREFECT_API_URL, the CLI calls ``start_temporary_server()`` before it imports a flow: the same
server Prefect's ephemeral mode would start (uvicorn with Prefect's app, no UI, database under
PREFECT_HOME), but in a session of its own, so that a Ctrl-C at the terminal reaches only acceptgate,
which records how the run ended before the server goes; it is stopped when acceptgate exits, also on
SIGTERM (Prefect's own ephemeral server was left running then).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable

from acceptgate._util.settings import settings

def apply() -> None:
    """Set the environment Prefect reads its settings from (idempotent; a user's explicit values win)."""
    os.environ["DO_NOT_TRACK"] = "1"
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    os.environ.setdefault("PREFECT_HOME", str(settings().prefect_home_path))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    # The temporary server can take longer than the 20 s default on a busy 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api_healthy(url: str, timeout: float = 2.0) -> bool:
    """Whether the Prefect API at ``url`` answers its health check (urllib: a plain-http poll builds no
    TLS context, which an httpx client does each time, 36 ms of CPU)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def launch_server(env: dict[str, str], timeout: float) -> tuple[subprocess.Popen, str]:
    """Prefect's server as its ephemeral mode runs it (uvicorn, Prefect's app, no UI), in a session of
    its own, database under env's PREFECT_HOME; returns the process and API URL once it answers."""
    app_dir = str(Path(importlib.util.find_spec("prefect").origin).parents[1])
    home = Path(env["PREFECT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for _ in range(3):  # another process may take the port between our look and the server's bind
        port = _free_port()
        url = f"http://127.0.0.1:{port}/api"
        with open(home / "temporary-server.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", app_dir, "--factory",
                 "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port),
                 "--log-level", "error", "--lifespan", "on"],
                env={**env, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"},
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            while proc.poll() is None and not api_healthy(url):
                if time.monotonic() - started > timeout:
                    raise RuntimeError(f"Prefect's temporary server did not answer within {timeout:.0f} s; see "
                                       f"{home / 'temporary-server.log'}")
                time.sleep(0.2)
        except BaseException:
            stop_server(proc)
            raise
        if proc.poll() is None:
            return proc, url
    raise RuntimeError(f"Prefect's temporary server exited with {proc.returncode}; see {home / 'temporary-server.log'}")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def start_temporary_server(say: Callable[[str], None] | None = None) -> str | None:
    """Start the temporary Prefect server unless PREFECT_API_URL is set (then None); it is stopped when
    this process exits, after everything else (``acceptgate._util.interrupt.keep_until_exit``). Call it
    before ``prefect`` is imported: its URL goes into the environment Prefect reads its settings from."""
    from acceptgate._util import interrupt
    apply()
    if os.environ.get("PREFECT_API_URL"):
        return None
    if "prefect" in sys.modules:
        raise RuntimeError("start_temporary_server() must run before prefect is imported")
    started = time.monotonic()
    if say:
        say("starting Prefect's temporary server (no PREFECT_API_URL; 10-30 s)...")
    timeout = float(os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"])
    # registered before it starts: a signal during the start stops it too
    holder: list[subprocess.Popen] = []
    interrupt.keep_until_exit(None, lambda: [stop_server(p) for p in holder])
    proc, url = launch_server(dict(os.environ), timeout)
    holder.append(proc)
    interrupt.spare(proc.pid)
    os.environ["PREFECT_API_URL"] = url
    if say:
        say(f"Prefect's temporary server is up at {url} ({time.monotonic() - started:.0f} s)")
    return url


def bridge_signals():
    """Prefect's flow engine swaps its own SIGTERM handler in while a flow runs (it raises
    TerminationSignal); make that handler also acceptgate's stop request, so that a SIGTERM during a
    flow stops the sandboxes at once and is reported like a SIGINT (``acceptgate._util.interrupt``).
    Returns that handler (None: this Prefect has no such hook)."""
    from prefect.exceptions import TerminationSignal
    from prefect.utilities import engine

    from acceptgate._util import interrupt
    from acceptgate._util.errors import Interrupted

    class FlowInterrupted(Interrupted, TerminationSignal):
        def __init__(self, signum: int) -> None:
            message = Interrupted(signum).args[0]
            Interrupted.__init__(self, signum, message)
            self.signal = signum  # TerminationSignal's attribute (its __init__ took the message)
            self.args = (message,)

    def handler(signum, frame) -> None:
        if interrupt.should_raise(signum):  # a repeated signal: the stop is under way already
            raise FlowInterrupted(signum)

    if getattr(engine, "_prefect_sigterm_handler", None) is None:
        return None
    engine._prefect_sigterm_handler = handler  # noqa: SLF001  (looked up at each flow start)
    return handler
