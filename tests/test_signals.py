"""SIGINT and SIGTERM stop every long command cleanly: exit 130 / 143, one line saying what was kept,
no traceback, no process left (sandboxes, the temporary Prefect server and its port), no temp dir left,
and the run's attempt marked 'interrupted' where the command records attempts.

Each case runs the real CLI in a subprocess (its own session, like a job a terminal starts) and sends
the signal at a point the command announces on stderr, or at a named pause point (the process stops
itself there, ``warehouse.pause_point``), never after a guessed delay. Most cases share one Prefect
server (the session's, PREFECT_API_URL); two start their own temporary server, the one a SIGTERM used to orphan.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import sandbox_cgroups_of
from prefect_harness import seed_prefect_home

REPO = Path(__file__).resolve().parents[1]
WAIT = 900.0  # generous: a loaded 2-core machine; a case waits for a line, never for a time


def _start_time(pid: int) -> str | None:
    """None once the process is gone (a zombie too: it ran to its end and waits only for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()
    return None if fields[0] == b"Z" else fields[19].decode()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"


def _tagged(tag: str) -> list[int]:
    """Processes whose environment carries the tag (every child that inherits the CLI's environment)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if tag.encode() in Path(f"/proc/{entry}/environ").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


class Cli:
    """The CLI in a subprocess; stderr collected line by line."""

    def __init__(self, argv: list[str], tmp_path: Path, api_url: str | None, env: dict | None = None) -> None:
        from acceptgate._util import interrupt
        self.interrupt = interrupt
        self.command = argv[0]
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir(exist_ok=True)
        self.tag = f"acceptgate-signal-test-{uuid.uuid4().hex}"
        full = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(self.tmp), "ACCEPTGATE_SIGNAL_TEST": self.tag,
                "PYTHONUNBUFFERED": "1", **(env or {})}
        full.pop("PREFECT_API_URL", None)
        if api_url:
            full["PREFECT_API_URL"] = api_url
        self.proc = subprocess.Popen([sys.executable, "-m", "acceptgate.cli", *argv], cwd=REPO, env=full,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.tree: dict[int, str | None] = {}

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if re.search(pattern, line):
                    return line
            if self.proc.poll() is not None:
                self.reader.join(5)
                pytest.fail(f"exited {self.proc.returncode} before {pattern!r}:\n" + "\n".join(self.lines[-30:]))
            time.sleep(0.05)
        pytest.fail(f"no line {pattern!r} within {WAIT} s:\n" + "\n".join(self.lines[-30:]))

    def wait_paused(self) -> None:
        """Until the process has stopped itself at its pause point."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_bytes()
            if stat[stat.rindex(b")") + 2:].split()[0] == b"T":
                return
            assert self.proc.poll() is None, "\n".join(self.lines[-30:])
            time.sleep(0.05)
        pytest.fail("never reached its pause point")

    def send(self, sig: int, *, group: bool = False, resume: bool = False) -> None:
        """The signal to the CLI (group: to its whole process group, as a terminal's Ctrl-C does)."""
        self.tree = {p: _start_time(p) for p in self.interrupt.descendants(self.proc.pid)}
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            os.kill(self.proc.pid, sig)
        if resume:
            os.kill(self.proc.pid, signal.SIGCONT)

    def stopped(self, sig: int) -> list[str]:
        """Wait for the exit; assert the code, the one line, no traceback, nothing left behind."""
        code = self.proc.wait(WAIT)
        self.reader.join(10)
        text = "\n".join(self.lines)
        assert code == 128 + sig, text
        name = signal.Signals(sig).name
        assert self.lines and self.lines[-1].startswith(f"acceptgate {self.command}: stopped by {name}: "), text
        assert "Traceback" not in text and "Error logging" not in text, text
        self.left_nothing()
        return self.lines

    def left_nothing(self) -> None:
        """No process of the tree seen at the signal, no child with the CLI's environment, no temp file."""
        left = [p for p, started in self.tree.items() if started is not None and _start_time(p) == started]
        assert not left, f"processes left: {[(p, _cmdline(p)) for p in left]}"
        assert not _tagged(self.tag), "a child that inherited the CLI's environment is still running"
        assert sorted(os.listdir(self.tmp)) == [], f"temp files left: {os.listdir(self.tmp)}"


class ReaderGoneCli(Cli):
    """The CLI whose output readers go away (``... 2>&1 | head -3``, a supervisor that closed its log
    pipe): ``close_pipes`` closes the read ends of its stdout and stderr pipes while it runs."""

    def __init__(self, *args, **kwargs) -> None:
        self.closing = threading.Event()
        super().__init__(*args, **kwargs)

    def _read(self) -> None:  # raw reads with a timeout (never the text wrapper's): stops when asked
        import select

        fd, pending = self.proc.stderr.fileno(), b""
        while not self.closing.is_set():
            if not select.select([fd], [], [], 0.1)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            *done, pending = (pending + chunk).split(b"\n")
            self.lines.extend(line.decode(errors="replace") for line in done)

    def close_pipes(self) -> None:
        self.closing.set()
        self.reader.join(10)
        self.proc.stderr.close()
        self.proc.stdout.close()

    def exited(self, code: int) -> None:
        """Wait for the exit; assert the code and that nothing was left behind."""
        assert self.proc.wait(WAIT) == code, "\n".join(self.lines[-30:])
        self.left_nothing()


def _attempts(path: Path) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("select flow, status, failed_stage from run_attempts order by started_at").fetchall()


def _port_closed(url: str) -> bool:
    host, port = re.search(r"//([\d.]+):(\d+)", url).groups()
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, int(port))) != 0


