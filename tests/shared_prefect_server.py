"""The one Prefect server a pytest-xdist session's workers share (see prefect_harness.py).

    python tests/shared_prefect_server.py DIR CONTROLLER_PID

Started by the first worker whose tests need a server; its state (API URL, this process's pid) goes to
DIR/server.json once the server answers. It stops the server and exits on SIGTERM/SIGINT (the xdist
controller sends SIGTERM at the end of the session, also after a Ctrl-C) or as soon as the controller
process is gone (killed outright): nothing outlives the session.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from acceptgate.tasks import _prefect_env  # noqa: E402  (offline settings; launch_server/stop_server)
from acceptgate._util.interrupt import pid_alive  # noqa: E402


TEMPLATE = "template-prefect.db"  # prefect_harness.seed_prefect_home reads it


def _save_template(database: Path, target: Path) -> None:
    """The database as the server left it after its migrations, before any test wrote to it: servers
    the tests start on a fresh home begin from a copy (a fresh start costs about 10 s more CPU)."""
    source = sqlite3.connect(database)
    try:
        copy = sqlite3.connect(target.with_suffix(".tmp"))
        source.backup(copy)
        copy.close()
    finally:
        source.close()
    target.with_suffix(".tmp").replace(target)


def main(directory: Path, controller: int) -> int:
    stop = []
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda s, _f: stop.append(s))
    env = dict(os.environ)
    env["PREFECT_HOME"] = str(directory / "home")  # its SQLite database is here, removed with DIR
    env.pop("PREFECT_API_URL", None)  # the server itself must not talk to another API
    timeout = float(env.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "900"))
    proc, url = _prefect_env.launch_server(env, timeout)
    try:
        _save_template(Path(env["PREFECT_HOME"]) / "prefect.db", directory / TEMPLATE)
        state = directory / "server.json.tmp"
        state.write_text(json.dumps({"url": url, "pid": os.getpid(), "server_pid": proc.pid}))
        state.replace(directory / "server.json")
        while not stop and proc.poll() is None and pid_alive(controller):
            time.sleep(0.5)
    finally:
        _prefect_env.stop_server(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2])))
