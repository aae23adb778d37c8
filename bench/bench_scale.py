"""How the cost of gate and certify grows: seconds per task and peak memory at 10, 40 and 164 HumanEval+
tasks (and MBPP+ at 399: certify only -- the data has no MBPP+ model samples to gate), single-process
and on a Dask LocalCluster of 1 and of 2 worker processes (``--dask 1`` / ``--dask 2``).

    python3 bench/bench_scale.py --tasks 10 --stages certify          # a smoke run (minutes)
    python3 bench/bench_scale.py --tasks 40 --stages certify          # the issue's 2-vs-1 workers point
    python3 bench/bench_scale.py --tasks 10,40,164 --mbppplus         # the whole curve (hours; a quiet machine)

The comparison is per core: every configuration runs ``--slots`` sandbox slots (default 1) per process
that executes -- the single process, or each Dask worker (single-threaded, one shard at a time). So
"single" is one core's worth of sandboxes, "dask1" the same on one worker (what the cluster costs:
its start, shipping shards and rows, a Prefect task run per shard), and "dask2" two such workers (on a
2-core machine: both cores). A single process can also use both cores itself (``--slots 2``); that
is not what "2 workers vs 1" measures, which is how the work spreads over workers.

Each measurement is the real command in a subprocess (``acceptgate gate|certify ... --no-gauge --quiet``
into a fresh warehouse), all against one Prefect server the bench starts, so no run pays a server start;
a Dask run pays its LocalCluster's start. Peak RSS: the largest sum of proportional resident memory
(PSS: a page shared by n processes counts 1/n in each, so the sandbox view every process maps and
locks counts once) over the command's whole process tree (client, Dask workers, sandboxes), sampled
every 0.2 s; the warehouse's
size per task and per row (the DuckDB file after the run). Every Dask run's result rows are compared
with the single-process run's (times aside): "rows equal" in the output. A configuration that runs
longer than ``--timeout`` is stopped (its whole process group) and recorded as such.

Writes bench/out/scale.json (one object per run, appended across invocations; git-ignored), the plot
docs/scale.png (committed; the latest run of every point in scale.json), prints a markdown table for
the README and the on-paper estimate of a 10,000-task x 100-samples nightly from the measured costs.

Settings: gate arms conform and off, 5 draws per task, CodeT CodeGen-16B samples; certify with the
default settings (k = 3, 3 re-run samples, 10 samples per task, the built-in verifiers); tasks per shard
= ceil(tasks / 40) unless ``--shard-size`` (one task per shard up to 40 tasks: certify starts the largest
first, so the last one to finish is a small one, and one-task shards gave 1.48x against 1.21x for
two-task shards at 40 tasks, 2026-12-02; a shard's own cost is a sandbox backend start, 0.6 s at load 15-19,
and a Prefect task run). "Largest" is the task's time in its last certification in the warehouse
(``pipelines.certify.task_seconds``), else a guess from its suites: so each configuration after the
first of a point starts from a copy of the warehouse the previous one left, as a nightly's second
night does (``history`` in scale.json; ``--cold`` gives every run a fresh warehouse). A 1-worker
run's time does not depend on the order. Report the load average beside every figure: on a shared
machine they move with it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # shard_rows: the row comparison the cluster tests use
SHARED = Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))
HEPLUS = SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
MBPPPLUS = SHARED / "mbppplus" / "MbppPlus-399.jsonl.gz"
CODET = SHARED / "samples" / "codet_codegen16B.jsonl.gz"
OUT = REPO / "bench" / "out"
PLOT = REPO / "docs" / "scale.png"
SHARDS = 40  # about this many shards per Dask run: small ones even out the workers' shares
SAMPLE_SECONDS = 2.0  # between two memory samples of the process tree
GATE_DRAWS = 5  # --per-task of the gate runs: model samples per task
CERTIFY_SAMPLES = 10  # certify's default --samples-per-task
# seconds per task, 1 slot, when scale.json has no earlier run of a configuration: only for the ETA
# (the 2026-12-01 smoke on this 2-core machine at load 9-20)
GUESS_SECONDS_PER_TASK = {"gate": 15.0, "certify": 40.0}


def _pss(pid: int) -> int:
    """A process's proportional set size in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def peak_tree_rss(proc: subprocess.Popen, stop: threading.Event, peak: list[int]) -> None:
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        total = 0
        try:
            for p in [root, *root.children(recursive=True)]:
                total += _pss(p.pid)
        except psutil.Error:
            break
        peak[0] = max(peak[0], total)
        # Every 2 s: a read of smaps_rollup walks the process's page tables, and each harness process maps
        # the ~1 GB pinned sandbox view; at 0.2 s this sampler took about a third of a core (7.4 min of CPU
        # in a 20-minute run, 2026-12-02), which the 2-worker runs, using both cores, paid.
        stop.wait(SAMPLE_SECONDS)


