"""How long ``acceptgate serve`` takes to stop while a nightly run is working, and what it leaves.

    python3 bench/bench_serve_stop.py                       # SIGTERM and Ctrl-C, 20 s into a nightly run
    python3 bench/bench_serve_stop.py --after 5,40 --signals TERM

For each signal and delay: a fresh ``acceptgate serve`` (its own Prefect home and server, loopback, the
served API's credentials from its owner-only file) on three HumanEval+ tasks (``--gate-suites``,
``--certify-dataset``, the CodeT samples as the gate source), a nightly run created through the API, the
signal sent once the run has been RUNNING for ``--after`` seconds (SIGTERM to serve's pid, as a service
manager sends it; SIGINT to its process group, as Ctrl-C in a terminal does). Each row: the nightly stage
serve's output last named before the signal, the seconds from the signal to serve's exit, its exit code,
its last line, and what was left: processes of serve's tree still alive, the port still listening.

A speed target (a stop within 5 s, whatever stage runs) is a benchmark figure, not a unit test: the
tests check that a stop leaves nothing behind and says so in one line (tests/test_serve.py,
tests/test_signals.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))  # as the tests find it
HUMANEVALPLUS = SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
SAMPLES = SHARED / "samples" / "codet_codegen16B.jsonl.gz"
STARTUP = 300  # seconds: server start and deployment registration on a busy 2-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _tree(pid: int) -> list[int]:
    from acceptgate._util import interrupt

    return interrupt.descendants(pid)


def _alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def _client(home: Path) -> httpx.Client:
    user, _, password = (home / "acceptgate-api-auth").read_text().strip().partition(":")
    return httpx.Client(timeout=10, auth=httpx.BasicAuth(user, password))


def _wait_deployment(api: str, home: Path, proc: subprocess.Popen, log: Path) -> tuple[httpx.Client, str]:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"acceptgate serve exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            client = _client(home)
            r = client.get(f"{api}/deployments/name/nightly/nightly")
            if r.status_code == 200:
                return client, r.json()["id"]
        except (OSError, httpx.HTTPError):
            pass
        time.sleep(1)
    raise SystemExit(f"not serving after {STARTUP} s: {log.read_text()[-2000:]}")


def _wait_running(client: httpx.Client, api: str, run_id: str, timeout: float = 600) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.get(f"{api}/flow_runs/{run_id}")
        if r.status_code == 200 and r.json()["state_type"] == "RUNNING":
            return time.monotonic()
        time.sleep(0.5)
    raise SystemExit(f"flow run {run_id} not running after {timeout} s")


def _kind(pid: int) -> str:
    """What a process of serve's tree is, from its command line: the Prefect server, a flow run, a
    sandbox process, or other."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "prefect server start" in cmd or "uvicorn" in cmd:
        return "prefect server"
    if "prefect.engine" in cmd or "flow_run" in cmd or "prefect/engine" in cmd:
        return "flow run"
    if "acceptgate" in cmd and "serve" in cmd:
        return "serve"
    return "other"


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:90]
    except OSError:
        return "?"


def _watch(proc: subprocess.Popen, tree: list[int], sent: float, timeout: float = 120) -> dict[str, float]:
    """Until serve exits: when each process of its tree (as it was at the signal) ended, in seconds after
    the signal, by command line (the last of each) -- where the stop's time goes."""
    names = {pid: f"{_kind(pid)} {pid} (parent {_ppid(pid)}): {_cmd(pid)}" for pid in tree}
    gone: dict[str, float] = {}
    deadline = sent + timeout
    while time.monotonic() < deadline:
        now = round(time.monotonic() - sent, 2)
        for pid, name in names.items():
            if not _alive([pid]):
                gone.setdefault(name, now)
        if proc.poll() is not None:
            gone["serve"] = round(time.monotonic() - sent, 2)
            return dict(sorted(gone.items(), key=lambda kv: kv[1]))
        time.sleep(0.05)
    proc.wait(1)
    return gone


def _last_stage(text: str) -> str:
    stages = [line for line in text.splitlines() if "nightly: stage " in line]
    return stages[-1].split("nightly: ", 1)[1] if stages else "(before the first stage)"


def one_stop(sig: str, after: float, suites: Path, tmp: Path) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"stop-{sig}-", dir=tmp))
    home, port, log = root / "prefect", _free_port(), root / "serve.log"
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               GX_ANALYTICS_ENABLED="false", PREFECT_RUNNER_POLL_FREQUENCY="1")
    argv = [sys.executable, "-m", "acceptgate.cli", "serve", "--port", str(port), "--warehouse", str(root / "w.duckdb"),
            "--gate-source", f"codet:{SAMPLES}", "--gate-suites", str(suites), "--limit", "3",
            "--certify-dataset", str(HUMANEVALPLUS)]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        client, dep = _wait_deployment(api, home, proc, log)
        for _ in range(30):  # a 503 is the busy server's "try again" (its SQLite database locked)
            r = client.post(f"{api}/deployments/{dep}/create_flow_run", json={"parameters": {}})
            if r.status_code != 503:
                break
            time.sleep(2)
        r.raise_for_status()
        running = _wait_running(client, api, r.json()["id"])
        time.sleep(max(0.0, after - (time.monotonic() - running)))
        stage, tree, load = _last_stage(log.read_text()), _tree(proc.pid), os.getloadavg()[0]
        sent = time.monotonic()
        if sig == "INT":
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
        else:
            proc.send_signal(signal.SIGTERM)
        gone = _watch(proc, tree, sent)
        code = proc.returncode
        seconds = time.monotonic() - sent
        time.sleep(1)  # what is still there a second after serve's exit
        left = _alive(tree)
        lines = log.read_text().rstrip().splitlines()
        return {"signal": f"SIG{sig}", "after_running_s": after, "stage": stage, "seconds_to_exit": round(seconds, 2),
                "exit": code, "last_line": lines[-1] if lines else "", "processes_left": len(left),
                "port_listening": _listening(port), "load": round(load, 1), "gone_after_s": gone}
    finally:
        if proc.poll() is None:  # a failed row: serve still stops the server it started (its own session)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--signals", default="TERM,INT", help="TERM and/or INT (default both)")
    p.add_argument("--after", default="20", help="seconds into the nightly run's RUNNING state, comma-separated")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = p.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    with tempfile.TemporaryDirectory(prefix="ag-serve-stop-") as tmp_name:
        tmp = Path(tmp_name)
        suites = tmp / "suites"
        subprocess.run([sys.executable, "-m", "acceptgate.cli", "import", "humanevalplus", "--path", str(HUMANEVALPLUS),
                        "--limit", "3", "--out", str(suites)], check=True, stdout=subprocess.DEVNULL)
        for sig in args.signals.split(","):
            for after in (float(a) for a in args.after.split(",")):
                row = one_stop(sig.strip().upper(), after, suites, tmp)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\n| signal | sent after (s of the run) | stage then | seconds to exit | exit | processes left | port "
          "listening | load |\n|---|---:|---|---:|---:|---:|---|---:|")
    for r in rows:
        print(f"| {r['signal']} | {r['after_running_s']:g} | {r['stage']} | {r['seconds_to_exit']} | {r['exit']} | "
              f"{r['processes_left']} | {'yes' if r['port_listening'] else 'no'} | {r['load']} |")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench_serve_stop-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"date": started, "rows": rows}, indent=1))
    print(f"{started}; results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
