"""Speed of the leak audit (issue 10, item 7). Not a test: prints figures.

    python bench/bench_leak.py match   [--texts 2500] [--needles 1400] [--naive]
    python bench/bench_leak.py history [--scale 100 | --records N] [--batch-records N] [--keep DIR] [--cli]

``match``: 2,500 texts x 1,400 needles (3.5 M comparison items) with planted hits, some needles inside
longer ones. Times building + matching with the Aho-Corasick matcher (default) and polars (byte
offsets converted to characters), checks that every planted hit is found at its character offset
(recall) and that both matchers report identical hit sets; ``--naive`` adds the str.find loop.

``history``: a generated history ``--scale`` times the seed's retro-scan (179 records, ~3.49 M items,
x100 = 17,900 records, ~350 M v2 comparison items): synthetic tasks with hidden suites, records with
task/harness/model texts, some harness texts carrying planted hidden cases (must be exactly the
violations), some records truncated or unfinished (unverifiable). The history is written as a jsonl.gz
file by a child process (not timed, and not in this process's memory), then
``acceptgate.pipelines.leak.run_audit`` runs end to end into a fresh warehouse: read + validate the file
(spooled), plan, scan with controls, validate (Great Expectations) and write every verdict, hit summary
and v2 hit, publish the snapshot. Peak RSS is this process's (``ru_maxrss``): the audit's, with the
tasks' material. Figures are wall-clock; say the machine load with them.

``history --cli``: the same history through the command a user runs, ``acceptgate backfill --suites DIR
--history FILE --no-warehouse-runs`` with default settings, in a child process (the synthetic tasks written
as a suites directory first); reports the child's wall time and peak RSS and checks the flagged records.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import string
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ALPHABET = string.ascii_lowercase + string.digits + "(),'[] "


# -- match -------------------------------------------------------------------------------------

def match_corpus(n_texts: int, n_needles: int, seed: int = 10):
    rng = random.Random(seed)
    needles = []
    for i in range(n_needles):
        if i % 10 == 9 and needles:  # every tenth needle lies inside an earlier, longer one
            host = max(needles[-9:], key=len)
            a = rng.randrange(0, max(1, len(host) - 4))
            needles.append(host[a:a + rng.randint(4, max(4, len(host) - a))])
        else:
            needles.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(6, 40))))
    words = ["attempt", "visible", "suite", "fail", "AssertionError:", "args=", "got=", "want=", "déjà", "→", "cases"]
    texts, planted = [], []
    for t in range(n_texts):
        tokens = [rng.choice(words) for _ in range(rng.randint(40, 120))]
        spots = {rng.randrange(len(tokens)): rng.randrange(n_needles) for _ in range(rng.randint(2, 8))}
        body, at = [], 0
        for i, word in enumerate(tokens):  # planted needles are whole tokens: offsets known exactly
            if i in spots:
                planted.append((t, at, spots[i]))
                body.append(needles[spots[i]])
                at += len(needles[spots[i]]) + 1
            body.append(word)
            at += len(word) + 1
        texts.append(" ".join(body))
    return needles, texts, planted


def bench_match(args) -> None:
    from acceptgate.leak.matcher import build

    needles, texts, planted = match_corpus(args.texts, args.needles)
    items = len(texts) * len(needles)
    chars = sum(map(len, texts))
    print(f"match: {len(texts):,} texts ({chars:,} characters) x {len(needles):,} needles = {items:,} items, "
          f"{len(planted):,} planted hits")
    results = {}
    for name in ("aho", "polars"):
        t0 = time.perf_counter()
        m = build(name, needles)
        t1, c1 = time.perf_counter(), time.process_time()
        found = m.find_many(texts)
        t2, c2 = time.perf_counter(), time.process_time()
        hits = {(t, x.start, x.needle) for t, ms in enumerate(found) for x in ms}
        recall = sum(1 for p in planted if p in hits) / len(planted)
        results[name] = hits
        print(f"  {name:<7} build {t1 - t0:.3f} s, match {t2 - t1:.3f} s wall ({c2 - c1:.3f} s CPU), {len(hits):,} hits, "
              f"planted recall {recall:.2%}")
    print(f"  aho and polars report the same hits: {results['aho'] == results['polars']}")
    if args.naive:
        t0 = time.perf_counter()
        naive = set()
        for t, text in enumerate(texts):
            for i, n in enumerate(needles):
                at = text.find(n)
                while at != -1:
                    naive.add((t, at, i))
                    at = text.find(n, at + 1)
        print(f"  naive   str.find loop {time.perf_counter() - t0:.3f} s, same hits: {naive == results['aho']}")


# -- history -----------------------------------------------------------------------------------

def synthetic_tasks(n_tasks: int, cases: int, rng: random.Random):
    from acceptgate.suites import suitespec
    from acceptgate.datasets.task import HIDDEN, VISIBLE, Task

    tasks = []
    for k in range(n_tasks):
        ep = f"func_{k}"
        def case():
            kind = rng.random()
            if kind < 0.4:
                return ((rng.randint(-10**6, 10**6), rng.randint(0, 99)), {}, rng.randint(-10**7, 10**7))
            if kind < 0.8:
                xs = [rng.randint(-999, 999) for _ in range(rng.randint(3, 30))]
                return ((xs,), {}, sorted(xs))
            s = "".join(rng.choice(string.ascii_lowercase + " ") for _ in range(rng.randint(8, 90)))
            return ((s,), {}, s[::-1])
        vis = [case() for _ in range(3)]
        hidden = vis + [case() for _ in range(cases)]
        prompt = (f"def {ep}(x, y=None):\n    \"\"\"Synthetic task {k}.\n"
                  + "".join(f"    >>> {ep}({', '.join(repr(a) for a in c[0])})\n    {c[2]!r}\n" for c in vis)
                  + "    \"\"\"\n")
        tasks.append(Task(f"Synth/{k}", "synthetic", ep, prompt, "",
                          suites={VISIBLE: suitespec.build("python-call/1", ep, vis),
                                  HIDDEN: suitespec.build("python-call/1", ep, hidden)}))
    return tasks


def synthetic_history(tasks, materials, n_records: int, rng: random.Random, leaked: set, incomplete: set):
    """Records like gate runs': ~14 texts each; ~2.2% leak (hidden call in feedback), ~5.6% incomplete.
    Yields them one by one; the planted record numbers go to ``leaked`` and ``incomplete``."""
    from acceptgate.leak.records import LeakRecord, RecordMessage

    start = datetime(2026, 9, 1, tzinfo=timezone.utc)
    per_run = 100
    for r in range(n_records):
        task = tasks[r % len(tasks)]
        mat = materials[task.task_id]
        run_id = f"H{r // per_run:04d}"
        msgs, seq = [], 0
        attempts = rng.randint(1, 5)
        for a in range(1, attempts + 1):
            msgs.append(RecordMessage(seq, a, "task", "generation", "user", task.prompt)); seq += 1
            msgs.append(RecordMessage(seq, a, "harness", "generation", "user",
                                      "Complete the Python function above. You may import only: math, re.")); seq += 1
            body = "\n".join(f"    v{i} = x * {rng.randint(0, 99)} + {rng.randint(0, 9)}" for i in range(8))
            msgs.append(RecordMessage(seq, a, "model", "generation", "assistant",
                                      f"```python\ndef {task.entry_point}(x, y=None):\n{body}\n    return x\n```")); seq += 1
            vcase = task.suites["visible"].cases[0]
            msgs.append(RecordMessage(seq, a, "harness", "selection", "none",
                                      f"attempt {a}: precheck ok, visible suite fail (2/3 cases)")); seq += 1
        leak = r % 45 == 7
        feedback = f"AssertionError: args={vcase.args_text} got=0 want={vcase.expected_text}"
        if leak:
            secret = next(n for n in mat.hidden() if n.kind == "call")
            feedback += f"\nHint: also check {secret.text}"
            leaked.add(r)
        msgs.append(RecordMessage(seq, attempts, "harness", "revision_feedback", "user", feedback)); seq += 1
        msgs.append(RecordMessage(seq, attempts, "harness", "stop_decision", "none", "refused: cap reached")); seq += 1
        finished = True
        if r % 18 == 11 and not leak:  # truncated: the stop decision never recorded
            msgs = msgs[:-1]
            incomplete.add(r)
        elif r % 18 == 5 and not leak:
            finished = False
            incomplete.add(r)
        yield LeakRecord(run_id, ("conform", "hmix", "off")[r % 3], f"b{r % 7}", task.task_id,
                         start + timedelta(minutes=r), finished, "refused", attempts, tuple(msgs))


def _generate(n_tasks: int, cases: int, n_records: int, history: Path, truth: Path) -> None:
    """In a child process: write the history and the planted keys."""
    from acceptgate.leak import audit
    from acceptgate.leak.records import write_jsonl

    rng = random.Random(11)
    tasks = synthetic_tasks(n_tasks, cases, rng)
    materials = audit.load_materials(tasks)
    leaked, incomplete, keys, texts = set(), set(), [], [0]

    def records():
        for rec in synthetic_history(tasks, materials, n_records, rng, leaked, incomplete):
            keys.append((rec.run_id, rec.block, rec.task_id))
            texts[0] += len(rec.messages)
            yield rec

    write_jsonl(records(), history)
    truth.write_text(json.dumps({"leaked": [keys[i] for i in sorted(leaked)], "incomplete": len(incomplete),
                                 "texts": texts[0]}))


def bench_history(args) -> None:
    from acceptgate.store import warehouse
    from acceptgate.leak import audit
    from acceptgate.pipelines import leak as leak_io

    n_records = args.records or 179 * args.scale
    t0 = time.perf_counter()
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="bench_leak_"))
    workdir.mkdir(parents=True, exist_ok=True)
    history, truth = workdir / f"history-{n_records}.jsonl.gz", workdir / f"planted-{n_records}.json"
    if not (history.exists() and truth.exists()):
        child = multiprocessing.get_context("fork").Process(
            target=_generate, args=(args.tasks, args.cases, n_records, history, truth))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit(f"generating the history failed (exit {child.exitcode})")
    planted = json.loads(truth.read_text())
    tasks = synthetic_tasks(args.tasks, args.cases, random.Random(11))  # the same tasks the child drew
    materials = audit.load_materials(tasks)
    needles = sum(len(m.hidden()) for m in materials.values()) / len(materials)
    print(f"history: {n_records:,} records, {planted['texts']:,} texts, {len(tasks)} tasks (~{needles:.0f} hidden "
          f"needles each), {history.stat().st_size / 1e6:.1f} MB gzipped, ready in {time.perf_counter() - t0:.1f} s")
    path = workdir / "warehouse.duckdb"
    for p in workdir.glob("warehouse*"):
        p.unlink()
    if args.cli:
        return bench_backfill_cli(tasks, history, planted, path, workdir)
    warehouse.migrate(path)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t1, c1 = time.perf_counter(), time.process_time()
    marks = {}  # peak RSS (MiB) after the first batch and after the last one, before publishing

    def progress(run_id, done, total, what):
        marks.setdefault("first batch", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        marks["last batch"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    result = leak_io.run_audit(path, materials, audit.Selection(history=(str(history),), warehouse_runs=False),
                             batch_records=args.batch_records or audit.BATCH_RECORDS, progress=progress,
                             publish=False)
    p0 = time.perf_counter()
    warehouse.publish(path, sorted(r["run_id"] for r in result.per_run))
    result.seconds["publish"] = time.perf_counter() - p0
    took, cpu = time.perf_counter() - t1, time.process_time() - c1
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tot = {k: sum(int(r[k]) for r in result.per_run) for k in ("records", "clean", "unverifiable", "violation",
                                                                 "items_v1", "items_v2")}
    with warehouse.connect(path, read_only=True) as con:
        flagged = {tuple(x) for x in con.execute(
            "select run_id, block, task_id from leak_verdicts where verdict = 'violation'").fetchall()}
        hits = con.execute("select count(*) from leak_hits").fetchone()[0]
        rules = con.execute("select count(*) from leak_hit_rules").fetchone()[0]
    want = {tuple(k) for k in planted["leaked"]}
    print(f"end to end {took:.1f} s wall, {cpu:.1f} s CPU of this process "
          f"({', '.join(f'{k} {v:.1f} s' for k, v in result.seconds.items())}); "
          f"peak RSS {rss:,.0f} MiB ({rss0:,.0f} MiB before the audit, with the tasks' material; "
          + ", ".join(f"{k} {v:,.0f} MiB" for k, v in marks.items()) + ")")
    print(f"  {tot['records']:,} records: {tot['clean']:,} clean, {tot['unverifiable']:,} unverifiable "
          f"(planted incomplete {planted['incomplete']:,}), {tot['violation']:,} violation (planted leaks "
          f"{len(want):,}, flagged exactly those: {flagged == want})")
    print(f"  comparison items: v2 {tot['items_v2']:,}, v1 {tot['items_v1']:,}; rows stored: {rules:,} hit "
          f"summaries, {hits:,} v2 hits")
    print(f"  {tot['items_v2'] / took / 1e6:.1f} M v2 items/s end to end; workdir {workdir}")


def bench_backfill_cli(tasks, history: Path, planted: dict, path: Path, workdir: Path) -> None:
    """``acceptgate backfill`` on the history, default settings, as a child process."""
    import subprocess
    import sys

    from acceptgate.datasets import suitefiles
    from acceptgate.store import warehouse
    from acceptgate.datasets.task import ImportResult

    suites = suitefiles.write_suites(ImportResult("synthetic", "bench_leak.py", "-", tasks, []), workdir / "suites")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "acceptgate.cli", "backfill", "--suites", str(suites),
                           "--history", str(history), "--no-warehouse-runs", "--warehouse", str(path), "--quiet"],
                          capture_output=True, text=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"acceptgate backfill exited {done.returncode}:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    with warehouse.connect(path, read_only=True) as con:  # the published snapshot is what analysts read
        flagged = {tuple(x) for x in con.execute(
            "select run_id, block, task_id from leak_verdicts where verdict = 'violation'").fetchall()}
        counts = dict(con.execute("select verdict, count(*) from leak_verdicts group by 1").fetchall())
    want = {tuple(k) for k in planted["leaked"]}
    print(f"acceptgate backfill (child process, default settings): {took:.1f} s wall, {cpu:.1f} s CPU, "
          f"peak RSS {after.ru_maxrss / 1024:,.0f} MiB")
    print(f"  verdicts {counts}; planted leaks {len(want):,}, flagged exactly those: {flagged == want}")
    print(done.stdout.strip()[-1500:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("match")
    m.add_argument("--texts", type=int, default=2500)
    m.add_argument("--needles", type=int, default=1400)
    m.add_argument("--naive", action="store_true")
    h = sub.add_parser("history")
    h.add_argument("--scale", type=int, default=100, help="times the seed's 179 records")
    h.add_argument("--records", type=int, help="this many records instead of --scale")
    h.add_argument("--batch-records", type=int, default=None, help="records per batch (default: the audit's)")
    h.add_argument("--tasks", type=int, default=40)
    h.add_argument("--cases", type=int, default=180, help="hidden cases per task (sets needles per task)")
    h.add_argument("--cli", action="store_true", help="run the 'acceptgate backfill' command instead")
    h.add_argument("--keep", metavar="DIR", help="work directory (default: a new temporary one)")
    args = p.parse_args()
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    bench_match(args) if args.what == "match" else bench_history(args)


if __name__ == "__main__":
    main()
