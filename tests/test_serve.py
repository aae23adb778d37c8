"""The scheduled service, for real: ``acceptgate serve`` starts its own Prefect server on loopback and
serves the nightly and backfill deployments; runs of each are triggered with parameters and complete
and publish the snapshot. Then, against that same server, the work-pool path exactly as
docs/orchestration.md writes it: work pool, ``prefect deploy``, ``prefect deployment run``, a worker.
Finally SIGTERM stops the service and the server it started.

One server for the module (10-40 s cold on a busy machine); each flow run costs 15-60 s.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest
from prefect_harness import seed_prefect_home

pytestmark = pytest.mark.prefect

REPO = Path(__file__).resolve().parents[1]
STARTUP = 240  # seconds: server start plus deployment registration on a loaded machine
RUN_TIMEOUT = 300


class _RetryBusy(httpx.HTTPTransport):
    """A 503 is the busy server's "try again" (its SQLite database locked on a loaded machine): Prefect's
    own client retries it, so every call the tests make does too, whatever the method."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for _ in range(30):
            response = super().handle_request(request)
            if response.status_code != 503:
                return response
            response.close()
            time.sleep(2)
        return response


# One client for every call to the served API: the tests poll it each second, and a new client costs a
# TLS context (36 ms of CPU) even for plain http.
HTTP = httpx.Client(timeout=60, transport=_RetryBusy(verify=ssl.create_default_context()))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The operator's model key, in the service's environment: no run created through the API may send it.
OPERATOR_KEY = "sk-operator-secret-0123456789"


