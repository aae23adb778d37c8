"""Where wrong samples first fail on a hidden suite, and how many calls each first-block size makes.

    python3 bench/bench_blocks.py                 # HumanEval+ and MBPP+, every task
    python3 bench/bench_blocks.py --tasks 40      # a quick look

A hidden suite's cases are called in blocks fixed before the run from their number (``executor.
block_plan``: a first block, then doubling), and an execution stops at the first block boundary after a
failing case. The first block's size is a trade: a wrong sample is called for the whole block holding its
first failing case (small blocks call fewer cases), while a block's one bit -- every answer so far passed
-- needs the whole block right (large blocks make that bit worth less). This measures the first half.

Samples: on HumanEval+, the CodeT CodeGen-16B completions (bench_samples.py's: the first 20 per task);
on MBPP+ (no public samples here), mutants of each task's reference -- one change each: a comparison,
an arithmetic or boolean operator, an integer constant off by one; the first few sites per task -- and
the gauge's generic wrong samples (constants, a raise, the echo of the first argument). Each runs once
on the local backend with fail-fast (a trusted measurement: its first failing case is what is wanted),
at bench_samples.py's HumanEval+ limits (1 s per case, 10 s per sample). A sample that passes is called
for every case whatever the plan; one that fails at case f is called for f + 1 cases with fail-fast,
for the end of the block holding f with blocks, for every case without either. One that fails before any
case (it does not load) is called for none.

Prints a markdown table per suite and writes ``bench/out/bench_blocks-<time>.json``.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

from bench_samples import HEP_LIMITS, HUMANEVALPLUS, SHARED, human_eval_problems, load_samples

from acceptgate.suites import render
from acceptgate.datasets.importers import humanevalplus, mbppplus
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.executor import block_plan, execute_many
from acceptgate.datasets.task import HIDDEN

REPO = Path(__file__).resolve().parents[1]
MBPPPLUS = SHARED / "mbppplus" / "MbppPlus-399.jsonl.gz"
FIRST_BLOCKS = (8, 16, 32, 64, 128, 256)
MUTANTS_PER_TASK = 6

_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
          ast.NotEq: ast.Eq, ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Mult,
          ast.Mod: ast.FloorDiv, ast.And: ast.Or, ast.Or: ast.And}


def mutants(source: str, limit: int = MUTANTS_PER_TASK) -> list[str]:
    """Up to ``limit`` programs that differ from ``source`` by one change, in source order of the sites."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sites += [("cmp", node, i) for i, op in enumerate(node.ops) if type(op) in _SWAPS]
        elif isinstance(node, (ast.BinOp, ast.BoolOp)) and type(node.op) in _SWAPS:
            sites.append(("op", node, None))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            sites.append(("int", node, None))
    sites.sort(key=lambda s: (getattr(s[1], "lineno", 0), getattr(s[1], "col_offset", 0)))
    out = []
    for kind, node, i in sites:
        if len(out) >= limit:
            break
        if kind == "cmp":
            old = node.ops[i]
            node.ops[i] = _SWAPS[type(old)]()
        elif kind == "op":
            old = node.op
            node.op = _SWAPS[type(old)]()
        else:
            old = node.value
            node.value = old + 1
        out.append(ast.unparse(tree))
        if kind == "cmp":
            node.ops[i] = old
        elif kind == "op":
            node.op = old
        else:
            node.value = old
    return out


def first_failures(imported, programs: list[tuple[str, str]], workers: int) -> list[dict]:
    """Per (task_id, program): cases in its hidden suite, its verdict and its first failing case (None:
    it passed; -1: it failed before any case)."""
    harnesses = {t.task_id: render.harness_for(t.suites[HIDDEN]) for t in imported.tasks if HIDDEN in t.suites}
    jobs = [(task_id, source) for task_id, source in programs if task_id in harnesses]
    with backends.create("local") as backend:
        results = execute_many([(harnesses[t], s) for t, s in jobs], backend, limits=HEP_LIMITS, fail_fast=True,
                               workers=workers)
    rows = []
    for (task_id, _), r in zip(jobs, results):
        bad = r.first_failure
        first = None if r.verdict == "pass" else (bad.index if bad is not None else -1)
        rows.append({"task_id": task_id, "cases": r.cases_total, "verdict": r.verdict, "first_failure": first})
    return rows


def called(row: dict, first_block: int | None) -> int:
    """Cases a plan calls for this sample: first_block None is every case, 0 is fail-fast."""
    n, f = row["cases"], row["first_failure"]
    if f is None:
        return n
    if f < 0:
        return 0
    if first_block == 0:
        return f + 1
    if first_block is None:
        return n
    end = 0
    for size in block_plan(n, first_block):
        end += size
        if f < end:
            return end
    return n