@pytest.fixture(scope="module")
def api(prefect_harness):
    """The session's Prefect server (one for all xdist workers) for the cases that do not test the
    temporary server itself."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


@pytest.fixture(scope="module")
def suites_3(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    result = humanevalplus.load(humanevalplus_path, local_backend, limit=3)
    return suitefiles.write_suites(result, tmp_path_factory.mktemp("signals") / "suites")


def _gate_argv(suites, samples, warehouse) -> list[str]:
    return ["gate", "--no-certify", "--arm", "conform", "--arm", "off", "--source", f"codet:{samples}", "--suites",
            str(suites),
            "--limit", "3", "--warehouse", str(warehouse)]


@pytest.fixture(scope="module")
def gated(tmp_path_factory, api, suites_3, codet_samples_path):
    """A warehouse with one published gate run (conform, off; 3 tasks): what stats and backfill read."""
    from acceptgate.cli import main

    path = tmp_path_factory.mktemp("gated") / "w.duckdb"
    # in this process (against the session's server, as ``api`` is): not a subject here, and a process of
    # its own would cost a Prefect and Great Expectations start (about 8 s of CPU)
    assert main(_gate_argv(suites_3, codet_samples_path, path)) == 0
    return path


def _copy_warehouse(source: Path, into: Path) -> Path:
    import shutil

    for f in source.parent.glob(f"{source.stem}.*"):
        shutil.copy(f, into / f.name)
    return into / source.name


def _snapshot_rows(path: Path, table: str) -> int:
    import duckdb

    with duckdb.connect(str(path.with_name(f"{path.stem}.snapshot.duckdb")), read_only=True) as con:
        return con.execute(f"select count(*) from {table}").fetchone()[0]


def test_audit_sigterm_mid_flow_stops_its_own_prefect_server(tmp_path):
    """The case that orphaned Prefect's server: SIGTERM to the CLI alone while the sandboxes run."""
    path = tmp_path / "w.duckdb"
    seed_prefect_home(Path(os.environ["PREFECT_HOME"]))  # the start without the migrations the shared server ran
    cli = Cli(["audit", "--limit", "3", "--warehouse", str(path)], tmp_path, api_url=None)
    url = re.search(r"up at (\S+)", cli.wait_for("temporary server is up")).group(1)
    cli.wait_for(r"gauge: \d+/")
    cli.send(signal.SIGTERM)
    cli.stopped(signal.SIGTERM)
    assert _port_closed(url)
    assert _attempts(path)[-1][:2] == ("audit", "interrupted")


