"""Seed 000, layer 4 ("the acceptance suite is data"), re-run on HumanEval / HumanEval+.

The seed's table (R451, 371 tasks): exec smuggling 368/371 before the fix, 0/371 after; residual
generic_gauged +2.72 pp; residual upper bound weak_oracle +4.35 pp; and a stateful suite variant that
dropped delivery by 75.20 pp while the gauge reported ok. Here, per task of the HumanEval+ file:

- **suites as code** (what the seed had before the fix): a harness that ``exec``s the task's own test
  code (HumanEval's ``check(candidate)``) in the candidate's interpreter, the way a suite bound into a
  commit as trusted code runs. It runs in a subprocess (``python3 -I``, a temp directory, a timeout); the
  programs are the dataset's reference, a ``return None`` wrong sample and the CodeT model samples.
  *Exec smuggling*: the test code gets one appended line, ``exec(...)`` redefining ``check`` to do
  nothing; counted when the wrong sample then passes. *Stateful suite* (R451's shape): the suite keeps
  a call counter and answers honestly for its first two calls -- the gauge's (reference must pass, the
  known wrong sample must fail) -- and rejects everything after; delivery = share of the candidates
  (reference + samples) the suite passes, honest vs stateful, with the gauge's verdict beside it.
- **suites as data** (this project): the same smuggling payload offered to a SuiteSpec in each place a
  case has (args, kwargs, expected) and as an extra key; counted when a spec is accepted. The stateful
  comparison: the candidates run twice on the task's GT suite (gauge time, delivery time) in fresh
  sandbox processes; the difference in delivery is the drop.
- **generic_gauged**: V (the docstring examples) is gauged with this project's generic wrong samples
  (``gauge.py``); a task-specific gauge adds the task's own wrong samples (the even-indexed CodeT samples
  that fail GT). On the odd-indexed wrong samples, the share V accepts on the tasks that pass the generic
  gauge minus the share on the tasks that pass the task-specific gauge: what a generic gauge leaves.
- **weak_oracle**: of the samples V accepts (delivered), the share that pass HumanEval's own tests (the
  weak oracle) but fail GT (HumanEval+ base + plus inputs): false deliveries a weak oracle cannot see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from acceptgate import suitespec
from acceptgate.errors import InvalidInput
from acceptgate.parallel import parallel_map
from acceptgate.experiments.result import ExperimentResult, Row
from acceptgate.render import harness_for
from acceptgate.sandbox.backend import Backend
from acceptgate.sandbox.executor import execute_many
from acceptgate.task import HIDDEN, VISIBLE

SEED = {"smuggling_code": "368 / 371", "smuggling_data": "0 / 371", "generic_gauged": "+2.72 pp",
        "weak_oracle": "+4.35 pp (upper bound)", "stateful_code": "−75.20 pp, gauge ok", "stateful_data": None}
SMUGGLE = "exec('def check(candidate):\\n    return None')"  # the smuggled line: check stops checking
WRONG_BODY = "    return None\n"
CODE_TIMEOUT = 120.0  # seconds per task for the suites-as-code harness (all its programs)
CALL_SECONDS = 5  # per check() call in that harness

# The suites-as-code harness: reads a job on stdin, prints one JSON line. The test code is exec'd in
# this interpreter next to the candidate -- the trust the seed's fix removed.
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
res = {}
res["plain"] = [verdict(load_suite(test), p, entry) for p in job["programs"]]
res["smuggled_wrong"] = verdict(load_suite(test + "\n" + job["smuggle"] + "\n"), job["wrong"], entry)
stateful = load_suite(test + job["stateful"])
res["gauge_reference"] = verdict(stateful, job["programs"][0], entry)
res["gauge_wrong"] = verdict(stateful, job["wrong"], entry)
res["stateful"] = [verdict(stateful, p, entry) for p in job["programs"]]
res["honest_wrong"] = verdict(load_suite(test), job["wrong"], entry)
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
    code: dict | None  # the code harness's answer (None: it timed out or crashed)
    code_error: str = ""
    data_smuggled: int = 0  # smuggling attempts a SuiteSpec accepted
    data_attempts: int = 0
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


def run_code_harness(entry_point: str, test: str, programs: list[str], wrong: str) -> tuple[dict | None, str]:
    job = {"entry_point": entry_point, "test": test, "programs": programs, "wrong": wrong, "smuggle": SMUGGLE,
           "stateful": STATEFUL, "call_seconds": CALL_SECONDS}
    with tempfile.TemporaryDirectory(prefix="acceptgate-layer4-") as tmp:
        try:
            proc = subprocess.run([sys.executable, "-I", "-c", CODE_HARNESS], input=json.dumps(job), text=True,
                                  capture_output=True, timeout=CODE_TIMEOUT, cwd=tmp,
                                  env={"PATH": os.environ.get("PATH", "")})
        except subprocess.TimeoutExpired:
            return None, f"timeout after {CODE_TIMEOUT:g} s"
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return None, f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
    return json.loads(lines[-1]), ""


def run(dataset: str, backend: Backend, *, samples: str | None = None, limit: int | None = None,
        per_task: int = 6, workers: int = 2, progress=None) -> ExperimentResult:
    from acceptgate import audit, gauge
    from acceptgate.importers.common import read_jsonl

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

    def code_job(r):
        programs = [r["prompt"] + r["canonical_solution"]] + drawn.get(r["task_id"], [])
        return r["task_id"], run_code_harness(r["entry_point"], r["test"], programs, r["prompt"] + WRONG_BODY)

    for tid, (answer, err) in parallel_map(code_job, rows, workers=max(1, workers)):
        outcomes[tid].code, outcomes[tid].code_error = answer, err
        if answer is not None:
            outcomes[tid].weak_samples = answer["plain"][1:]
    for r in rows:
        o = outcomes[r["task_id"]]
        o.data_smuggled, o.data_attempts = data_smuggling(r["entry_point"])
    # sandbox executions on this project's suites: candidates twice on GT, samples on V
    jobs, keys = [], []
    for r in rows:
        t = imported[r["task_id"]]
        cands = [t.reference] + drawn.get(r["task_id"], [])
        gt = harness_for(t.suites[HIDDEN])
        for rep in ("first", "second"):
            for i, c in enumerate(cands):
                jobs.append((gt, c))
                keys.append((r["task_id"], rep, i))
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
        else:
            o.v_samples = (o.v_samples or []) + [res.passed]
    with_v = [imported[tid] for tid in outcomes if VISIBLE in imported[tid].suites]
    gauged = {g.task_id: VISIBLE in g.usable_suites for g in gauge.check_many(with_v, backend)}
    for tid, o in outcomes.items():
        o.gt_samples = o.gt_first[1:]
        o.generic_gauge_ok = gauged.get(tid)
    return summarize(list(outcomes.values()), {"dataset": dataset, "samples": samples, "limit": limit,
                                              "per_task": per_task})


def _pp(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.2f} pp"


def summarize(outcomes: list[TaskOutcome], params: dict) -> ExperimentResult:
    """The seed's rows from per-task outcomes (pure: tests feed it constructed outcomes)."""
    res = ExperimentResult("seed000-layer4", params.get("dataset") or "outcomes", params)
    res.inputs = sorted(json.dumps({"task": o.task_id, "code": o.code, "gt1": o.gt_first, "gt2": o.gt_second,
                                    "v": o.v_samples, "weak": o.weak_samples, "gauge": o.generic_gauge_ok},
                                   sort_keys=True) for o in outcomes)
    ran = [o for o in outcomes if o.code is not None]
    smuggled = sum(o.code["smuggled_wrong"] and not o.code["honest_wrong"] for o in ran)
    res.rows.append(Row("exec_smuggling/code", "exec smuggling, suites as code (before the fix)",
                        SEED["smuggling_code"], smuggled / len(ran) if ran else None,
                        f"{smuggled} / {len(ran)}", "share", smuggled, len(ran),
                        {"harness_failed": {o.task_id: o.code_error for o in outcomes if o.code is None}}))
    data_hit = sum(o.data_smuggled > 0 for o in outcomes)
    res.rows.append(Row("exec_smuggling/data", "exec smuggling, suites as data (SuiteSpec)", SEED["smuggling_data"],
                        data_hit / len(outcomes) if outcomes else None, f"{data_hit} / {len(outcomes)}", "share",
                        data_hit, len(outcomes), {"attempts_per_task": outcomes[0].data_attempts if outcomes else 0}))
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
    # stateful suite: honest vs stateful delivery, with the gauge's verdict
    honest = sum(sum(o.code["plain"]) for o in ran)
    stateful = sum(sum(o.code["stateful"]) for o in ran)
    cands = sum(len(o.code["plain"]) for o in ran)
    gauge_ok = sum(o.code["gauge_reference"] and not o.code["gauge_wrong"] for o in ran)
    drop = (stateful - honest) / cands if cands else None
    res.rows.append(Row("stateful/code", "stateful suite variant, suites as code: delivery change",
                        SEED["stateful_code"], drop, f"{_pp(drop)}, gauge ok on {gauge_ok}/{len(ran)} tasks", "pp",
                        stateful - honest, cands, {"honest_delivered": honest, "stateful_delivered": stateful}))
    first = sum(sum(o.gt_first) for o in outcomes)
    second = sum(sum(o.gt_second) for o in outcomes)
    n = sum(len(o.gt_first) for o in outcomes)
    ddrop = (second - first) / n if n else None
    res.rows.append(Row("stateful/data", "same candidates, suites as data: delivery at delivery time - at gauge time",
                        SEED["stateful_data"], ddrop, _pp(ddrop), "pp", second - first, n,
                        {"gauge_time": first, "delivery_time": second}))
    res.notes.append(f"{len(outcomes)} tasks; suites-as-code harness ran on {len(ran)} "
                     f"({len(outcomes) - len(ran)} timed out or crashed; listed in the stored row's detail)")
    return res