def summary(rows: list[dict]) -> dict:
    wrong = [r for r in rows if r["first_failure"] is not None and r["first_failure"] >= 0]
    firsts = sorted(r["first_failure"] for r in wrong)
    passing = [r for r in rows if r["first_failure"] is None]
    out = {
        "samples": len(rows), "passing": len(passing), "failing_in_a_case": len(wrong),
        "failing_before_any_case": sum(1 for r in rows if r["first_failure"] == -1),
        "cases_per_suite_median": statistics.median(r["cases"] for r in rows) if rows else 0,
        "first_failure": {"at_0": sum(f == 0 for f in firsts),
                          **{f"below_{b}": sum(f < b for f in firsts) for b in FIRST_BLOCKS},
                          "median": statistics.median(firsts) if firsts else None,
                          "p90": firsts[int(0.9 * (len(firsts) - 1))] if firsts else None,
                          "p99": firsts[int(0.99 * (len(firsts) - 1))] if firsts else None,
                          "max": firsts[-1] if firsts else None},
        "cases_called": {"fail-fast": sum(called(r, 0) for r in rows),
                         **{str(b): sum(called(r, b) for r in rows) for b in FIRST_BLOCKS},
                         "every case": sum(called(r, None) for r in rows)},
        "wrong_cases_called": {"fail-fast": sum(called(r, 0) for r in wrong),
                               **{str(b): sum(called(r, b) for r in wrong) for b in FIRST_BLOCKS},
                               "every case": sum(called(r, None) for r in wrong)},
        "boundaries_per_passing_sample": {str(b): (statistics.mean(len(block_plan(r["cases"], b)) - 1 for r in passing)
                                                   if passing else 0) for b in FIRST_BLOCKS},
    }
    return out


def table(name: str, s: dict) -> str:
    ff = s["first_failure"]
    n = s["failing_in_a_case"] or 1
    lines = [f"**{name}**: {s['samples']:,} samples, {s['passing']:,} pass, {s['failing_in_a_case']:,} fail at a "
             f"case, {s['failing_before_any_case']:,} before any; median suite {s['cases_per_suite_median']:,.0f} cases. "
             f"First failing case of the wrong ones: case 0 {ff['at_0'] / n:.0%}, "
             + ", ".join(f"< {b} {ff[f'below_{b}'] / n:.1%}" for b in FIRST_BLOCKS)
             + f"; median {ff['median']}, p90 {ff['p90']}, p99 {ff['p99']}, max {ff['max']}.", "",
             "| plan | cases called | of them by wrong samples | × fail-fast | boundaries per passing sample |",
             "|---|---:|---:|---:|---:|"]
    base = s["cases_called"]["fail-fast"] or 1
    for key in ["fail-fast", *map(str, FIRST_BLOCKS), "every case"]:
        label = {"fail-fast": "fail-fast (per case)", "every case": "every case"}.get(key, f"blocks from {key}")
        bounds = s["boundaries_per_passing_sample"].get(key)
        lines.append(f"| {label} | {s['cases_called'][key]:,} | {s['wrong_cases_called'][key]:,} | "
                     f"{s['cases_called'][key] / base:.2f} | {'' if bounds is None else f'{bounds:.1f}'} |")
    return "\n".join(lines)


def mbpp_programs(imported) -> list[tuple[str, str]]:
    out = []
    for t in imported.tasks:
        out += [(t.task_id, m) for m in mutants(t.reference)]
        out += [(t.task_id, w.source) for w in t.wrong_samples]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=None, help="first N tasks of each suite (default: all)")
    parser.add_argument("--samples-per-task", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = [os.getloadavg()[0]]
    found = {}
    with backends.create("local") as backend:
        hep = humanevalplus.load(HUMANEVALPLUS, backend, limit=args.tasks)
        mbpp = mbppplus.load(MBPPPLUS, backend, limit=args.tasks)
    samples = load_samples(human_eval_problems(), args.samples_per_task, args.tasks)
    print(f"HumanEval+: {len(samples)} samples; MBPP+: mutants ...", file=sys.stderr)
    found["HumanEval+ (CodeT samples)"] = first_failures(hep, [(s.task_id, s.program) for s in samples], args.workers)
    found["MBPP+ (mutants, generic wrong samples)"] = first_failures(mbpp, mbpp_programs(mbpp), args.workers)
    load.append(os.getloadavg()[0])
    summaries = {name: summary(rows) for name, rows in found.items()}
    md = "\n\n".join(table(name, s) for name, s in summaries.items())
    header = (f"`python3 bench/bench_blocks.py{' ' + ' '.join(argv or sys.argv[1:]) if (argv or sys.argv[1:]) else ''}`"
              f", {started}, load {load[0]:.1f}→{load[1]:.1f}")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_blocks-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"header": header, "summaries": summaries, "rows": found, "markdown": md}, indent=1))
    print(header + "\n\n" + md)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
