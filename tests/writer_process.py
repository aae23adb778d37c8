"""A flow run in a real child process, for the concurrency and crash tests: started in its own session
(so it and its sandbox processes can be killed as a group), talking to the session's Prefect test
server, and optionally stopped by the core at a named pause point (ACCEPTGATE_TEST_PAUSE_AT)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cli_env(**extra: str) -> dict[str, str]:
    """This checkout first on the path, the Prefect test server's API (no temporary server per process)."""
    from prefect.settings import PREFECT_API_URL

    env = dict(os.environ, PYTHONPATH=str(REPO), PREFECT_API_URL=str(PREFECT_API_URL.value()),
               DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", GX_ANALYTICS_ENABLED="false")
    env.pop("ACCEPTGATE_TEST_PAUSE_AT", None)
    env.update(extra)
    return env


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    out = open(log, "w")
    return subprocess.Popen([sys.executable, "-m", "acceptgate.cli", *args], env=env, cwd=REPO, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)


def state(pid: int) -> str:
    """The process state letter from /proc (R, S, T = stopped, Z, ...); '' when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


def wait_stopped(proc: subprocess.Popen, log: Path, timeout: float = 600) -> None:
    """Until the process stops itself at its pause point; fails if it exits instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the writer exited ({proc.returncode}) before its pause point:\n"
                                 f"{log.read_text()[-3000:]}")
        if state(proc.pid) == "T":
            return
        time.sleep(0.1)
    kill_group(proc)
    raise AssertionError(f"the writer did not reach its pause point in {timeout} s:\n{log.read_text()[-3000:]}")


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the writer and every process of its session (a stopped process dies of SIGKILL too)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def run(args: list[str], env: dict[str, str], log: Path, timeout: float = 900) -> int:
    proc = start(args, env, log)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise AssertionError(f"the writer did not finish in {timeout} s:\n{log.read_text()[-3000:]}")