def run_command(argv: list[str], env: dict, timeout: float) -> tuple[float, int, str, bool]:
    """(seconds, peak RSS of the tree, output, finished): a run past ``timeout`` is stopped, group and all."""
    stop, peak = threading.Event(), [0]
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "acceptgate.cli", *argv], cwd=REPO, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watcher = threading.Thread(target=peak_tree_rss, args=(proc, stop, peak), daemon=True)
    watcher.start()
    finished = True
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        finished = False
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    seconds = time.monotonic() - started
    stop.set()
    watcher.join()
    if finished and proc.returncode != 0:
        raise SystemExit(f"acceptgate {' '.join(argv)} exited {proc.returncode}:\n{out[-3000:]}")
    return seconds, peak[0], out, finished


def stage_argv(stage: str, suites: str, dataset: Path, tasks: int, warehouse: Path) -> list[str]:
    if stage == "gate":
        # the gate's own cost: the certification precondition (a lookup) is skipped like the gauge
        return ["gate", "--arm", "conform,off", "--source", f"codet:{CODET}", "--suites", suites, "--limit", str(tasks),
                "--per-task", str(GATE_DRAWS), "--warehouse", str(warehouse), "--no-gauge", "--no-certify", "--quiet"]
    return ["certify", "--suites", suites, "--dataset", str(dataset), "--samples", str(CODET), "--limit", str(tasks),
            "--warehouse", str(warehouse), "--no-gauge", "--quiet"]


def mode_workers(mode: str) -> int:
    """``single`` -> 0; ``daskN`` -> N worker processes."""
    if mode == "single":
        return 0
    if mode.startswith("dask") and mode[4:].isdigit() and int(mode[4:]) >= 1:
        return int(mode[4:])
    raise SystemExit(f"--modes: {mode!r} is neither 'single' nor 'daskN' (N >= 1)")


def runner_name(workers: int, slots: int) -> str:
    return (f"dask {workers} worker(s) x {slots} slot(s)" if workers else f"single process x {slots} slot(s)")


