"""Load benchmark of the gate service: N submissions from C concurrent clients over loopback HTTP.

    python3 bench/bench_service.py                      # 200 submissions, 8 clients, 2 execution slots
    python3 bench/bench_service.py --submissions 400 --clients 16 --max-executions 2

Starts `acceptgate serve-api` (the real CLI) on a free loopback port with its own keys, journal and
warehouse in a temp dir, registers a few HumanEval-like tasks per client, then each client thread
submits right and wrong candidates in turn. Reports throughput, latency (median, p95, max) per
outcome, refusals by status (429/503: back-pressure), and how long the publisher took to land every
decision in the warehouse snapshot. Prints one JSON object (and the machine's load) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from service_harness import LiveService  # noqa: E402

TASKS = [
    ("add", "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n", [([1, 2], 3), ([0, 0], 0)],
     [([918273645, 50607], 918324252), ([-7, 7], 0)],
     "def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a - b\n"),
    ("maximum", "def maximum(xs):\n    \"\"\"Largest element.\"\"\"\n", [([[1, 5, 2]], 5)],
     [([[-3, -9]], -3), ([[7]], 7)],
     "def maximum(xs):\n    return max(xs)\n", "def maximum(xs):\n    return xs[0]\n"),
    ("rev", "def rev(s):\n    \"\"\"Reverse a string.\"\"\"\n", [(["abc"], "cba")],
     [(["racecar!"], "!racecar"), ([""], "")],
     "def rev(s):\n    return s[::-1]\n", "def rev(s):\n    return s\n"),
]


def spec(entry, cases):
    return {"dialect": "python-call/1", "entry_point": entry,
            "cases": [{"args": repr(args), "expected": repr(want)} for args, want in cases]}


def percentile(xs, q):
    xs = sorted(xs)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submissions", type=int, default=200)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--max-executions", type=int, default=2)
    ap.add_argument("--queue", type=int, default=64)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        clients = tuple(f"client{i}" for i in range(args.clients))
        svc = LiveService(Path(tmp), clients=clients, extra=(
            "--max-executions", str(args.max_executions), "--queue", str(args.queue),
            "--rate-per-minute", "100000", "--burst", "100000", "--publish-seconds", "1")).start()
        try:
            for who in clients:
                with svc.client(who) as http:
                    # gauged at registration with the generic wrong samples (the bench's wrong programs are
                    # not wrong for every suite: maximum's xs[0] passes its hidden cases)
                    for entry, statement, vis, hid, right, _ in TASKS:
                        r = http.post("/v1/tasks", json={"task_id": entry, "statement": statement, "entry_point": entry,
                                                         "visible": spec(entry, vis), "hidden": spec(entry, hid),
                                                         "reference": right})
                        assert r.status_code == 201, r.text
            results: list[tuple[int, float, str]] = []
            lock = threading.Lock()
            per_client = [args.submissions // args.clients + (i < args.submissions % args.clients)
                          for i in range(args.clients)]

            def work(i: int, who: str) -> None:
                with svc.client(who) as http:
                    for k in range(per_client[i]):
                        entry, _, _, _, right, wrong = TASKS[k % len(TASKS)]
                        program = right if k % 2 == 0 else wrong
                        t0 = time.monotonic()
                        r = http.post(f"/v1/tasks/{entry}/submissions", json={"program": program})
                        dt = time.monotonic() - t0
                        outcome = r.json().get("decision", str(r.status_code)) if r.status_code == 200 else str(r.status_code)
                        with lock:
                            results.append((r.status_code, dt, outcome))

            load_before = os.getloadavg()[0]
            started = time.monotonic()
            threads = [threading.Thread(target=work, args=(i, who)) for i, who in enumerate(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.monotonic() - started
            load_after = os.getloadavg()[0]

            # publish lag: until every decision is visible in the analysts' snapshot
            decided = sum(1 for code, _, _ in results if code == 200)
            publish_started = time.monotonic()
            import duckdb

            snap = str(svc.warehouse).replace(".duckdb", ".snapshot.duckdb")
            landed = 0
            while time.monotonic() - publish_started < 600:
                try:
                    with duckdb.connect(snap, read_only=True) as con:
                        landed = con.execute("select count(*) from gate_runs where run_id like 'api-%'").fetchone()[0]
                except duckdb.Error:
                    landed = 0
                if landed >= decided:
                    break
                time.sleep(1)
            publish_lag = time.monotonic() - publish_started
        finally:
            svc.stop()

    ok = [dt for code, dt, _ in results if code == 200]
    by_status: dict[str, int] = {}
    for code, _, outcome in results:
        by_status[outcome] = by_status.get(outcome, 0) + 1
    report = {
        "submissions": len(results), "clients": args.clients, "max_executions": args.max_executions,
        "wall_seconds": round(wall, 2), "throughput_per_s": round(len(results) / wall, 1),
        "latency_median_s": round(statistics.median(ok), 3), "latency_p95_s": round(percentile(ok, 0.95), 3),
        "latency_max_s": round(max(ok), 3), "outcomes": by_status,
        "published": landed, "publish_lag_after_last_response_s": round(publish_lag, 1),
        "load_avg_before_after": [round(load_before, 1), round(load_after, 1)],
    }
    print(json.dumps(report, indent=2))
    return 0 if landed >= decided else 1


if __name__ == "__main__":
    sys.exit(main())
