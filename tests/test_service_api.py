"""The gate service over real HTTP on loopback: a scripted assistant session, auth and client isolation,
limits, no hidden-suite value in any response, decisions landing in DuckDB, the committed OpenAPI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import duckdb
import pytest

from acceptgate.service.limits import Busy, ExecutionSlots, RateLimiter
from service_harness import LiveService
from test_openai_chat import ChatServer

# Numbers that appear only in the hidden suite: any trace of one in a response is a leak.
HIDDEN_LITERALS = ("918273645", "50607", "918324252", "77123", "40411", "36712")
TASK = {
    "task_id": "add-1",
    "statement": 'def add(a, b):\n    """Return a + b.\n    >>> add(1, 2)\n    3\n    """\n',
    "entry_point": "add",
    "visible": {"dialect": "python-call/1", "entry_point": "add",
                "cases": [{"args": "[1, 2]", "expected": "3"}, {"args": "[0, 0]", "expected": "0"}]},
    # three cases, one with a zero argument: with two, GT could not tell a program that answers honestly
    # only twice (the stateful attack), or one that breaks on zero arguments, from the reference, and the
    # task would fail its certification at registration
    "hidden": {"dialect": "python-call/1", "entry_point": "add",
               "cases": [{"args": "[918273645, 50607]", "expected": "918324252"},
                         {"args": "[-77123, 40411]", "expected": "-36712"},
                         {"args": "[0, 40411]", "expected": "40411"}]},
    # the gauge runs it on both suites at registration, and the task's certification builds its pool from it
    "reference": "def add(a, b):\n    return a + b\n",
}
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
VISIBLE_ONLY = "def add(a, b):\n    return {(1, 2): 3, (0, 0): 0}.get((a, b), -1)\n"  # passes V, fails GT

GRACEFUL = (0, -signal.SIGTERM, 143)  # uvicorn re-raises the signal it handled; 143: acceptgate's own SIGTERM stop
RESPONSES: list[str] = []  # every response body of the module's session, checked for hidden values


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    # The module's tests call faster than the default limit (120 a minute, burst 20) allows when the machine
    # is quiet: alice got 429s. The limit has tests of its own (limited_model_service, the keyless calls).
    svc = LiveService(tmp_path_factory.mktemp("service"),
                      extra=("--rate-per-minute", "100000", "--burst", "10000")).start()
    yield svc
    code = svc.stop()
    assert code in GRACEFUL, f"exit {code}: {(svc.root / 'server.log').read_text()}"


def call(svc, who, method, path, **kw):
    with svc.client(who) as http:
        r = http.request(method, path, **kw)
    RESPONSES.append(r.text)
    return r


def wait_published(svc, who, decision_id, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = call(svc, who, "GET", f"/v1/decisions/{decision_id}").json()
        if d["published"]:
            return d
        time.sleep(0.5)
    raise AssertionError(f"decision {decision_id} not published in {timeout} s: {(svc.root / 'server.log').read_text()}")


def snapshot(svc, sql, params=()):
    with duckdb.connect(str(svc.warehouse).replace(".duckdb", ".snapshot.duckdb"), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_assistant_session_refuse_then_deliver_lands_in_duckdb(service):
    r = call(service, "alice", "POST", "/v1/tasks", json=TASK)
    assert r.status_code == 201, r.text
    task = r.json()
    assert task["hidden_cases"] == 3 and "hidden" not in task and task["visible"]["cases"][0]["args"] == "(1, 2)"
    assert task["certification"].startswith("svc-")

    wrong = call(service, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": WRONG})
    assert wrong.status_code == 200, wrong.text
    wrong = wrong.json()
    assert wrong["decision"] == "refuse" and wrong["verdict"] == "fail"
    assert wrong["feedback"] == "AssertionError: args=(1, 2) got=-1 want=3"

    right = call(service, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": RIGHT}).json()
    assert right["decision"] == "deliver" and right["feedback"] is None and right["delivered_program"] == RIGHT

    for d in (wrong, right):
        wait_published(service, "alice", d["decision_id"])
    rows = dict(snapshot(service, "select run_id, decision from gate_decisions where run_id in (?, ?)",
                         [f"api-alice-{wrong['decision_id']}", f"api-alice-{right['decision_id']}"]))
    assert rows == {f"api-alice-{wrong['decision_id']}": "refused", f"api-alice-{right['decision_id']}": "delivered"}
    gt = snapshot(service, "select gt_verdict, false_delivery from deliveries where run_id = ?",
                  [f"api-alice-{right['decision_id']}"])
    assert gt == [("pass", False)]
    # what the assistant was told is on record under the harness's name, for the leak audit
    fb = snapshot(service, "select text from gate_messages where run_id = ? and author = 'harness' "
                           "and purpose = 'revision_feedback'", [f"api-alice-{wrong['decision_id']}"])
    assert fb == [(wrong["feedback"],)]
    assert snapshot(service, "select source from gate_runs where run_id = ?",
                    [f"api-alice-{wrong['decision_id']}"]) == [("api:alice",)]


def test_a_visible_only_program_is_delivered_and_scored_false_only_in_the_warehouse(service):
    call(service, "alice", "POST", "/v1/tasks", json=TASK)
    d = call(service, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": VISIBLE_ONLY}).json()
    assert d["decision"] == "deliver"
    assert not {"gt_verdict", "false_delivery", "hidden"} & set(d)
    wait_published(service, "alice", d["decision_id"])
    assert snapshot(service, "select gt_verdict, false_delivery, gt_first_failure from deliveries where run_id = ?",
                    [f"api-alice-{d['decision_id']}"]) == [("fail", True, 0)]


def test_registration_is_idempotent_conflicts_are_refused_and_bad_specs_name_the_field(service):
    assert call(service, "alice", "POST", "/v1/tasks", json=TASK).status_code in (200, 201)
    assert call(service, "alice", "POST", "/v1/tasks", json=TASK).status_code == 200
    other = {**TASK, "statement": "something else"}
    assert call(service, "alice", "POST", "/v1/tasks", json=other).status_code == 409
    smuggled = json.loads(json.dumps(TASK))
    smuggled["task_id"] = "smuggle"
    smuggled["visible"]["cases"][0]["args"] = "[__import__('os').getpid(), 2]"
    r = call(service, "alice", "POST", "/v1/tasks", json=smuggled)
    assert r.status_code == 422
    assert "visible" in r.json()["detail"] and "case 0" in r.json()["detail"] and "args" in r.json()["detail"]
    wrong_entry = {**TASK, "task_id": "wrong-entry", "entry_point": "plus"}
    r = call(service, "alice", "POST", "/v1/tasks", json=wrong_entry)
    assert r.status_code == 422 and "entry_point" in r.json()["detail"]


def test_registration_gauges_the_suites_before_use(service):
    """A task is registered only when its reference passes both suites and every known wrong sample is
    blocked (422 naming the task otherwise, nothing registered); "gauge": false opts out, and every
    decision on such a task is stored with gauge 'skipped' (a gauged task's with 'checked')."""
    assert call(service, "alice", "POST", "/v1/tasks", json=TASK).status_code in (200, 201)
    assert call(service, "alice", "GET", "/v1/tasks/add-1").json()["gauge"] == "checked"
    bare = {k: v for k, v in TASK.items() if k != "reference"} | {"task_id": "bare-1"}
    r = call(service, "alice", "POST", "/v1/tasks", json=bare)
    assert r.status_code == 422 and "task bare-1" in r.json()["detail"] and "reference" in r.json()["detail"]
    lying = {**TASK, "task_id": "lying-1", "reference": "def add(a, b):\n    return a * b\n"}
    r = call(service, "alice", "POST", "/v1/tasks", json=lying)
    assert r.status_code == 422, r.text
    assert "task lying-1" in r.json()["detail"] and "failed the gauge" in r.json()["detail"]
    # a suite too weak to block a known wrong sample: every case has b = 0, where a - b == a + b
    weak = json.loads(json.dumps(TASK)) | {"task_id": "weak-1"}
    weak["hidden"]["cases"] = [{"args": "[5, 0]", "expected": "5"}, {"args": "[-3, 0]", "expected": "-3"}]
    weak["wrong_samples"] = [{"label": "minus", "program": "def add(a, b):\n    return a - b\n"}]
    r = call(service, "alice", "POST", "/v1/tasks", json=weak)
    assert r.status_code == 422 and "task weak-1" in r.json()["detail"] and "hidden" in r.json()["detail"], r.text
    for refused in ("bare-1", "lying-1", "weak-1"):
        assert call(service, "alice", "GET", f"/v1/tasks/{refused}").status_code == 404
    opted_out = {**TASK, "task_id": "ungauged-1", "gauge": False}  # certified all the same (the reference)
    r = call(service, "alice", "POST", "/v1/tasks", json=opted_out)
    assert r.status_code == 201 and r.json()["gauge"] == "skipped" and r.json()["certification"].startswith("svc-")
    decided = {t: call(service, "alice", "POST", f"/v1/tasks/{t}/submissions", json={"program": RIGHT}).json()
               for t in ("add-1", "ungauged-1")}
    for task_id, d in decided.items():
        wait_published(service, "alice", d["decision_id"])
        assert snapshot(service, "select gauge from gate_runs where run_id = ?", [f"api-alice-{d['decision_id']}"]) \
            == [("checked" if task_id == "add-1" else "skipped",)]


def test_registration_certifies_the_task_and_decisions_carry_it(service):
    """A task is certified at registration (its pool from the reference, GT through the six gates); one
    whose hidden suite lets wrong programs through fails, 422 naming the task and the finding, and is not
    registered. A decision stores the certificate and V's FPR_h measured on the task."""
    weak = json.loads(json.dumps(TASK)) | {"task_id": "two-cases-1"}
    weak["hidden"]["cases"] = weak["hidden"]["cases"][:2]
    r = call(service, "alice", "POST", "/v1/tasks", json=weak)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "task two-cases-1 failed certification: GT fails replay" in detail and "gt-weak" in detail, detail
    assert call(service, "alice", "GET", "/v1/tasks/two-cases-1").status_code == 404
    no_reference = {k: v for k, v in TASK.items() if k != "reference"} | {"task_id": "no-ref-1", "gauge": False}
    r = call(service, "alice", "POST", "/v1/tasks", json=no_reference)
    assert r.status_code == 422 and "task no-ref-1" in r.json()["detail"] and "certify" in r.json()["detail"]
    task = call(service, "alice", "POST", "/v1/tasks", json=TASK).json()
    d = call(service, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": RIGHT}).json()
    wait_published(service, "alice", d["decision_id"])
    rows = snapshot(service, "select d.certification, d.v_fpr_h, r.certify from gate_decisions d join gate_runs r "
                             "using (run_id) where run_id = ?", [f"api-alice-{d['decision_id']}"])
    # V (the two docstring examples) accepts the special-casing and the stateful attacks: 2 of 6
    assert rows == [(task["certification"], pytest.approx(100 * 2 / 6), "checked")], rows


def test_an_uncertified_task_gets_no_decision_unless_the_service_runs_without_certification(tmp_path):
    """A service started with --no-certify registers without certifying and stores 'skipped' with every
    decision; the same journal under a certifying service refuses to decide on that task (422 naming it)."""
    loose = LiveService(tmp_path, extra=("--no-certify",)).start()
    try:
        r = call(loose, "alice", "POST", "/v1/tasks", json=TASK)
        assert r.status_code == 201 and r.json()["certification"] == "skipped"
        d = call(loose, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": RIGHT}).json()
        assert d["decision"] == "deliver"
        wait_published(loose, "alice", d["decision_id"])
        assert snapshot(loose, "select d.certification, d.v_fpr_h, r.certify from gate_decisions d join gate_runs r "
                               "using (run_id)") == [("skipped", None, "skipped")]
    finally:
        assert loose.stop() in GRACEFUL
    strict = LiveService(tmp_path, clients=("carol",))
    strict.keys = dict(loose.keys)
    strict.start()
    strict.keys.update(loose.keys)  # alice's key is still in the keys file
    try:
        r = call(strict, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": RIGHT})
        assert r.status_code == 422 and "task add-1 has no certification record" in r.json()["detail"], r.text
    finally:
        assert strict.stop() in GRACEFUL


def test_requests_without_a_valid_key_are_refused(service):
    routes = [("GET", "/v1/tasks"), ("POST", "/v1/tasks"), ("GET", "/v1/tasks/add-1"),
              ("POST", "/v1/tasks/add-1/submissions"), ("GET", "/v1/decisions"), ("GET", "/v1/decisions/x"),
              ("GET", "/v1/latency")]
    for method, path in routes:
        r = call(service, None, method, path, json={"program": RIGHT} if method == "POST" else None)
        assert r.status_code == 401, (method, path, r.text)
        assert r.headers["WWW-Authenticate"] == "Bearer"
    with service.client(None) as http:
        r = http.get("/v1/tasks", headers={"Authorization": "Bearer ag_not-a-key"})
    assert r.status_code == 401


def test_a_client_sees_only_its_own_tasks_and_decisions(service):
    call(service, "alice", "POST", "/v1/tasks", json=TASK)
    mine = call(service, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": RIGHT}).json()
    assert call(service, "bob", "GET", "/v1/tasks/add-1").status_code == 404
    assert call(service, "bob", "POST", "/v1/tasks/add-1/submissions", json={"program": RIGHT}).status_code == 404
    assert call(service, "bob", "GET", f"/v1/decisions/{mine['decision_id']}").status_code == 404
    assert call(service, "bob", "GET", "/v1/tasks").json() == {"tasks": []}
    assert call(service, "bob", "GET", "/v1/decisions").json() == {"decisions": []}
    # the same task id is bob's own, independent task
    bobs = {**TASK, "statement": "bob's add"}
    assert call(service, "bob", "POST", "/v1/tasks", json=bobs).status_code == 201
    assert call(service, "alice", "GET", "/v1/tasks/add-1").json()["statement"] == TASK["statement"]


def test_an_oversized_request_is_refused_before_parsing(service):
    r = call(service, "alice", "POST", "/v1/tasks/add-1/submissions",
             content=b'{"program": "' + b"x" * (9 << 20) + b'"}', headers={"Content-Type": "application/json"})
    assert r.status_code == 413


def test_latency_is_recorded_and_summarised_per_route(service):
    call(service, "alice", "POST", "/v1/tasks", json=TASK)
    d = call(service, "alice", "POST", "/v1/tasks/add-1/submissions", json={"program": RIGHT}).json()
    routes = {(r["route"], r["method"]): r for r in call(service, "alice", "GET", "/v1/latency").json()["routes"]}
    sub = routes[("/v1/tasks/{task_id}/submissions", "POST")]
    assert sub["calls"] >= 1 and 0 < sub["median_seconds"] <= sub["p95_seconds"] <= sub["max_seconds"]
    wait_published(service, "alice", d["decision_id"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = snapshot(service, "select calls, median_seconds, p95_seconds, max_seconds from api_latency "
                                 "where route = '/v1/tasks/{task_id}/submissions'")
        if rows:
            break
        time.sleep(0.5)
    assert rows and rows[0][0] >= 1 and rows[0][1] <= rows[0][2] <= rows[0][3]


def test_no_response_of_the_session_contains_a_hidden_value(service):
    # runs last in this module: every response above is in RESPONSES
    for who in ("alice", "bob"):
        for path in ("/v1/tasks", "/v1/decisions", "/v1/tasks/add-1"):
            call(service, who, "GET", path)
    assert len(RESPONSES) > 30
    leaked = [(lit, text[:200]) for text in RESPONSES for lit in HIDDEN_LITERALS if lit in text]
    assert leaked == []
    # control: the hidden values are really in the journal (the check above could not pass by accident)
    journal = (service.journal).read_bytes() + (service.root / "service.sqlite-wal").read_bytes()
    assert b"918273645" in journal


# -- limits, as units (no timing in HTTP) --------------------------------------------------------

def test_execution_slots_queue_then_refuse():
    slots = ExecutionSlots(slots=1, queue=1, wait_seconds=5)
    entered = threading.Event()
    release = threading.Event()

    def hold():
        with slots.slot():
            entered.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    entered.wait(5)
    queued = slots.slot()  # kept referenced: the slot is held until it is exited
    w = threading.Thread(target=queued.__enter__)
    w.start()
    deadline = time.monotonic() + 5
    while slots.state()["waiting"] != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert slots.state() == {"running": 1, "waiting": 1, "slots": 1, "queue": 1}
    with pytest.raises(Busy, match="queued"):  # the queue is full: refused at once
        with slots.slot():
            pass
    release.set()
    t.join()
    w.join(5)
    assert slots.state()["running"] == 1  # the queued request got the slot
    queued.__exit__(None, None, None)
    assert slots.state()["running"] == 0


def test_rate_limiter_refuses_past_the_burst_and_refills():
    rl = RateLimiter(per_minute=600, burst=2)  # 10 per second
    rl.take("a")
    rl.take("a")
    with pytest.raises(Busy) as exc:
        rl.take("a")
    assert 0 < exc.value.retry_after <= 0.1
    rl.take("b")  # another client has its own bucket
    time.sleep(0.15)
    rl.take("a")


def wrong_then_right():
    """A scripted model: the first reply to a conversation (known by its first message) is wrong, every
    later one right. CONFORM resends the same message, H-MIX keeps it first: both get wrong, then right."""
    seen: dict[str, int] = {}

    def script(body):
        first = body["messages"][0]["content"]
        seen[first] = seen.get(first, 0) + 1
        return {"content": f"```python\n{WRONG if seen[first] == 1 else RIGHT}```"}
    return script


@pytest.fixture(scope="module")
def limited_model_service(tmp_path_factory):
    with ChatServer(wrong_then_right()) as model:
        svc = LiveService(tmp_path_factory.mktemp("service2"), extra=(
            "--rate-per-minute", "1", "--burst", "4", "--model-url", model.base_url, "--model", "scripted-1",
            "--model-key-env", "NO_SUCH_KEY_VAR")).start()
        svc.model = model
        yield svc
        assert svc.stop() in GRACEFUL


def test_gated_generation_through_a_loopback_model_and_the_rate_limit(limited_model_service):
    svc = limited_model_service
    assert call(svc, "alice", "POST", "/v1/tasks", json=TASK).status_code == 201
    for arm in ("conform", "hmix"):  # wrong, then right: delivered on the second draw
        r = call(svc, "alice", "POST", "/v1/tasks/add-1/generations", json={"arm": arm})
        assert r.status_code == 200, r.text
        d = r.json()
        assert d["kind"] == "generation" and d["arm"] == arm and d["decision"] == "deliver"
        assert [a["verdict"] for a in d["attempts"]] == ["fail", "pass"], d
        assert d["delivered_program"].endswith(RIGHT)
    assert len(svc.model.requests) == 4
    sent = json.dumps([req["body"] for req in svc.model.requests])
    assert "add(1, 2)" in sent and not any(lit in sent for lit in HIDDEN_LITERALS)
    codes = [call(svc, "alice", "GET", "/v1/tasks").status_code for _ in range(4)]
    assert 429 in codes  # burst 4, three calls used above
    refused = call(svc, "alice", "GET", "/v1/tasks")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert call(svc, "bob", "GET", "/v1/tasks").status_code == 200  # bob has his own budget


def test_generation_without_a_model_endpoint_is_refused(service):
    call(service, "alice", "POST", "/v1/tasks", json=TASK)
    r = call(service, "alice", "POST", "/v1/tasks/add-1/generations", json={"arm": "conform"})
    assert r.status_code == 403 and "model endpoint" in r.json()["detail"]


def test_the_committed_openapi_document_is_the_served_one(service):
    from acceptgate.cli.serve_api_cmd import OPENAPI_FILE, openapi_document

    committed = json.loads(OPENAPI_FILE.read_text())
    assert committed == json.loads(json.dumps(openapi_document()))
    with service.client(None) as http:
        served = http.get("/openapi.json").json()
    assert served == committed
    assert "hidden" not in json.dumps(committed["components"]["schemas"]["TaskOut"]["properties"]).replace(
        "hidden_spec_hash", "").replace("hidden_cases", "")


def test_serve_api_refuses_bad_keys_and_paths_before_listening(tmp_path):
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "acceptgate.cli", "serve-api", *args], capture_output=True,
                              text=True, timeout=120)

    missing = run("--keys", str(tmp_path / "nope.json"), "--no-warehouse")
    assert missing.returncode == 2 and "nope.json" in missing.stderr
    bad = tmp_path / "keys.json"
    bad.write_text(json.dumps({"clients": [{"id": "alice", "key_sha256": "not-a-hash"}]}))
    out = run("--keys", str(bad), "--no-warehouse")
    assert out.returncode == 2 and "keys.json" in out.stderr and "client 0" in out.stderr
    assert "key_sha256" in out.stderr
    (tmp_path / "file").write_text("x")
    good = tmp_path / "good.json"
    assert run("new-key", "--client", "alice", "--keys", str(good)).returncode == 0
    out = run("--keys", str(good), "--journal", str(tmp_path / "file" / "j.sqlite"), "--no-warehouse")
    assert out.returncode == 2 and "--journal" in out.stderr and not (tmp_path / "file").is_dir()


def test_a_chunked_body_over_the_limit_is_413(service):
    """No Content-Length: the body streams in chunks; the service counts as it reads, stops buffering at
    the limit and answers 413 (it used to be a 400 from the body parser)."""
    def chunks():
        for _ in range(12):  # 12 MiB offered against the 8 MiB limit
            yield b"x" * (1 << 20)

    with service.client("alice") as http:
        r = http.post("/v1/tasks/add-1/submissions", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.request.headers.get("transfer-encoding") == "chunked" and "content-length" not in r.request.headers
    assert r.status_code == 413 and "over" in r.json()["detail"]


@pytest.mark.parametrize("body, said", [
    (b'{"program": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested 100001 levels deep"),
    (b'{"program": ' + b"7" * 5000 + b"}", "an integer of 5000 digits"),
], ids=["deep", "long-int"])
def test_a_json_bomb_body_is_400_naming_the_bound(service, body, said):
    r = call(service, "alice", "POST", "/v1/tasks/add-1/submissions", content=body,
             headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and said in r.json()["detail"]


def _keyless_codes(svc, forwarded_for: list[str]) -> list[int]:
    return [call(svc, None, "GET", "/v1/tasks", headers={"X-Forwarded-For": ip}).status_code for ip in forwarded_for]


def test_a_keyless_caller_cannot_pick_its_address_unless_its_proxy_is_configured(tmp_path):
    """uvicorn believes X-Forwarded-For from loopback by default: a caller then chose a new address per
    call and never met the keyless limit. Only proxies given with --forwarded-allow-ips are believed."""
    spoofed = [f"203.0.113.{i}" for i in range(1, 7)]
    svc = LiveService(tmp_path / "none", extra=("--rate-per-minute", "1", "--burst", "3")).start()
    try:
        assert _keyless_codes(svc, spoofed) == [401] * 3 + [429] * 3  # one bucket: the connection's address
    finally:
        assert svc.stop() in GRACEFUL
    # this test is the proxy, on loopback: each forwarded client has its own bucket, and one of them
    # still meets its limit
    proxied = LiveService(tmp_path / "proxy", extra=("--rate-per-minute", "1", "--burst", "3",
                                                     "--forwarded-allow-ips", "127.0.0.1")).start()
    try:
        assert _keyless_codes(proxied, spoofed) == [401] * 6
        assert _keyless_codes(proxied, ["198.51.100.7"] * 4) == [401] * 3 + [429]
    finally:
        assert proxied.stop() in GRACEFUL
    bad = subprocess.run([sys.executable, "-m", "acceptgate.cli", "serve-api", "--keys", str(tmp_path / "none" / "keys.json"),
                          "--forwarded-allow-ips", "proxy.example", "--journal", str(tmp_path / "j.sqlite"),
                          "--no-warehouse"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--forwarded-allow-ips" in bad.stderr, bad.stderr
    assert not (tmp_path / "j.sqlite").exists()


def test_calls_without_a_key_are_rate_limited_per_address_and_not_journalled(tmp_path):
    import sqlite3

    svc = LiveService(tmp_path, extra=("--rate-per-minute", "1", "--burst", "3")).start()
    try:
        codes = [call(svc, None, "GET", "/v1/tasks").status_code for _ in range(6)]
        assert codes[:3] == [401] * 3 and codes[3:] == [429] * 3, codes
        r = call(svc, None, "GET", "/v1/tasks")
        assert int(r.headers["Retry-After"]) >= 1
        assert call(svc, "alice", "GET", "/v1/tasks").status_code == 200  # a keyed client has its own bucket
        # the call is journalled after its response is sent: wait for alice's row (bounded), then compare
        deadline, rows = time.monotonic() + 60, []
        while not rows and time.monotonic() < deadline:
            with sqlite3.connect(svc.journal) as con:
                rows = con.execute("select client, route from calls").fetchall()
            time.sleep(0 if rows else 0.1)
        assert rows == [("alice", "/v1/tasks")], rows  # 7 anonymous calls, no row
    finally:
        assert svc.stop() in GRACEFUL


def test_a_learner_keeping_notes_is_never_scored_as_passing_the_hidden_suite(tmp_path):
    """serve-api scores every delivered program on the task's hidden suite: a program that learns its task
    from the fail-fast oracle and keeps notes in every kernel state it can reach (tests/attacks/channels/
    notes.py), submitted 50 times, is delivered each time (its visible case passes) and never scored as
    passing the hidden one: each scoring calls every case and judges once the runner is gone. The task has
    no reference (what the attack learns is the whole task), so the service runs with --no-certify."""
    import secrets
    from pathlib import Path

    from test_channels import LEARNED, RUNS

    key = secrets.randbelow(10**9)
    learner = (Path(__file__).parent / "attacks" / "channels" / "notes.py").read_text()
    task = {"task_id": f"learn-{key}", "statement": "def f(mode, key, case):\n    ...\n", "entry_point": "f",
            "visible": {"dialect": "python-call/1", "entry_point": "f",
                        "cases": [{"args": json.dumps(["learn", key, 100]), "expected": "False"}]},
            "hidden": {"dialect": "python-call/1", "entry_point": "f",
                       "cases": [{"args": json.dumps(["learn", key, i]), "expected": repr(want)}
                                 for i, want in enumerate(LEARNED)]},
            "gauge": False}
    service = LiveService(tmp_path, extra=("--no-certify", "--rate-per-minute", "100000", "--burst", "10000")).start()
    try:
        assert call(service, "alice", "POST", "/v1/tasks", json=task).status_code == 201
        decisions = []
        for n in range(RUNS):  # each submission a program of its own (a comment), so that none is a repeat
            d = call(service, "alice", "POST", f"/v1/tasks/learn-{key}/submissions",
                     json={"program": learner + f"\n# submission {n}\n"}).json()
            assert d["decision"] == "deliver", d
            decisions.append(d["decision_id"])
        for decision in decisions:
            wait_published(service, "alice", decision)
        runs = [f"api-alice-{d}" for d in decisions]
        verdicts = snapshot(service, f"select gt_verdict from deliveries where run_id in ({', '.join('?' * len(runs))})",
                            runs)
        assert len(verdicts) == RUNS and ("pass",) not in verdicts, verdicts

    finally:
        assert service.stop() in GRACEFUL
