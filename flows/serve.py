"""The scheduled service in one process: Prefect's runner serving every deployment (no work pool, no
worker, no pull step), against a Prefect server this module starts on loopback or the
``PREFECT_API_URL`` it is given. ``acceptgate serve`` is its command line.

Deployments:
    nightly/nightly            the chain of acceptgate.pipelines.schedule.NIGHTLY_STAGES, on a cron (UTC)
    history-backfill/backfill  on demand, with parameters run_ids / since / until / arms

The served flows carry the operator's configuration themselves (``flows/served.py``): a run created
through the API sets only its per-run parameters. The server this module starts listens on 127.0.0.1
and requires HTTP basic authentication (Prefect's ``PREFECT_SERVER_API_AUTH_STRING``) with a secret
kept owner-only under PREFECT_HOME (``api_auth``); this process, its flow runs and a LocalCluster's
workers authenticate with it through ``PREFECT_API_AUTH_STRING``.
"""

from __future__ import annotations

from acceptgate.tasks import _prefect_env

import asyncio
import contextlib
import datetime
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from acceptgate._util import interrupt
from acceptgate.pipelines import schedule

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 4200
STARTUP_TIMEOUT = 120.0  # a cold server start takes 10-20 s, longer on a busy 2-core machine
AUTH_FILE = "acceptgate-api-auth"  # under PREFECT_HOME: the served API's user:password, owner-only
AUTH_USER = "acceptgate"


class ServeError(RuntimeError):
    """The Prefect API cannot be reached or started."""


