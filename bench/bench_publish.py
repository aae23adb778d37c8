"""What one publish of the snapshot costs, on a copy of a real warehouse.

    python3 bench/bench_publish.py W [--times 3]

W is a live warehouse with at least one run (e.g. from ``acceptgate gate ... --warehouse W``). The
bench copies W and its snapshot to a temporary directory and publishes the newest run there again
``--times`` times, each over the previous snapshot (what every flow after the first does, and what the
gate service's publisher does on each tick with new calls), printing the CPU (``time.process_time()``)
and wall seconds of each. W itself is not touched.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptgate.store import warehouse  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--times", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acceptgate-bench-publish-") as tmp:
        live = Path(tmp) / "w.duckdb"
        shutil.copy(args.warehouse, live)
        snapshot = warehouse.snapshot_path(args.warehouse)
        if snapshot.exists():
            shutil.copy(snapshot, warehouse.snapshot_path(live))
        with warehouse.connect(live, read_only=True) as con:
            run = con.execute("select run_id from run_attempts order by started_at desc limit 1").fetchone()
            tables = con.execute("select count(*) from duckdb_tables() where database_name = current_database()"
                                 ).fetchone()[0]
        if run is None:
            print(f"{args.warehouse}: no run to publish", file=sys.stderr)
            return 2
        print(f"publishing run {run[0]} of a {tables}-table warehouse, {args.times} times")
        for i in range(args.times):
            cpu, wall = time.process_time(), time.monotonic()
            warehouse.publish(live, run[0])
            print(f"publish {i + 1}: {time.process_time() - cpu:.3f} s CPU, {time.monotonic() - wall:.3f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
