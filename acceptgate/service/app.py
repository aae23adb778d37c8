"""FastAPI routes of the gate service. Thin: validate, authorise, call ``decide``, record, answer.

Every error has one shape, ``{"detail": "..."}``. A client sees only its own tasks and decisions:
another client's task id answers 404, as an unknown one does. No response model has a field for the
hidden suite; the registration answer carries only its hash and case count.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from acceptgate import __version__

from acceptgate._util import boundedjson

from acceptgate.suites import suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits as SandboxLimits
from acceptgate.service.config import ServiceConfig, client_for
from acceptgate.service.decide import (
    GENERATE, SUBMIT, ServiceTask, SubmittedSource, certify_task, decide, gauge_task, task_from_json,
)
from acceptgate.service.journal import Journal, TaskRow
from acceptgate.service.limits import Busy, ExecutionSlots, RateLimiter
from acceptgate.service.publisher import Publisher

TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
MAX_TEXT = 200_000


class Error(BaseModel):
    detail: str


class SuiteSpecIn(BaseModel):
    """A SuiteSpec exactly as in a spec file: dialect, entry point, literal cases (strings)."""

    model_config = ConfigDict(extra="allow")  # unknown keys are refused by the SuiteSpec check, by name
    dialect: str = Field(max_length=200)
    entry_point: str = Field(max_length=200)
    cases: list[dict[str, Any]] = Field(max_length=100_000)


EXAMPLE_TASK = {
    "task_id": "add-1", "statement": "def add(a, b):\n    \"\"\"Return a + b.\n    >>> add(1, 2)\n    3\n    \"\"\"",
    "entry_point": "add", "reference": "def add(a, b):\n    return a + b\n",
    "visible": {"dialect": "python-call/1", "entry_point": "add", "cases": [{"args": "[1, 2]", "expected": "3"}]},
    "hidden": {"dialect": "python-call/1", "entry_point": "add",
               "cases": [{"args": "[-5, 5]", "expected": "0"}, {"args": "[10, 32]", "expected": "42"}]}}


class WrongSampleIn(BaseModel):
    """A program known to be wrong: every suite must block it (verdict other than pass)."""

    model_config = ConfigDict(extra="forbid")
    label: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    program: str = Field(min_length=1, max_length=MAX_TEXT)


class TaskIn(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [EXAMPLE_TASK]})
    task_id: str = Field(pattern=TASK_ID)
    statement: str = Field(min_length=1, max_length=MAX_TEXT)
    entry_point: str = Field(min_length=1, max_length=200)
    visible: SuiteSpecIn
    hidden: SuiteSpecIn
    reference: str | None = Field(default=None, max_length=MAX_TEXT, description=(
        "a complete program defining entry_point that passes both suites: the gauge runs it before the task "
        "is registered (required unless gauge is false); never returned"))
    wrong_samples: list[WrongSampleIn] = Field(default_factory=list, max_length=20, description=(
        "programs known to be wrong, each of which both suites must block (default: generic wrong samples "
        "written from the signature: return None, raise, constants, echo the first argument)"))
    gauge: bool = Field(default=True, description=(
        "false registers the task without the gauge check; every decision on it then records gauge 'skipped'"))


class SpecView(BaseModel):
    dialect: str
    entry_point: str
    cases: list[dict[str, str]]
    spec_hash: str


class TaskOut(BaseModel):
    task_id: str
    statement: str
    entry_point: str
    visible: SpecView
    hidden_spec_hash: str
    hidden_cases: int
    gauge: Literal["checked", "skipped"]
    certification: str = Field(description=(
        "the task's certificate id (its pool, built from the reference, passed the six V4V gates with its GT "
        "suite at registration), or 'skipped' (a service started with --no-certify)"))
    created_at: float


class TaskList(BaseModel):
    tasks: list[TaskOut]


class SubmissionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"program": "def add(a, b):\n    return a + b\n"}]})
    program: str = Field(min_length=1, max_length=MAX_TEXT)


class GenerationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arm: Literal["conform", "hmix"] = "conform"


class AttemptOut(BaseModel):
    attempt: int
    verdict: str
    cases_passed: int | None
    cases_total: int | None
    feedback: str | None
    candidate_sha256: str


class DecisionOut(BaseModel):
    decision_id: str
    task_id: str
    kind: Literal["submission", "generation"]
    arm: str
    decision: Literal["deliver", "refuse"]
    verdict: str
    cases_passed: int | None
    cases_total: int | None
    feedback: str | None
    stop_reason: str
    attempts: list[AttemptOut]
    delivered_program: str | None
    created_at: float
    latency_seconds: float
    published: bool


class DecisionList(BaseModel):
    decisions: list[DecisionOut]


class RouteLatency(BaseModel):
    route: str
    method: str
    calls: int
    median_seconds: float
    p95_seconds: float
    max_seconds: float


class LatencyOut(BaseModel):
    routes: list[RouteLatency]


class Health(BaseModel):
    status: Literal["ok"]
    version: str


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Error, "description": "the body is not JSON"},
    401: {"model": Error, "description": "no or unknown API key"},
    413: {"model": Error, "description": "request larger than the service accepts"},
    422: {"model": Error, "description": "invalid input; the detail names the field"},
    429: {"model": Error, "description": "rate limit; see Retry-After"},
}
NOT_FOUND = {404: {"model": Error, "description": "no such task or decision for this client"}}
BUSY = {503: {"model": Error, "description": "all execution slots and the queue are busy; see Retry-After"}}


def _spec_view(spec_json: str) -> SpecView:
    spec = suitespec.loads(spec_json)
    doc = json.loads(spec_json)
    return SpecView(dialect=doc["dialect"], entry_point=doc["entry_point"], cases=doc["cases"], spec_hash=spec.spec_hash)


def _task_out(row: TaskRow) -> TaskOut:
    hidden = suitespec.loads(row.hidden_json)
    cert = "skipped" if row.certification == "skipped" else json.loads(row.certification)["id"]
    return TaskOut(task_id=row.task_id, statement=row.statement, entry_point=row.entry_point,
                   visible=_spec_view(row.visible_json), hidden_spec_hash=row.hidden_hash,
                   hidden_cases=len(hidden.cases), gauge=row.gauge, certification=cert, created_at=row.created_at)


def _decision_out(d: dict[str, Any]) -> DecisionOut:
    record = json.loads(d["record_json"]) if "record_json" in d else d["record"]
    return DecisionOut(decision_id=d["decision_id"], task_id=d["task_id"], kind=d["kind"], arm=d["arm"],
                       decision=d["decision"], verdict=d["verdict"], cases_passed=d["cases_passed"],
                       cases_total=d["cases_total"], feedback=d["feedback"], stop_reason=record["stop_reason"],
                       attempts=[AttemptOut(**a) for a in record["attempts"]],
                       delivered_program=record["delivered_program"], created_at=d["created_at"],
                       latency_seconds=d["latency_seconds"], published=d.get("published_at") is not None)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def latency_summary(calls: list[dict[str, Any]]) -> list[RouteLatency]:
    by: dict[tuple[str, str], list[float]] = {}
    for c in calls:
        by.setdefault((c["route"], c["method"]), []).append(c["latency_seconds"])
    return [RouteLatency(route=r, method=m, calls=len(v), median_seconds=_percentile(v, 0.5),
                         p95_seconds=_percentile(v, 0.95), max_seconds=max(v)) for (r, m), v in sorted(by.items())]


class _BodyLimit:
    """Reads a request's body first, as it streams in (declared length or chunked alike), and refuses it
    with 413 as soon as it passes ``limit`` bytes; a JSON body beyond ``boundedjson``'s bounds (depth,
    a 4,300-digit number) is a 400 naming the bound. Only then does the app see it, replayed. Records
    each authenticated call's route, status and latency in the journal (a call without a valid key
    adds no row: an anonymous client must not be able to grow the journal)."""

    def __init__(self, app, limit: int, journal: Journal) -> None:
        self.app, self.limit, self.journal = app, limit, journal

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.monotonic()
        status = {"code": 500}

        async def send_status(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        body, problem = await self._read(scope, receive)
        if body is None:
            if problem:
                await JSONResponse({"detail": problem}, status_code=413)(scope, receive, send_status)
            return  # the client left
        if problem:
            await JSONResponse({"detail": problem}, status_code=400)(scope, receive, send_status)
        else:
            replayed = False

            async def replay():
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()  # after the body: wait for the disconnect, as the server would

            await self.app(scope, replay, send_status)
        client = (scope.get("state") or {}).get("client")
        if client is not None:
            path = getattr(scope.get("route"), "path", None) or "(unrouted)"
            self.journal.add_call(client, path, scope.get("method", "GET"), status["code"],
                                  time.monotonic() - started)

    async def _read(self, scope, receive) -> tuple[bytes | None, str]:
        """(body, "") read in full; (None, why) past the limit; (None, "") if the client left; (body,
        why) for a JSON body beyond the reader's bounds."""
        too_big = f"request body over {self.limit} bytes"
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return None, too_big
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, ""
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:  # stop reading here: the rest is never buffered
                return None, too_big
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        kind = dict(scope.get("headers") or []).get(b"content-type", b"").split(b";")[0].strip().lower()
        if body and (not kind or kind == b"application/json" or kind.endswith(b"+json")):  # what FastAPI parses
            try:
                boundedjson.loads(body, max_chars=self.limit)
            except boundedjson.JSONInputError as exc:
                return body, f"request body: {exc}"
        return body, ""