def port_free(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def api_auth(home: Path) -> str:
    """The served API's basic-auth string (``acceptgate:<secret>``): made once per PREFECT_HOME in a file
    only its owner can read, then reused (the operator's UI login survives a restart)."""
    path = Path(home) / AUTH_FILE
    if path.is_file():
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        text = path.read_text().strip()
        if text.startswith(f"{AUTH_USER}:") and len(text) > len(AUTH_USER) + 16:
            return text
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{AUTH_FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    text = f"{AUTH_USER}:{secrets.token_urlsafe(32)}"
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    tmp.replace(path)
    return text


@contextlib.contextmanager
def local_server(port: int = DEFAULT_PORT, *, auth: str | None = None, log_path: Path | None = None,
                 timeout: float = STARTUP_TIMEOUT) -> Iterator[str]:
    """``prefect server start`` on loopback (its database under PREFECT_HOME) that answers only requests
    with the basic-auth string ``auth`` (a random one for this server when None) -- its health check
    aside; yields the API URL and stops the server (its whole process group) on exit. While it runs,
    ``PREFECT_API_AUTH_STRING`` in this process's environment is ``auth``: the clients here and in the
    processes started from here (flow runs, a LocalCluster's workers) present it."""
    auth = auth or f"{AUTH_USER}:{secrets.token_urlsafe(32)}"
    if not port_free(port):
        raise ServeError(f"port {port} on {LOOPBACK} is in use: pick another with --port, or point "
                         f"PREFECT_API_URL at the server already running there")
    home = Path(os.environ["PREFECT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    log_path = log_path or home / "server.log"
    api_url = f"http://{LOOPBACK}:{port}/api"
    env = {**os.environ, "PREFECT_SERVER_API_HOST": LOOPBACK, "PREFECT_SERVER_API_PORT": str(port),
           "PREFECT_SERVER_API_AUTH_STRING": auth, "PREFECT_API_AUTH_STRING": auth}
    env.pop("PREFECT_API_URL", None)  # the server itself must not talk to another API
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", LOOPBACK,
                                 "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    previous = os.environ.get("PREFECT_API_AUTH_STRING")
    os.environ["PREFECT_API_AUTH_STRING"] = auth
    try:
        deadline = time.monotonic() + timeout
        while not _prefect_env.api_healthy(api_url):
            if proc.poll() is not None:
                raise ServeError(f"prefect server exited with {proc.returncode} while starting; see {log_path}")
            if time.monotonic() > deadline:
                raise ServeError(f"prefect server did not answer on {api_url} within {timeout:.0f} s; see {log_path}")
            time.sleep(0.5)
        yield api_url
    finally:
        stop_process_group(proc)
        if previous is None:
            os.environ.pop("PREFECT_API_AUTH_STRING", None)
        else:
            os.environ["PREFECT_API_AUTH_STRING"] = previous


def stop_process_group(proc: subprocess.Popen, grace: float = 15.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 15)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait()


def served(nightly_fixed: dict[str, Any], nightly_per_run: dict[str, Any], backfill_fixed: dict[str, Any],
           cron: str = schedule.NIGHTLY_CRON) -> list[tuple[Any, dict[str, Any]]]:
    """(flow, deployment settings) of each served deployment: the flows carry the fixed configuration
    (``flows/served.py``); a deployment's stored parameters are only the per-run defaults."""
    from prefect.schedules import Cron

    from acceptgate.flows.served import served_backfill, served_nightly

    nightly = served_nightly(nightly_fixed, nightly_per_run)
    stages = ", ".join(s.name for s in schedule.NIGHTLY_STAGES)
    return [
        (nightly, {"name": "nightly", "schedules": [Cron(cron, timezone="UTC")],
                   "parameters": {k: v for k, v in nightly_per_run.items() if v is not None},
                   "description": f"Nightly chain ({stages}; stages not installed are skipped), then the analysts' "
                                  "snapshot. Fixed configuration; a run may set " + ", ".join(nightly_per_run)}),
        (served_backfill(backfill_fixed), {"name": "backfill",
                                           "description": "Backfill past runs: parameters run_ids, since, until, "
                                                          "arms; everything else is the service's configuration."}),
    ]


def serve(nightly_fixed: dict[str, Any], nightly_per_run: dict[str, Any], backfill_fixed: dict[str, Any], *,
          cron: str = schedule.NIGHTLY_CRON, api_url: str | None = None, port: int = DEFAULT_PORT,
          limit: int = 1) -> int | None:
    """Serve every deployment until SIGINT or SIGTERM, and return that signal's number. With no
    ``api_url`` (and no PREFECT_API_URL), start a local server first (loopback, authenticated with the
    secret in PREFECT_HOME's ``AUTH_FILE``) and stop it afterwards."""
    api_url = api_url or os.environ.get("PREFECT_API_URL")
    own_server = not api_url
    with contextlib.ExitStack() as stack:
        if api_url:
            if not _prefect_env.api_healthy(api_url, timeout=10):
                raise ServeError(f"no Prefect API answers at {api_url} (PREFECT_API_URL)")
            print(f"acceptgate serve: using the Prefect API at {api_url}", file=sys.stderr, flush=True)
        else:
            home = Path(os.environ["PREFECT_HOME"])
            print(f"acceptgate serve: starting a local Prefect server on {LOOPBACK}:{port} "
                  f"(PREFECT_HOME={home})", file=sys.stderr, flush=True)
            api_url = stack.enter_context(local_server(port, auth=api_auth(home)))
            print(f"acceptgate serve: Prefect API and UI at {api_url.removesuffix('/api')}, for whoever has the "
                  f"user:password in {home / AUTH_FILE}", file=sys.stderr, flush=True)
        os.environ["PREFECT_API_URL"] = api_url  # this process and the flow-run subprocesses it starts
        from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

        updates = {PREFECT_API_URL: api_url}
        if os.environ.get("PREFECT_API_AUTH_STRING"):
            updates[PREFECT_API_AUTH_STRING] = os.environ["PREFECT_API_AUTH_STRING"]
        with temporary_settings(updates):
            # a server started here stops with the service: no schedule to pause on it
            return asyncio.run(_serve_until_signalled(served(nightly_fixed, nightly_per_run, backfill_fixed, cron),
                                                      limit, cron, pause=not own_server))


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A stopped flow run records its attempt 'interrupted' before it exits (the warehouse may be busy, and the
# ledger waits up to its STOP_TIMEOUT for it); a process still there after this is killed.
FLOW_RUN_GRACE = 12.0


def flow_run_processes() -> list[int]:
    """The flow runs this process is running: Prefect's runner runs each served flow object in a child
    process it spawns (multiprocessing) in this process group. The Prefect server started here has a
    session of its own; Python's resource tracker is a helper, not a run."""
    group, helpers = os.getpgid(0), interrupt.resource_tracker()
    runs = []
    for pid in interrupt.children():
        try:
            if pid not in helpers and os.getpgid(pid) == group:
                runs.append(pid)
        except ProcessLookupError:
            continue
    return runs


def _reaped(pid: int) -> bool:
    """Gone and reaped: a zombie still takes a signal, which would start the runner's 3 s wait on it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def stop_flow_runs(signum: int, grace: float = FLOW_RUN_GRACE) -> list[int]:
    """Send ``signum`` to every flow run's process now (each marks its attempt 'interrupted' with the
    signal's name and its flow run cancelled, then exits) and wait until they are gone and reaped (by
    the runner, which waits on each); SIGKILL after ``grace`` seconds. Returns the processes signalled.
    Done before the runner's own stop, whose cancellation would check each process only every 3 s."""
    pids = flow_run_processes()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    deadline = time.monotonic() + grace
    while not all(_reaped(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = [p for p in pids if not _reaped(p)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0  # the runner reaps them; one it has not, its own stop kills again
    while not all(_reaped(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.02)
    return pids


def next_run(cron: str, after: datetime.datetime | None = None) -> datetime.datetime:
    """When the cron (UTC) next fires after ``after`` (default now)."""
    from cronsim import CronSim

    return next(CronSim(cron, after or datetime.datetime.now(datetime.timezone.utc)))


async def _announce_when_started(runner, names: str, cron: str) -> None:
    """One line once the runner polls for runs: the service is up (what a user, or a test, waits for),
    and when the nightly chain next runs."""
    while not runner.started:
        await asyncio.sleep(0.1)
    due = next_run(cron).strftime("%Y-%m-%d %H:%M UTC")
    print(f"acceptgate serve: serving {names}; next nightly run {due} (cron {cron!r}); Ctrl-C stops",
          file=sys.stderr, flush=True)


async def _serve_until_signalled(flows: list, limit: int, cron: str = schedule.NIGHTLY_CRON,
                                 pause: bool = True) -> int | None:
    """Prefect's runner (what ``prefect.serve`` runs) until a signal, which is taken by the event loop
    (``add_signal_handler``), never raised as an exception into whatever code the main thread runs: a
    KeyboardInterrupt raised there was once lost (where exactly was not pinned down: a task's exception
    nobody reads and a finalizer are candidates) and
    the service then went on serving, deaf to every later signal. A signal goes at once to the flow runs'
    processes (``stop_flow_runs``); once they are gone, the runner stops the way Prefect stops it on
    SIGTERM (``astop``: polling stopped; schedules paused on exit when ``pause``, i.e. on a server that
    outlives this service); before the runner has started it cancels this task. Returns the signal, or None."""
    from prefect.runner import Runner

    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    received: list[int] = []

    class _Runner(Runner):
        def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:  # Runner.start installs it for SIGTERM
            loop.call_soon_threadsafe(on_signal, signal.SIGTERM)

    runner = _Runner(pause_on_shutdown=pause, limit=limit)

    async def stop(signum: int) -> None:
        await asyncio.to_thread(stop_flow_runs, signum)  # the loop runs on: the runner reaps its processes
        await runner.astop()

    def on_signal(signum: int) -> None:
        if received:  # a repeated signal must not cut the stop short
            return
        received.append(signum)
        if runner.started and not runner.stopping:
            stopping = loop.create_task(stop(signum))
            stopping.add_done_callback(lambda t: t.cancelled() or t.exception() is None or main.cancel())
        else:
            main.cancel()
        # the stop is under way before anything is written: an error here is swallowed by the loop
        print(f"acceptgate serve: {signal.Signals(signum).name} received: stopping the schedules",
              file=sys.stderr, flush=True)

    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        for served_flow, settings in flows:
            # add_flow, not add_deployment: the runner then runs this flow object (with its fixed
            # configuration) in each flow run's process, never code the stored deployment names
            await runner.aadd_flow(served_flow, **settings)
        names = ", ".join(f"{f.name}/{settings['name']}" for f, settings in flows)
        announced = loop.create_task(_announce_when_started(runner, names, cron))
        try:
            await runner.start()
        finally:
            announced.cancel()
    except asyncio.CancelledError:
        if not received:
            raise
    finally:
        # The runner removes its directory under runner_storage/ on a full exit (not when stopped inside its
        # start), never runner_storage/ itself; rmdir leaves it when another runner of this TMPDIR uses it.
        own = getattr(runner, "_tmp_dir", None)
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(Path(tempfile.gettempdir()) / "runner_storage")
        for sig in STOP_SIGNALS:  # remove_signal_handler sets the defaults: back to the command's handlers,
            loop.remove_signal_handler(sig)  # or, once stopping, to ignoring (the server's stop is not cut short)
            signal.signal(sig, signal.SIG_IGN if received else previous[sig])
    return received[0] if received else None