def test_audit_ctrl_c_to_the_process_group_during_execute(tmp_path, api):
    path = tmp_path / "w.duckdb"
    cli = Cli(["audit", "--limit", "3", "--warehouse", str(path)], tmp_path, api,
              env={"ACCEPTGATE_TEST_PAUSE_AT": "execute:started"})
    cli.wait_paused()  # inside the stage (3 tasks' executions are done too fast to catch by time)
    cli.send(signal.SIGINT, group=True, resume=True)
    cli.stopped(signal.SIGINT)
    assert _attempts(path)[-1] == ("audit", "interrupted", "execute")
    assert not (tmp_path / "w.snapshot.duckdb").exists()  # nothing published


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_audit_stop_with_its_output_readers_gone(tmp_path, api, sig):
    """Its stdout and stderr readers gone while it works: the stop still ends the run (its attempt
    'interrupted', nothing published) and the process, 128 + signal, nothing left behind."""
    path = tmp_path / "w.duckdb"
    cli = ReaderGoneCli(["audit", "--limit", "3", "--warehouse", str(path)], tmp_path, api,
                        env={"ACCEPTGATE_TEST_PAUSE_AT": "execute:started"})
    cli.wait_paused()
    cli.close_pipes()
    cli.send(sig, resume=True)
    cli.exited(128 + sig)
    assert _attempts(path)[-1] == ("audit", "interrupted", "execute")
    assert not (tmp_path / "w.snapshot.duckdb").exists()


def test_audit_runs_to_its_end_with_its_output_readers_gone(tmp_path, api):
    """A line written once the readers are gone is dropped, not a crash: the run completes and publishes."""
    path = tmp_path / "w.duckdb"
    cli = ReaderGoneCli(["audit", "--limit", "3", "--warehouse", str(path)], tmp_path, api,
                        env={"ACCEPTGATE_TEST_PAUSE_AT": "execute:started"})
    cli.wait_paused()
    cli.close_pipes()
    os.kill(cli.proc.pid, signal.SIGCONT)
    cli.exited(0)
    assert _attempts(path)[-1][:2] == ("audit", "ok")
    assert (tmp_path / "w.snapshot.duckdb").exists()


def test_gate_sigint_while_arms_run(tmp_path, api, suites_3, codet_samples_path):
    path = tmp_path / "w.duckdb"
    cli = Cli(_gate_argv(suites_3, codet_samples_path, path), tmp_path, api)
    cli.wait_for(r"arm conform: gating")
    cli.send(signal.SIGINT)
    cli.stopped(signal.SIGINT)
    assert _attempts(path)[-1][:2] == ("gate", "interrupted")


# A library that catches the stop and fails on its way out (Prefect, when the signal lands while it
# creates a task run: "ValueError: Task run is not set") must not turn the stop into a crash.
_FAILS_WHILE_STOPPING = """
import os, signal, sys
import acceptgate.cli.stats_cmd as command
from acceptgate import cli
from acceptgate._util.errors import Interrupted

def run(args):
    try:
        os.kill(os.getpid(), signal.SIGINT)  # the real handler raises Interrupted here
        signal.pause()
    except Interrupted:
        raise ValueError("Task run is not set")

command.run = run
sys.exit(cli.main(["stats"]))
"""


def test_an_error_raised_while_a_stop_unwinds_is_the_stop(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _FAILS_WHILE_STOPPING], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == ("acceptgate stats: stopped by SIGINT: stopped before its run was recorded: "
                         "nothing was written to the warehouse"), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_gate_sigterm_inside_a_write_transaction_keeps_the_published_run(tmp_path, api, gated, suites_3,
                                                                          codet_samples_path):
    """A first run publishes (the ``gated`` warehouse, copied); a second attempt is stopped with its gate
    rows written but not committed: the snapshot still holds the first run's rows."""
    import duckdb

    path = _copy_warehouse(gated, tmp_path)
    argv = _gate_argv(suites_3, codet_samples_path, path)
    snapshot = tmp_path / "w.snapshot.duckdb"
    with duckdb.connect(str(snapshot), read_only=True) as con:
        before = con.execute("select count(*) from gate_decisions").fetchone()[0]
    cli = Cli(argv, tmp_path, api, env={"ACCEPTGATE_TEST_PAUSE_AT": "gate:written"})
    cli.wait_paused()
    cli.send(signal.SIGTERM, resume=True)
    cli.stopped(signal.SIGTERM)
    assert _attempts(path)[-1][:2] == ("gate", "interrupted")
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select count(*) from gate_decisions").fetchone()[0] == before > 0