class _LazyBackend(backends.Backend):
    """The configured sandbox, started on first use (building the app, e.g. for its OpenAPI
    document, starts no sandbox)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._backend = None
        self._lock = threading.Lock()

    def _get(self) -> backends.Backend:
        with self._lock:
            if self._backend is None:
                self._backend = backends.create(self.name)
            return self._backend

    def spawn(self, limits):
        return self._get().spawn(limits)

    def isolation(self, limits):
        return self._get().isolation(limits)

    def close(self) -> None:
        with self._lock:
            if self._backend is not None:
                self._backend.close()
                self._backend = None


@dataclasses.dataclass
class _Service:
    """What the routes share: the configuration, the journal, the sandbox and the limits."""

    config: ServiceConfig
    journal: Journal
    sandbox: Any
    slots: ExecutionSlots
    rate: RateLimiter
    anonymous: RateLimiter  # calls without a valid key, per client address (they add no journal row)
    publisher: Publisher | None
    limits: SandboxLimits = dataclasses.field(default_factory=SandboxLimits)

    def own_task(self, task_id: str, who: str) -> TaskRow:
        row = self.journal.task(who, task_id)
        if row is None:
            raise HTTPException(404, f"no task {task_id!r} for this client")
        return row

    def service_task(self, row: TaskRow) -> ServiceTask:
        if row.certification == "skipped" and self.config.certify:  # registered before, or by a --no-certify service
            raise HTTPException(422, f"task {row.task_id} has no certification record: no decision is made on an "
                                     "uncertified task (register it again under a new id to certify it, or start the "
                                     "service with --no-certify)")
        cert = None if row.certification == "skipped" else json.loads(row.certification)
        return ServiceTask(row.client, task_from_json(row.task_id, row.statement, row.entry_point,
                                                      row.visible_json, row.hidden_json), gauge=row.gauge,
                           certification=cert["id"] if cert else "skipped",
                           v_fpr_h=cert.get("v_fpr_h") if cert else None)


def _service(config: ServiceConfig, backend) -> _Service:
    journal = Journal(config.journal)
    sandbox = backend if backend is not None else _LazyBackend(config.backend)
    slots = ExecutionSlots(config.limits.max_executions, config.limits.queue_size, config.limits.queue_wait_seconds)
    svc = _Service(config, journal, sandbox, slots, RateLimiter(config.limits.rate_per_minute, config.limits.burst),
                   RateLimiter(config.limits.rate_per_minute, config.limits.burst), None)
    if config.warehouse is not None:
        svc.publisher = Publisher(journal, config.warehouse, sandbox, interval=config.publish_seconds,
                                  limits=svc.limits, slots=slots)
    return svc


def create_app(config: ServiceConfig, *, backend=None) -> FastAPI:
    """The service as an ASGI app. ``backend``: a sandbox backend to use (default: create config.backend)."""
    svc = _service(config, backend)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if svc.publisher:
            svc.publisher.start()
        try:
            yield
        finally:
            if svc.publisher:
                svc.publisher.stop()
            if backend is None:
                svc.sandbox.close()
            svc.journal.close()

    app = FastAPI(title="acceptgate gate service", version=__version__, lifespan=lifespan,
                  description="Ask the acceptance gate to deliver or refuse a candidate. Hidden suites are "
                              "registered here and never returned.")
    app.state.journal, app.state.publisher, app.state.slots = svc.journal, svc.publisher, svc.slots
    app.add_middleware(_BodyLimit, limit=config.limits.max_request_bytes, journal=svc.journal)
    _add_error_handlers(app)
    client = _client_dependency(svc)
    _add_task_routes(app, svc, client)
    _add_decision_routes(app, svc, client)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        err = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        return JSONResponse({"detail": f"{where}: {err.get('msg')}" if where else str(err.get("msg"))},
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # one path may have several routes (GET and POST): Allow lists them all
            methods = sorted({m for r in app.routes if getattr(r, "methods", None)
                              and r.path_regex.match(request.url.path) for m in r.methods})
            headers["Allow"] = ", ".join(methods)
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=headers)

    @app.exception_handler(Busy)
    async def _busy(request: Request, exc: Busy):
        code = 429 if exc.reason.startswith("rate limit") else 503
        return JSONResponse({"detail": exc.reason}, status_code=code,
                            headers={"Retry-After": str(max(1, round(exc.retry_after)))})


def _client_dependency(svc: _Service):
    """The dependency that names the calling client from its key (401 and the anonymous limit without one)."""
    bearer = HTTPBearer(auto_error=False, description="the client's API key")

    def client(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> str:
        who = client_for(svc.config.clients, creds.credentials if creds else None)
        if who is None:
            svc.anonymous.take("address:" + (request.client.host if request.client else "unknown"))
            raise HTTPException(401, "a valid API key is required (Authorization: Bearer <key>)",
                                headers={"WWW-Authenticate": "Bearer"})
        request.state.client = who
        svc.rate.take(who)
        return who
    return client


_TASK_LINKS = {"links": {
    "GetTask": {"operationId": "get_task", "parameters": {"task_id": "$response.body#/task_id"}},
    "Submit": {"operationId": "submit", "parameters": {"task_id": "$response.body#/task_id"}},
    "Generate": {"operationId": "generate", "parameters": {"task_id": "$response.body#/task_id"}}}}
_DECISION_LINKS = {"links": {
    "GetDecision": {"operationId": "get_decision", "parameters": {"decision_id": "$response.body#/decision_id"}}}}


def _add_task_routes(app: FastAPI, svc: _Service, client) -> None:
    @app.get("/v1/health", response_model=Health, tags=["service"], operation_id="health")
    def health() -> Health:
        return Health(status="ok", version=__version__)

    @app.post("/v1/tasks", response_model=TaskOut, status_code=201, tags=["tasks"], operation_id="register_task",
              responses={**ERRORS, **BUSY, 201: _TASK_LINKS,
                         200: {"model": TaskOut, "description": "already registered, identical", **_TASK_LINKS},
                         409: {"model": Error, "description": "the task id is registered with other content"},
                         422: {"model": Error, "description": "invalid input, the suites failed the gauge, or the task "
                                                              "failed certification (the detail names the task and "
                                                              "why)"}})
    def register_task(body: TaskIn, who: str = Depends(client)):
        return _register(svc, body, who)

    @app.get("/v1/tasks", response_model=TaskList, tags=["tasks"], responses=ERRORS, operation_id="list_tasks")
    def list_tasks(who: str = Depends(client)) -> TaskList:
        return TaskList(tasks=[_task_out(r) for r in svc.journal.tasks(who)])

    @app.get("/v1/tasks/{task_id}", response_model=TaskOut, tags=["tasks"], responses={**ERRORS, **NOT_FOUND},
             operation_id="get_task")
    def get_task(task_id: str, who: str = Depends(client)) -> TaskOut:
        return _task_out(svc.own_task(task_id, who))


def _register(svc: _Service, body: TaskIn, who: str):
    """A task registered once, as sent; the same body again is 200, other content under its id 409."""
    try:
        visible = suitespec.from_dict(body.visible.model_dump(), source="visible")
        hidden = suitespec.from_dict(body.hidden.model_dump(), source="hidden")
    except InvalidInput as exc:
        raise HTTPException(422, str(exc)) from None
    for name, spec in (("visible", visible), ("hidden", hidden)):
        if spec.entry_point != body.entry_point:
            raise HTTPException(422, f"{name}.entry_point: {spec.entry_point!r} is not the task's "
                                     f"entry point {body.entry_point!r}")
    wrong_json = json.dumps([w.model_dump() for w in body.wrong_samples], sort_keys=True)
    row = TaskRow(client=who, task_id=body.task_id, statement=body.statement, entry_point=body.entry_point,
                  visible_json=visible.to_json(), hidden_json=hidden.to_json(),
                  visible_hash=visible.spec_hash, hidden_hash=hidden.spec_hash, created_at=time.time(),
                  reference=body.reference or "", wrong_json=wrong_json, gauge="checked" if body.gauge else "skipped")
    old = svc.journal.task(who, body.task_id)
    if old is not None:
        same = (old.statement, old.entry_point, old.visible_hash, old.hidden_hash, old.reference,
                old.wrong_json, old.gauge) == (row.statement, row.entry_point, row.visible_hash,
                                               row.hidden_hash, row.reference, row.wrong_json, row.gauge)
        if not same:
            raise HTTPException(409, f"task {body.task_id!r} is registered with other content")
        return JSONResponse(_task_out(old).model_dump(), status_code=200)
    if svc.journal.task_count(who) >= svc.config.limits.max_tasks_per_client:
        raise HTTPException(429, f"at most {svc.config.limits.max_tasks_per_client} tasks per client")
    task = task_from_json(row.task_id, row.statement, row.entry_point, row.visible_json, row.hidden_json,
                          row.reference, row.wrong_json)
    try:  # before use: suites that cannot tell right from wrong, or an uncertified task, are never registered
        if body.gauge:
            with svc.slots.slot():
                gauge_task(task, svc.sandbox, svc.limits)
        if svc.config.certify:
            with svc.slots.slot():
                row = dataclasses.replace(row, certification=json.dumps(
                    certify_task(task, svc.sandbox, svc.limits), sort_keys=True))
    except InvalidInput as exc:
        raise HTTPException(422, str(exc)) from None
    svc.journal.add_task(row)
    return _task_out(row)


def _add_decision_routes(app: FastAPI, svc: _Service, client) -> None:
    config, journal, sandbox, slots = svc.config, svc.journal, svc.sandbox, svc.slots

    @app.post("/v1/tasks/{task_id}/submissions", response_model=DecisionOut, tags=["decisions"],
              responses={**ERRORS, **NOT_FOUND, **BUSY, 200: _DECISION_LINKS}, operation_id="submit")
    def submit(task_id: str, body: SubmissionIn, who: str = Depends(client)) -> DecisionOut:
        st = svc.service_task(svc.own_task(task_id, who))
        with slots.slot():
            d = decide(st, SUBMIT, "conform", SubmittedSource(who, body.program), sandbox,
                       backend_name=config.backend, limits=svc.limits)
        journal.add_decision(d)
        return _decision_out(d)

    @app.post("/v1/tasks/{task_id}/generations", response_model=DecisionOut, tags=["decisions"],
              responses={**ERRORS, **NOT_FOUND, **BUSY, 200: _DECISION_LINKS,
                         403: {"model": Error, "description": "the service has no model endpoint configured"}},
              operation_id="generate")
    def generate(task_id: str, body: GenerationIn, who: str = Depends(client)) -> DecisionOut:
        st = svc.service_task(svc.own_task(task_id, who))
        if not (config.model_base_url and config.model_name):
            raise HTTPException(403, "gated generation is not enabled on this service: it was started without "
                                     "a model endpoint (serve-api --model-url URL --model NAME)")
        from acceptgate.sources.openai_chat import ChatConfig, ChatSource

        source = ChatSource(ChatConfig(base_url=config.model_base_url, model=config.model_name,
                                       api_key_env=config.model_key_env))
        try:
            with slots.slot():
                d = decide(st, GENERATE, body.arm, source, sandbox, backend_name=config.backend,
                           limits=svc.limits)
        finally:
            source.close()
        journal.add_decision(d)
        return _decision_out(d)

    @app.get("/v1/decisions", response_model=DecisionList, tags=["decisions"], responses=ERRORS,
             operation_id="list_decisions")
    def list_decisions(task_id: str | None = Query(default=None, pattern=TASK_ID),
                       limit: int = Query(default=100, ge=1, le=1000), who: str = Depends(client)) -> DecisionList:
        return DecisionList(decisions=[_decision_out(d) for d in journal.decisions(who, task_id, limit)])

    @app.get("/v1/decisions/{decision_id}", response_model=DecisionOut, tags=["decisions"],
             responses={**ERRORS, **NOT_FOUND}, operation_id="get_decision")
    def get_decision(decision_id: str, who: str = Depends(client)) -> DecisionOut:
        d = journal.decision(who, decision_id)
        if d is None:
            raise HTTPException(404, f"no decision {decision_id!r} for this client")
        return _decision_out(d)

    @app.get("/v1/latency", response_model=LatencyOut, tags=["service"], responses=ERRORS, operation_id="latency")
    def latency(who: str = Depends(client)) -> LatencyOut:
        return LatencyOut(routes=latency_summary(journal.calls(who)))