def history(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def eta_seconds(past: list[dict], stage: str, dataset: str, workers: int, slots: int, tasks: int) -> float:
    """From the latest earlier run of this stage and runner (any task count), else a rough guess."""
    same = [r for r in past if r["stage"] == stage and r["dataset"] == dataset and r.get("workers") == workers
            and r.get("slots", 1) == slots and r.get("finished", True)]
    if same:
        return same[-1]["seconds_per_task"] * tasks
    return GUESS_SECONDS_PER_TASK[stage] * tasks / max(1, min(workers or 1, 2) * slots) + (30 if workers else 0)


def _spin(seconds: float) -> int:
    """Pure-Python work for ``seconds`` of wall time; returns the loops done."""
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(10_000):
            n += 1
    return n


def core_scaling(seconds: float = 5.0) -> float:
    """How much more CPU-bound work 2 processes do than 1 in the same wall time: the ceiling of any
    2-workers-vs-1 speed-up here. About 2.0 on two independent cores; about 1.2-1.3 when the two
    vCPUs are hyperthreads of one physical core (common for a 2-vCPU VM); less on a busy machine."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [0.2, 0.2])  # both processes up before timing
        one = pool.apply(_spin, (seconds,))
        two = sum(pool.map(_spin, [seconds, seconds], chunksize=1))
    return two / one


def row_counts(warehouse: Path, stage: str) -> int:
    from shard_rows import TABLES
    from acceptgate.store import warehouse as wh

    with wh.connect(warehouse, read_only=True) as con:
        return sum(con.execute(f"select count(*) from {t}").fetchone()[0] for t in TABLES[stage])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="10,40,164", help="HumanEval+ task counts (comma-separated)")
    ap.add_argument("--mbppplus", action="store_true", help="also certify MBPP+ at 399 tasks")
    ap.add_argument("--no-mbppplus", action="store_true", help=argparse.SUPPRESS)  # the default now
    ap.add_argument("--stages", default="gate,certify", help="gate, certify or both (comma-separated)")
    ap.add_argument("--modes", default="single,dask1,dask2",
                    help="single and/or daskN (a LocalCluster of N worker processes), comma-separated")
    ap.add_argument("--slots", type=int, default=1,
                    help="sandbox slots per executing process (the single process, each Dask worker); default 1")
    ap.add_argument("--shard-size", type=int, default=None, help="tasks per shard (default ceil(tasks / 40))")
    ap.add_argument("--timeout", type=float, default=3 * 3600, help="seconds; a longer configuration is stopped")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and its ETA, run nothing")
    ap.add_argument("--cold", action="store_true",
                    help="every run in a fresh warehouse (default: a run starts from the warehouse the previous "
                         "configuration of the same point left, so a sharded certify has its task times)")
    args = ap.parse_args()
    counts = [int(x) for x in args.tasks.split(",") if x]
    stages = [x for x in args.stages.split(",") if x]
    if not set(stages) <= {"gate", "certify"}:
        raise SystemExit(f"--stages: {args.stages!r}: choose from gate, certify")
    modes = [mode_workers(m) for m in args.modes.split(",") if m]
    if args.slots < 1:
        raise SystemExit("--slots: must be at least 1")

    plan = [("humanevalplus", HEPLUS, n, stage) for n in counts for stage in stages]
    if args.mbppplus and "certify" in stages:
        plan.append(("mbppplus", MBPPPLUS, 399, "certify"))
    past = history(OUT / "scale.json")
    etas = {(d, n, st, w): eta_seconds(past, st, d, w, args.slots, n) for d, _, n, st in plan for w in modes}
    print(f"plan: {len(etas)} configurations, ETA about {sum(etas.values()) / 60:.0f} min "
          f"(from earlier runs in bench/out/scale.json where there are any)", flush=True)
    for (d, n, st, w), e in etas.items():
        print(f"  {st} {d} {n} tasks, {runner_name(w, args.slots)}: ~{e / 60:.0f} min", flush=True)
    if args.dry_run:
        return
    load0 = os.getloadavg()[0]
    scaling = core_scaling()
    print(f"core scaling: 2 processes do {scaling:.2f}x the CPU-bound work of 1 (load {load0:.1f}->"
          f"{os.getloadavg()[0]:.1f}): the ceiling of 2 workers vs 1 on this machine", flush=True)

    from acceptgate.tasks import _prefect_env  # noqa: F401  (offline settings before prefect is imported)
    from acceptgate.flows import serve
    from shard_rows import table_rows

    tmp = Path(tempfile.mkdtemp(prefix="bench_scale."))
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    results = []
    with serve.local_server(free_port()) as api:
        env["PREFECT_API_URL"] = api
        imported: set[tuple[str, int]] = set()
        for dataset, path, n, stage in plan:
            suites = tmp / f"{dataset}-{n}"
            if (dataset, n) not in imported:
                import_suites(dataset, path, n, suites, env)
                imported.add((dataset, n))
            single_rows = None
            previous = None
            for workers in modes:
                warehouse = tmp / f"{stage}-{dataset}-{n}-{workers}.duckdb"
                # A nightly's second night: the warehouse holds the last run of the same inputs, whose
                # task times order a sharded certify's shards (pipelines.certify.task_seconds); this run
                # is a new attempt of the same run id and replaces its rows.
                warm = previous is not None and not args.cold
                if warm:
                    shutil.copyfile(previous, warehouse)
                argv = stage_argv(stage, str(suites), path, n, warehouse) + ["--workers", str(args.slots)]
                if workers:
                    argv += ["--dask", str(workers), "--shard-size", str(args.shard_size or math.ceil(n / SHARDS))]
                print(f"{time.strftime('%H:%M:%S')} {stage} {dataset} {n} tasks, {runner_name(workers, args.slots)} "
                      f"(ETA ~{etas[(dataset, n, stage, workers)] / 60:.0f} min)", flush=True)
                # The host's share of two cores moves within minutes on this machine kind (2.03 then 1.17 in
                # two runs 20 minutes apart, 2026-12-02), so each configuration gets its own ceiling.
                scaling = core_scaling()
                load0 = os.getloadavg()[0]
                seconds, rss, _, finished = run_command(argv, env, args.timeout)
                scaling_after = core_scaling()
                print(f"  core scaling {scaling:.2f} before, {scaling_after:.2f} after", flush=True)
                row = {"stage": stage, "dataset": dataset, "tasks": n, "runner": runner_name(workers, args.slots),
                       "workers": workers, "slots": args.slots, "finished": finished,
                       "samples_per_task": GATE_DRAWS if stage == "gate" else CERTIFY_SAMPLES,
                       "seconds": round(seconds, 1), "seconds_per_task": round(seconds / n, 2),
                       "peak_rss_mib": round(rss / 2**20), "load_before": round(load0, 1),
                       "load_after": round(os.getloadavg()[0], 1),
                       "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
                       "core_scaling": round(scaling, 2), "core_scaling_after": round(scaling_after, 2),
                       "history": warm}
                if finished:
                    size = warehouse.stat().st_size
                    rows = row_counts(warehouse, stage)
                    row["rows"] = rows
                    if not warm:  # a warm file also holds the space the previous attempt's rows left
                        row.update(warehouse_kib_per_task=round(size / 1024 / n),
                                   warehouse_bytes_per_row=round(size / max(rows, 1)))
                    mine = table_rows(warehouse, stage)
                    if workers == 0:
                        single_rows = mine
                    elif single_rows is not None:
                        row["rows_equal"] = mine == single_rows
                if finished:
                    previous = warehouse
                results.append(row)
                print(json.dumps(row), flush=True)
                with open(OUT / "scale.json", "a") as f:  # each run as it ends: a stopped bench keeps them
                    f.write(json.dumps(row) + "\n")
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    plot(OUT / "scale.json", PLOT)
    print(f"\nplot: {PLOT.relative_to(REPO)}\n")
    print(markdown(results))
    print()
    print(nightly_estimate(history(OUT / "scale.json")))


def markdown(results: list[dict]) -> str:
    out = ["| stage | dataset | tasks | runner | seconds | s/task | vs single | peak RSS MiB | warehouse KiB/task "
           "| load | core scaling before→after | rows equal |", "|---|---|---:|---|---:|---:|---:|---:|---:|---|---|---|"]
    single = {(r["stage"], r["dataset"], r["tasks"]): r["seconds"] for r in results if r["workers"] == 0}
    for r in results:
        base = single.get((r["stage"], r["dataset"], r["tasks"]))
        ratio = f"{base / r['seconds']:.2f}x" if base and r["workers"] else "-"
        secs = r["seconds"] if r.get("finished", True) else f"> {r['seconds']} (stopped)"
        out.append(f"| {r['stage']} | {r['dataset']} | {r['tasks']} | {r['runner']} | {secs} | "
                   f"{r['seconds_per_task']} | {ratio} | {r['peak_rss_mib']} | {r.get('warehouse_kib_per_task', '-')} | "
                   f"{r['load_before']}→{r['load_after']} | {r.get('core_scaling', '-')}→{r.get('core_scaling_after', '-')} | "
                   f"{r.get('rows_equal', '-')} |")
    return "\n".join(out)


def nightly_estimate(past: list[dict], tasks: int = 10_000, samples: int = 100, hours: float = 8.0) -> str:
    """On paper, from the largest measured run of each stage: core-hours of a nightly that gates
    ``samples`` draws of each of ``tasks`` tasks and certifies every task, the workers (1 core each, at
    the measured 2-worker efficiency) to fit it in ``hours``, and the warehouse it adds."""
    lines = [f"On paper: a nightly of {tasks:,} tasks x {samples} samples, from the measured per-task costs "
             f"(1 slot = 1 core; the largest finished run of each stage in bench/out/scale.json):"]
    total_core_s, total_bytes = 0.0, 0.0
    for stage in ("gate", "certify"):
        runs = [r for r in past if r["stage"] == stage and r.get("finished", True) and r["workers"] in (0, 1)]
        if not runs:
            lines.append(f"- {stage}: not measured yet")
            continue
        r = max(runs, key=lambda r: (r["tasks"], r["workers"] == 0, r["when"]))
        per_sample = r["seconds_per_task"] * r.get("slots", 1) / r.get("samples_per_task", 1)
        # the gate's cost grows with the draws; certify's per task with its pools (fixed settings)
        core_s = per_sample * samples * tasks if stage == "gate" else r["seconds_per_task"] * r.get("slots", 1) * tasks
        kib = r.get("warehouse_kib_per_task", 0) * (samples / r.get("samples_per_task", 1) if stage == "gate" else 1)
        total_core_s += core_s
        total_bytes += kib * 1024 * tasks
        note = (f" (an upper bound: scaled from {r.get('samples_per_task', 1)} to {samples} draws per task, as if "
                f"every arm drew them all)" if stage == "gate" else "")
        lines.append(f"- {stage}{note}: {r['seconds_per_task']} s/task at {r['tasks']} tasks ({r['runner']}, load "
                     f"{r['load_before']}, {r['when']}) -> {core_s / 3600:,.0f} core-hours, "
                     f"{kib * tasks / 2**20:,.1f} GiB of warehouse ({r.get('warehouse_bytes_per_row', '?')} bytes/row)")
    # The newest 2-worker certification of the largest point, against the newest 1-worker one before it
    # (``past`` is in the order the runs ended): one bench invocation's pair, never two runs far apart.
    pairs = []
    for j, s in enumerate(past):
        if s["stage"] == "certify" and s.get("workers") == 2 and s.get("finished", True):
            ones = [r for r in past[:j] if r["stage"] == "certify" and r.get("workers") == 1
                    and r["tasks"] == s["tasks"] and r.get("finished", True)]
            if ones:
                pairs.append((s["tasks"], j, ones[-1], s))
    eff = 1.0
    if pairs:
        _, _, r, s = max(pairs, key=lambda p: (p[0], p[1]))
        eff = min(1.0, r["seconds"] / s["seconds"] / 2)
        lines.append(f"- 2 workers vs 1 (certify, {r['tasks']} tasks): {r['seconds'] / s['seconds']:.2f}x, "
                     f"i.e. {eff:.0%} per-worker efficiency")
    if total_core_s:
        workers = math.ceil(total_core_s / 3600 / hours / eff)
        lines.append(f"- total {total_core_s / 3600:,.0f} core-hours: {workers:,} single-core workers for an "
                     f"{hours:g}-hour night; warehouse +{total_bytes / 2**30:,.1f} GiB per night")
    return "\n".join(lines)


def plot(data: Path, png: Path) -> None:
    """Seconds per task against tasks, one line per stage and runner (the latest run of each point)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest: dict[tuple, dict] = {}
    for line in data.read_text().splitlines():
        r = json.loads(line)
        if not r.get("finished", True):
            continue
        latest[(r["stage"], r["dataset"], r["runner"], r["tasks"])] = r
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, label in ((axes[0], "seconds_per_task", "seconds per task"), (axes[1], "peak_rss_mib", "peak RSS (MiB)")):
        lines: dict[tuple, list] = {}
        for (stage, dataset, runner, tasks), r in sorted(latest.items(), key=lambda kv: kv[0][3]):
            lines.setdefault((stage, dataset, runner), []).append((tasks, r[key]))
        for (stage, dataset, runner), pts in sorted(lines.items()):
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{stage} {dataset} {runner}")
        ax.set_xlabel("tasks")
        ax.set_ylabel(label)
        ax.set_xscale("log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def import_suites(dataset: str, path: Path, n: int, out: Path, env: dict | None = None) -> None:
    """The first n tasks' suites of a dataset, imported by the real command (also bench_certify_client's
    and bench_dask_overhead's inputs)."""
    subprocess.run([sys.executable, "-m", "acceptgate.cli", "import", dataset, "--path", str(path), "--out",
                    str(out), "--limit", str(n)], cwd=REPO, env=env, check=True, capture_output=True)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