def test_leak_audit_sigterm_while_loading(tmp_path, api, suites_3):
    cli = Cli(["leak-audit", "--suites", str(suites_3), "--warehouse", str(tmp_path / "w.duckdb")], tmp_path, api)
    cli.wait_for("loading the tasks' hidden material")
    cli.send(signal.SIGTERM)
    cli.stopped(signal.SIGTERM)


def test_certify_ctrl_c_while_prefect_server_starts(tmp_path, suites_3, humanevalplus_path):
    cli = Cli(["certify", "--suites", str(suites_3), "--dataset", str(humanevalplus_path), "--limit", "1",
               "--warehouse", str(tmp_path / "w.duckdb")], tmp_path, api_url=None)
    cli.wait_for("starting Prefect's temporary server")
    cli.send(signal.SIGINT, group=True)
    cli.stopped(signal.SIGINT)


def test_certify_sigterm_while_candidates_run(tmp_path, api, suites_3, humanevalplus_path):
    cli = Cli(["certify", "--suites", str(suites_3), "--dataset", str(humanevalplus_path), "--limit", "2",
               "--warehouse", str(tmp_path / "w.duckdb")], tmp_path, api)
    cli.wait_for(r"run each candidate once per suite: \d+/")
    cli.send(signal.SIGTERM)
    cli.stopped(signal.SIGTERM)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_api_stops_and_removes_its_staged_sandbox(tmp_path, sig):
    from acceptgate.service.config import new_key

    keys = tmp_path / "keys.json"
    new_key(str(keys), "c1")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cli = Cli(["serve-api", "--keys", str(keys), "--journal", str(tmp_path / "j.sqlite"), "--no-warehouse",
               "--port", str(port)], tmp_path, api_url=None)
    cli.wait_for("acceptgate serve-api: http://")
    deadline = time.monotonic() + WAIT
    while _port_closed(f"http://127.0.0.1:{port}") and time.monotonic() < deadline:
        time.sleep(0.1)
    cli.send(sig)
    cli.stopped(sig)
    assert _port_closed(f"http://127.0.0.1:{port}")


def test_serve_ctrl_c_while_serving_exits_130(tmp_path, api, suites_3, codet_samples_path):
    """The scheduled service stops like every other command (its own server's stop: tests/test_serve.py),
    also once its runner polls for runs (a SIGINT there used to be swallowed: the service went on serving,
    deaf to every later signal)."""
    import httpx

    cli = Cli(["serve", "--warehouse", str(tmp_path / "w.duckdb"), "--gate-source", f"codet:{codet_samples_path}",
               "--gate-suites", str(suites_3), "--limit", "1"], tmp_path, api,
              env={"PREFECT_HOME": str(tmp_path / "prefect-home")})
    cli.wait_for("acceptgate serve: serving nightly/nightly")  # the runner polls for runs
    assert httpx.get(f"{api}/deployments/name/nightly/nightly", timeout=10).status_code == 200
    cli.send(signal.SIGINT, group=True)
    lines = cli.stopped(signal.SIGINT)
    assert "the schedules stopped" in lines[-1]


def test_serve_sigterm_with_its_output_readers_gone(tmp_path, api, suites_3, codet_samples_path):
    """A service manager that closed its log pipe, then stops the service: the line serve writes as the
    signal arrives used to fail inside its event loop's signal callback, and the service went on
    serving, deaf to every later signal."""
    cli = ReaderGoneCli(["serve", "--warehouse", str(tmp_path / "w.duckdb"), "--gate-source",
                         f"codet:{codet_samples_path}", "--gate-suites", str(suites_3), "--limit", "1"], tmp_path, api,
                        env={"PREFECT_HOME": str(tmp_path / "prefect-home")})
    try:
        cli.wait_for("acceptgate serve: serving nightly/nightly")
        cli.close_pipes()
        cli.send(signal.SIGTERM)
        cli.exited(128 + signal.SIGTERM)
    finally:
        if cli.proc.poll() is None:
            os.killpg(cli.proc.pid, signal.SIGKILL)