def _env(home: Path, api_url: str | None = None, auth: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    # the served runner looks for triggered runs every second (Prefect's default: 10 s)
    env.update(PYTHONPATH=str(REPO), PREFECT_HOME=str(home), DO_NOT_TRACK="1", PREFECT_RUNNER_POLL_FREQUENCY="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", GX_ANALYTICS_ENABLED="false", OPENAI_API_KEY=OPERATOR_KEY,
               PREFECT_API_LOG_RETRYABLE_ERRORS="true")
    if api_url:
        env["PREFECT_API_URL"] = api_url
    if auth:
        env["PREFECT_API_AUTH_STRING"] = auth
    return env


def _auth(home: Path) -> httpx.BasicAuth:
    """The served API's credentials, from the owner-only file ``acceptgate serve`` keeps in PREFECT_HOME."""
    from acceptgate.flows.serve import AUTH_FILE

    user, _, password = (home / AUTH_FILE).read_text().strip().partition(":")
    return httpx.BasicAuth(user, password)


def _deployment_id(api: str, name: str) -> str | None:
    flow, dep = name.split("/")
    r = HTTP.get(f"{api}/deployments/name/{flow}/{dep}")
    return r.json()["id"] if r.status_code == 200 else None


def _wait_terminal(api: str, flow_run_id: str, timeout: float = RUN_TIMEOUT) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = HTTP.get(f"{api}/flow_runs/{flow_run_id}").json()
        if run["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return run
        time.sleep(1)
    raise AssertionError(f"flow run {flow_run_id} not finished after {timeout} s")


def _trigger(api: str, name: str, parameters: dict) -> str:
    dep = _deployment_id(api, name)
    assert dep, f"deployment {name} not registered"
    r = HTTP.post(f"{api}/deployments/{dep}/create_flow_run", json={"parameters": parameters})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _artifact(api: str, flow_run_id: str) -> str:
    r = HTTP.post(f"{api}/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})
    texts = [a["data"] for a in r.json() if a["type"] == "markdown"]
    assert texts, "no markdown artifact on the flow run"
    return texts[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory, humanevalplus_path, codet_samples_path, local_backend):
    """``acceptgate serve`` as a real subprocess (no PREFECT_API_URL: it starts the server itself), on a
    suites directory of five HumanEval+ tasks as docs/orchestration.md writes it (--gate-suites, and
    --certify-dataset: the certify stage runs before the gates)."""
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.importers import humanevalplus

    root = tmp_path_factory.mktemp("serve")
    suites = suitefiles.write_suites(humanevalplus.load(humanevalplus_path, local_backend, limit=5), root / "suites")
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    seed_prefect_home(root / "prefect")  # the server serve starts skips the migrations the shared one ran
    log = open(root / "serve.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "acceptgate.cli", "serve", "--port", str(port), "--warehouse", str(root / "w.duckdb"),
         "--gate-source", f"codet:{codet_samples_path}", "--gate-suites", str(suites), "--limit", "5",
         "--certify-dataset", str(humanevalplus_path)],  # the gates decide only on tasks certified first
        env=_env(root / "prefect"), cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            assert proc.poll() is None, f"acceptgate serve exited {proc.returncode}: {(root / 'serve.log').read_text()}"
            try:
                HTTP.auth = _auth(root / "prefect")  # written before the server starts
                if _deployment_id(api, "nightly/nightly") and _deployment_id(api, "history-backfill/backfill"):
                    break
            except (httpx.HTTPError, OSError):
                pass
            assert time.monotonic() < deadline, f"not serving after {STARTUP} s: {(root / 'serve.log').read_text()}"
            time.sleep(1)
        yield api, root, proc, port
    finally:
        if proc.poll() is None:  # a test failed before the SIGTERM test: serve still stops its server
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def test_serve_runs_nightly_and_backfill_with_parameters(served):
    api, root, _, _ = served
    warehouse = root / "w.duckdb"
    # override one default parameter (limit 5 -> 2) and keep the rest (gate source, tasks, warehouse)
    nightly = _wait_terminal(api, _trigger(api, "nightly/nightly", {"limit": 2, "arms": ["conform", "off"]}))
    assert nightly["state_type"] == "COMPLETED", nightly["state"]
    snapshot = root / "w.snapshot.duckdb"
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select count(*), min(status) from runs").fetchone() == (1, "ok")
        assert con.execute("select task_limit from runs").fetchone() == (2,)
        gate_run, arms, count = con.execute("select run_id, arms, task_count from gate_runs").fetchone()
        assert (arms, count) == ("conform,off", 2)
        assert con.execute("select count(*) from deliveries").fetchone() == (4,)
        published_nightly = con.execute("select max(published_at) from snapshot_info").fetchone()[0]
    # on serve's terminal: when the next run is due, each stage as it starts and ends, no raw warning blocks
    said = (root / "serve.log").read_text()
    assert re.search(r"acceptgate serve: serving .*; next nightly run \d{4}-\d\d-\d\d \d\d:\d\d UTC", said), said[-3000:]
    assert "acceptgate nightly: stage audit: " in said and re.search(r"acceptgate nightly: stage gates: done in [\d.]+ s", said)
    assert "UserWarning" not in said and "warnings.warn(" not in said, said[-3000:]
    summary = _artifact(api, nightly["id"])
    assert "audit ok" in summary and "gates ok" in summary and "leak-audit ok" in summary
    assert "certify skipped" in summary or "certify ok" in summary  # skipped until flows/certify.py lands
    assert "## False delivery by arm" in summary and gate_run in summary

    # backfill: today's conform runs; the selection goes to the leak-audit backfill stage (when installed)
    backfill = _wait_terminal(api, _trigger(api, "history-backfill/backfill",
                                            {"since": str(dt.date.today()), "arms": ["conform"]}))
    assert backfill["state_type"] == "COMPLETED", backfill["state"]
    summary = _artifact(api, backfill["id"])
    assert f"runs selected: {gate_run}" in summary and "leak-backfill ok" in summary
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select max(published_at) from snapshot_info").fetchone()[0] > published_nightly

    # a bad request (no selection) fails the run with the reason, nothing else
    bad = _wait_terminal(api, _trigger(api, "history-backfill/backfill", {"arms": ["conform"]}))
    assert bad["state_type"] == "FAILED"
    assert warehouse.exists()


def _run(cmd: list[str], env, timeout=240, cwd=REPO) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(cmd)}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _deploy_as_documented(cmd: list[str], env, attempts: int = 3) -> None:
    """``prefect deploy`` run again, as the page says, when Prefect's local SQLite server answered 503 to
    every one of its client's retries: on a loaded machine a slow write loses the race against the served
    runner's polls (each a write; once a second here) again and again. Any other failure fails at once."""
    for attempt in range(1, attempts + 1):
        out = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=240)
        if out.returncode == 0:
            return
        busy = "503 Service Unavailable" in out.stdout + out.stderr
        assert busy and attempt < attempts, f"{' '.join(cmd)} (attempt {attempt})\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


def test_work_pool_path_as_documented(served, tmp_path):
    """docs/orchestration.md's commands, against the running server (the page says: prefect server
    start, then PREFECT_API_URL): the pool, the deploy, a run, one worker pass executes it."""
    api, root, _, _ = served
    page = (REPO / "docs" / "orchestration.md").read_text()
    commands = ["prefect work-pool create acceptgate-local --type process",
                "prefect --no-prompt deploy --prefect-file deployments/prefect.yaml --all",
                "prefect worker start --pool acceptgate-local"]
    for command in commands:
        assert command in page, command
    env = _env(root / "prefect-client", api, auth=(root / "prefect" / "acceptgate-api-auth").read_text().strip())
    prefect = [sys.executable, "-m", "prefect"]
    _run(prefect + commands[0].split()[1:], env)
    _deploy_as_documented(prefect + commands[1].split()[1:], env)
    for name in ("nightly/nightly-pool", "history-backfill/backfill-pool", "audit/audit-weekly-docker"):
        assert _deployment_id(api, name), name
    warehouse = tmp_path / "pool.duckdb"
    # the flow's one parameter is its request: a run that sets it gives the whole request
    request = json.dumps({"limit": 1, "warehouse": str(warehouse)})
    out = _run(prefect + ["deployment", "run", "nightly/nightly-pool", "--param", f"request={request}"], env)
    flow_run_id = re.search(r"UUID: ([0-9a-f-]{36})", out.stdout).group(1)
    # started elsewhere, the worker runs the flow in the directory the deploy recorded (no ACCEPTGATE_HOME):
    # the entry point flows/nightly.py is a path relative to it
    _run(prefect + commands[2].split()[1:] + ["--run-once"], env, timeout=RUN_TIMEOUT, cwd=tmp_path)
    run = _wait_terminal(api, flow_run_id, timeout=120)
    assert run["state_type"] == "COMPLETED", run["state"]
    with duckdb.connect(str(tmp_path / "pool.snapshot.duckdb"), read_only=True) as con:
        assert con.execute("select task_limit, status from runs").fetchone() == (1, "ok")


class Listener:
    """A foreign endpoint on loopback that records every connection and request made to it."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.requests: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self):
                size = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(f"{self.command} {self.path}\n{self.headers}\n"
                                      f"{self.rfile.read(size).decode(errors='replace')}")
                self.send_response(500)
                self.end_headers()

            do_GET = do_POST = do_PUT = _any

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _logs(api: str, flow_run_id: str) -> str:
    r = HTTP.post(f"{api}/logs/filter", json={"logs": {"flow_run_id": {"any_": [flow_run_id]}}})
    return "\n".join(entry["message"] for entry in r.json())


def test_runs_created_through_the_api_cannot_steer_the_service(served):
    """A client without the service's credentials is refused by the API; with them, a run that names a
    model endpoint of its own (the attack: gate_source openai, gate_base_url of a listener it runs) fails
    at once, as does one whose deployment's stored parameters were edited to do the same, or that names
    a Dask cluster or warehouse: the listener sees no connection and the operator's key goes nowhere."""
    api, root, _, _ = served
    with httpx.Client(timeout=10) as anonymous:  # no credentials
        assert anonymous.get(f"{api}/deployments/name/nightly/nightly").status_code == 401
        dep = _deployment_id(api, "nightly/nightly")
        assert anonymous.post(f"{api}/deployments/{dep}/create_flow_run", json={"parameters": {}}).status_code == 401
    original = HTTP.get(f"{api}/deployments/{dep}").json()["parameters"]
    listener = Listener()
    steer = {"gate_source": "openai", "gate_base_url": listener.url, "gate_model": "attacker-model",
             "gate_api_key_env": "OPENAI_API_KEY"}
    try:
        runs = [_trigger(api, "nightly/nightly", {**steer, "limit": 1}),
                _trigger(api, "nightly/nightly", {"dask": "tcp://127.0.0.1:9", "warehouse": str(root / "x.duckdb")}),
                _trigger(api, "history-backfill/backfill", {"since": str(dt.date.today()), "backend": "local-rlimits"})]
        # the deployment's stored parameters edited to the same effect, with its schema check off
        r = HTTP.patch(f"{api}/deployments/{dep}", json={"parameters": {**steer, "limit": 1},
                                                         "enforce_parameter_schema": False})
        assert r.status_code == 204, r.text
        runs.append(_trigger(api, "nightly/nightly", {}))
        for run_id, named in zip(runs, ("gate_base_url", "dask", "backend", "gate_base_url")):
            run = _wait_terminal(api, run_id)
            assert run["state_type"] == "FAILED", run["state"]
            message = run["state"]["message"] + _logs(api, run_id)
            assert "fixed when 'acceptgate serve' starts" in message and named in message, message
            assert OPERATOR_KEY not in message
        time.sleep(3)  # anything still on its way to the listener
        assert listener.requests == [], listener.requests
        assert not (root / "x.duckdb").exists()
    finally:
        listener.close()
        HTTP.patch(f"{api}/deployments/{dep}", json={"parameters": original, "enforce_parameter_schema": True})


def test_sigterm_stops_service_and_its_server(served):
    api, root, proc, port = served
    # the flow runs serve starts inherit it: Prefect's console lines (a stopped run's "Crash detected!")
    # stay in the runs' logs, not on serve's terminal
    from acceptgate._util import interrupt
    environs = []  # of the Prefect server serve started (/proc shows a child's environment as it began)
    for child in interrupt.descendants(proc.pid):
        try:
            environs.append(Path(f"/proc/{child}/environ").read_bytes().split(b"\0"))
        except OSError:  # ended meanwhile
            continue
    assert environs and all(b"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL=CRITICAL" in env for env in environs)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 143  # 128 + SIGTERM, like every other command
    last = (root / "serve.log").read_text().rstrip().splitlines()[-1]
    assert last.startswith("acceptgate serve: stopped by SIGTERM: the schedules stopped with the local Prefect server")
    from acceptgate.flows.serve import port_free

    deadline = time.monotonic() + 30
    while not port_free(port):
        assert time.monotonic() < deadline, "the Prefect server serve started is still listening"
        time.sleep(0.5)


def test_next_run_and_library_warnings_go_to_the_flow_log():
    import logging
    import warnings

    from acceptgate.flows import nightly, serve

    after = dt.datetime(2026, 12, 7, 5, 0, tzinfo=dt.timezone.utc)
    assert serve.next_run("30 2 * * *", after) == dt.datetime(2026, 12, 8, 2, 30, tzinfo=dt.timezone.utc)
    assert serve.next_run("*/15 * * * *", after) == dt.datetime(2026, 12, 7, 5, 15, tzinfo=dt.timezone.utc)
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    logger = logging.getLogger("test-nightly-warnings")
    logger.addHandler(Keep())
    with nightly.warnings_to_log(logger) as caught:
        warnings.warn("result_format configured at the Validator-level will not be persisted", UserWarning)
    assert len(caught) == 1 and seen and seen[0].startswith("UserWarning: result_format configured")


def test_a_served_run_cannot_turn_certification_off():
    """Whether gates decide on uncertified tasks, and how weak a V may be, are the operator's policy: a
    run of the served nightly that sets no_certify or max_fpr_attack fails before any stage, naming it."""
    from acceptgate._util.errors import InvalidInput
    from acceptgate.flows import served

    flow = served.served_nightly({}, {})
    for name, value in (("no_certify", True), ("max_fpr_attack", 100.0)):
        with pytest.raises(InvalidInput, match=f"{name} is fixed when 'acceptgate serve' starts"):
            flow.fn(**{name: value})
    assert "no_certify" not in served.NIGHTLY_PER_RUN and "max_fpr_attack" not in served.NIGHTLY_PER_RUN