def test_prefects_engine_installs_the_bridged_sigterm_handler():
    """At each flow start Prefect's engine installs the SIGTERM handler it finds in
    prefect.utilities.engine; ``bridge_signals`` puts acceptgate's stop there (a private hook: this fails
    when Prefect changes it), and under it the runner's cancellation is still acknowledged."""
    from prefect.utilities import engine

    from acceptgate.tasks import _prefect_env

    handler = _prefect_env.bridge_signals()
    assert handler is not None and engine._prefect_sigterm_handler is handler
    before = signal.getsignal(signal.SIGTERM)
    with engine.capture_sigterm():
        assert signal.getsignal(signal.SIGTERM) is handler
        assert engine.can_ack_control_intent()
    assert signal.getsignal(signal.SIGTERM) is before


def _api(method: str, url: str, **kwargs):
    """A call to the session's Prefect server; its 503 (SQLite busy on a loaded machine) is retried."""
    import httpx

    for _ in range(30):
        response = httpx.request(method, url, timeout=60, **kwargs)
        if response.status_code != 503:
            response.raise_for_status()
            return response
        time.sleep(2)
    response.raise_for_status()


def _stopped_child(pid: int) -> int | None:
    """A child of ``pid`` that has stopped itself at its pause point (the flow run's process), or None."""
    from acceptgate._util import interrupt

    for child in interrupt.children(pid):
        try:
            stat = Path(f"/proc/{child}/stat").read_bytes()
        except OSError:
            continue
        if stat[stat.rindex(b")") + 2:].split()[0] == b"T":
            return child
    return None


def _pending(pid: int, signals: tuple[int, ...]) -> bool:
    """One of ``signals`` is pending for the (stopped) process ``pid``: sent, not yet delivered."""
    fields = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":\t" in line)
    mask = int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)
    return any(mask & (1 << (s - 1)) for s in signals)


@pytest.mark.parametrize("sig, readers_gone", [(signal.SIGTERM, False), (signal.SIGINT, False),
                                               (signal.SIGTERM, True)])
def test_serve_stop_mid_nightly_stops_the_run_itself(tmp_path, api, suites_3, codet_samples_path, sig,
                                                     readers_gone):
    """A stop while a served nightly run works (SIGTERM to serve alone, as a service manager sends it;
    SIGINT to its group, as Ctrl-C does): serve signals the run's process itself, which records its
    attempt 'interrupted' with the signal's name and its flow run Cancelled with the same words, then
    exits before serve does. Prefect's runner, stopping the run in its own way, cancels it with a
    SIGTERM and its own message ('Runner is shutting down.'), after polling the process every 3 s.
    The same when the service manager has closed the pipes of serve's output (and so the run's) first."""
    import duckdb

    path = tmp_path / "w.duckdb"
    cli = (ReaderGoneCli if readers_gone else Cli)(
        ["serve", "--warehouse", str(path), "--gate-source", f"codet:{codet_samples_path}",
         "--gate-suites", str(suites_3), "--limit", "1"], tmp_path, api,
        env={"PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_RUNNER_POLL_FREQUENCY": "1",
             "ACCEPTGATE_TEST_PAUSE_AT": "execute:started"})  # the run's process stops itself there
    try:
        cli.wait_for("acceptgate serve: serving nightly/nightly")
        deployment = _api("get", f"{api}/deployments/name/nightly/nightly").json()["id"]
        run = _api("post", f"{api}/deployments/{deployment}/create_flow_run", json={"parameters": {}}).json()["id"]
        deadline = time.monotonic() + WAIT
        while (child := _stopped_child(cli.proc.pid)) is None:  # inside the audit stage's attempt
            assert cli.proc.poll() is None and time.monotonic() < deadline, "\n".join(cli.lines[-30:])
            time.sleep(0.1)
        if readers_gone:
            cli.close_pipes()
        cli.send(sig, group=sig == signal.SIGINT)
        # the run goes on only once the stop has reached it: serve's signal to it (or Ctrl-C's to the group)
        # is pending in the stopped process, so it arrives inside the execute stage whatever the load
        while not _pending(child, (signal.SIGTERM, signal.SIGINT)):
            assert time.monotonic() < deadline, "the stop never reached the run's process"
            time.sleep(0.01)
        os.kill(child, signal.SIGCONT)
        if readers_gone:
            cli.exited(128 + sig)
        else:
            lines = cli.stopped(sig)
    finally:
        if cli.proc.poll() is None:
            os.killpg(cli.proc.pid, signal.SIGKILL)
    name = signal.Signals(sig).name
    if not readers_gone:
        assert lines[-1].startswith(f"acceptgate serve: stopped by {name}: the schedules stopped"), lines[-1]
    assert not sandbox_cgroups_of([child]), "cgroups of the flow run's sandboxes left"
    with duckdb.connect(str(path), read_only=True) as con:
        attempts = con.execute("select flow, status, failed_stage, failure from run_attempts").fetchall()
    assert attempts == [("audit", "interrupted", "execute", f"interrupted by {name}")], "\n".join(cli.lines[-80:])
    state = _api("get", f"{api}/flow_runs/{run}").json()["state"]
    assert (state["type"], state["message"]) == ("CANCELLED", f"interrupted by {name}"), state


def test_stats_sigterm_inside_its_write_transaction(tmp_path, api, gated):
    path = _copy_warehouse(gated, tmp_path)
    cli = Cli(["stats", "--warehouse", str(path), "--resamples", "200"], tmp_path, api,
              env={"ACCEPTGATE_TEST_PAUSE_AT": "stats:written"})
    cli.wait_paused()
    cli.send(signal.SIGTERM, resume=True)
    cli.stopped(signal.SIGTERM)
    assert _attempts(path)[-1][:2] == ("stats", "interrupted")
    assert _snapshot_rows(path, "stats_runs") == 0  # nothing of it published
    assert _snapshot_rows(path, "gate_runs") == 1  # the gate run it read is kept


def test_backfill_sigterm_inside_its_write_transaction(tmp_path, api, gated, suites_3):
    import duckdb

    path = _copy_warehouse(gated, tmp_path)
    with duckdb.connect(str(path), read_only=True) as con:
        gate_run = con.execute("select run_id from gate_runs").fetchone()[0]
    cli = Cli(["backfill", "--suites", str(suites_3), "--run-id", gate_run, "--warehouse", str(path)], tmp_path, api,
              env={"ACCEPTGATE_TEST_PAUSE_AT": "leak:written"})
    cli.wait_paused()
    cli.send(signal.SIGTERM, resume=True)
    cli.stopped(signal.SIGTERM)
    assert _attempts(path)[-1][1] == "interrupted"
    assert _snapshot_rows(path, "leak_hits") == 0


def test_judge_ctrl_c_inside_its_write_transaction(tmp_path, api):
    demo = REPO / "data" / "demo" / "judge"
    path = tmp_path / "w.duckdb"
    cli = Cli(["judge", "--records", str(demo / "trajectories.jsonl"), "--cards", str(demo / "cards.jsonl"),
               "--memory", str(demo / "memory.jsonl"), "--embedder", "hashing", "--warehouse", str(path)],
              tmp_path, api, env={"ACCEPTGATE_TEST_PAUSE_AT": "judge:written"})
    cli.wait_paused()
    cli.send(signal.SIGINT, group=True, resume=True)
    cli.stopped(signal.SIGINT)
    assert _attempts(path)[-1][:2] == ("judge", "interrupted")
    assert not path.with_name("w.snapshot.duckdb").exists()  # nothing published


def _sandbox_running(pid: int) -> bool:
    """A sandbox runner among the process's descendants (a Dask worker's, here)."""
    from acceptgate._util import interrupt
    for child in interrupt.descendants(pid):
        try:
            if b"runner" in Path(f"/proc/{child}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def test_score_dask_ctrl_c_while_a_worker_runs_a_sample(tmp_path, api, suites_3):
    """Ctrl-C at the terminal reaches the Dask workers too (one process group); the CLI still stops
    them, their sandboxes and the cluster, and writes no --out."""
    import json

    from acceptgate.scoring import score
    task = sorted(score.load_suites(str(suites_3), "hidden")[0])[0]
    samples = tmp_path / "samples.jsonl"
    out = tmp_path / "scores.jsonl"
    samples.write_text(json.dumps({"task_id": task, "completion": "    while True:\n        pass\n"}) + "\n")
    cli = Cli(["score", "--suites", str(suites_3), "--samples", str(samples), "--suite", "hidden", "--out", str(out), "--no-gauge",
               "--dask", "1", "--wall-seconds", "300", "--warehouse", str(tmp_path / "w.duckdb")], tmp_path, api)
    deadline = time.monotonic() + WAIT
    while not _sandbox_running(cli.proc.pid):
        assert time.monotonic() < deadline and cli.proc.poll() is None, "\n".join(cli.lines[-30:])
        time.sleep(0.1)
    cli.send(signal.SIGINT, group=True)
    lines = cli.stopped(signal.SIGINT)
    assert not out.exists()
    _score_attempt_interrupted(lines, tmp_path / "w.duckdb")


def _score_attempt_interrupted(lines: list[str], path: Path) -> None:
    """A stopped score names its run's attempt, which the warehouse holds as 'interrupted', unpublished."""
    import duckdb

    assert "is marked 'interrupted'" in lines[-1], lines[-1]
    with duckdb.connect(str(path), read_only=True) as con:
        attempts = con.execute("select run_id, flow, status from run_attempts").fetchall()
        assert con.execute("select count(*) from score_results").fetchone()[0] == 0
    assert len(attempts) == 1 and attempts[0][1:] == ("score", "interrupted") and attempts[0][0] in lines[-1]


def test_score_ctrl_c_while_its_worker_processes_run_samples(tmp_path, api, suites_3):
    """A batch large enough for worker processes (executor.MIN_PROCESS_JOBS samples and more): Ctrl-C at
    the terminal stops the CLI, its worker processes and their sandboxes, writes no --out, and leaves
    no cgroup of a worker behind (each closes its backend at the parent's SIGTERM)."""
    import json

    from acceptgate._util import interrupt

    from acceptgate.scoring import score
    from acceptgate.sandbox import executor

    task = sorted(score.load_suites(str(suites_3), "hidden")[0])[0]
    samples = tmp_path / "samples.jsonl"
    out = tmp_path / "scores.jsonl"
    looper = json.dumps({"task_id": task, "completion": "    while True:\n        pass\n"})
    samples.write_text("\n".join([looper] * (executor.MIN_PROCESS_JOBS + 6)) + "\n")
    cli = Cli(["score", "--suites", str(suites_3), "--samples", str(samples), "--suite", "hidden", "--out", str(out),
               "--no-gauge", "--workers", "2", "--wall-seconds", "300", "--warehouse", str(tmp_path / "w.duckdb")],
              tmp_path, api)
    deadline = time.monotonic() + WAIT
    try:
        while True:  # until both worker processes (forks: the CLI's command line) run a sample each
            # Read again each time: right after Popen returns, the kernel may not have set the new
            # program's command line yet (/proc shows it empty, about 2 % of starts).
            own = _cmdline(cli.proc.pid)
            workers = [p for p in interrupt.descendants(cli.proc.pid) if own and _cmdline(p) == own]
            if len(workers) == 2 and all(_sandbox_running(p) for p in workers):
                break
            assert time.monotonic() < deadline and cli.proc.poll() is None, "\n".join(cli.lines[-30:])
            time.sleep(0.1)
    except BaseException:
        cli.proc.send_signal(signal.SIGINT)  # not left scoring 300 s loopers after a failure here
        cli.proc.wait(60)
        raise
    cli.send(signal.SIGINT, group=True)
    lines = cli.stopped(signal.SIGINT)
    assert not out.exists()
    _score_attempt_interrupted(lines, tmp_path / "w.duckdb")
    left = sandbox_cgroups_of(workers)
    assert not left, f"cgroups of the worker processes left: {left}"
