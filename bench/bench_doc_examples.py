"""Where the documentation examples' time goes: wall and CPU seconds of every command, per part.

    python3 bench/bench_doc_examples.py [PART ...]    (the parts of tests/test_doc_examples.py; default all)

Each part runs as its test runs it (tests/test_doc_examples.py: a working copy of its own, navigation
order, a command that already ran skipped), one part after the other, with one import cache for all
parts, fresh at the start (the suite's pytest-xdist workers share one: the first part to import
HumanEval+ fills it, the others copy it) and every command talking to one Prefect server started here,
as the suite's commands talk to the session's shared server. Per command: wall seconds and CPU seconds
(``resource.getrusage(RUSAGE_CHILDREN)`` around it: the command and every process it waited for, not
the Prefect server nor Docker's containers); ``--keep DIR`` keeps each command's output. At the end:
the commands by CPU, the totals per part and the Prefect server's own CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from test_doc_examples import PART_NAMES, all_examples, environment, part, run_one, to_run, working_copy  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def start_server(directory: Path) -> tuple[subprocess.Popen, str]:
    """tests/shared_prefect_server.py with this process as its controller (it exits when we do)."""
    (directory / "controller.pid").write_text(str(os.getpid()))
    log = open(directory / "server.log", "ab")
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "shared_prefect_server.py"), str(directory),
                             str(os.getpid())], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    while not (directory / "server.json").is_file():
        if proc.poll() is not None:
            sys.exit(f"the Prefect server did not start: {directory / 'server.log'}")
        time.sleep(0.2)
    return proc, json.loads((directory / "server.json").read_text())["url"]


def tree_cpu(pid: int) -> float:
    """CPU seconds of a live process and its live descendants."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            times = proc.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    except psutil.NoSuchProcess:
        pass
    return total


def time_part(name: str, tmp: Path, env: dict[str, str]) -> list[dict]:
    found = to_run(part(all_examples(), name))
    cwd = working_copy(tmp)
    rows = []
    for example in found:
        wall, cpu = time.monotonic(), children_cpu()
        done = run_one(example, cwd, env)
        row = {"part": name, "place": f"{example.page}:{example.line}", "command": example.command,
               "wall": time.monotonic() - wall, "cpu": children_cpu() - cpu, "exit": done.returncode}
        rows.append(row)
        print(f"{row['wall']:7.1f} s wall {row['cpu']:7.1f} s CPU  exit {row['exit']}  {row['place']}  "
              f"{example.command[:110]}", flush=True)
        with open(tmp / "output.txt", "a") as log:
            log.write(f"$ {example.command}\n{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            print((done.stderr or done.stdout)[-1500:], flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"one of {', '.join(PART_NAMES)} (default all)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument("--keep", type=Path, help="work in this new directory and keep it (each part's working "
                        "copy and its commands' output, PART/output.txt)")
    args = parser.parse_args()
    if unknown := set(args.parts) - set(PART_NAMES):
        parser.error(f"unknown part {sorted(unknown)[0]!r}: one of {', '.join(PART_NAMES)}")
    args.parts = args.parts or list(PART_NAMES)
    os.environ.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", GX_ANALYTICS_ENABLED="false")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-doc-examples-") as tmp:
        tmp = Path(tmp)
        if args.keep:
            args.keep.mkdir(parents=True)
            tmp = args.keep.resolve()
        (tmp / "server").mkdir()
        os.environ["PREFECT_HOME"] = str(tmp / "prefect-home")
        server, url = start_server(tmp / "server")
        try:
            for name in args.parts:
                (tmp / name).mkdir()
                env = environment()
                env.update(PREFECT_API_URL=url, ACCEPTGATE_CACHE_DIR=str(tmp / "import-cache"))
                print(f"== {name}", flush=True)
                rows += time_part(name, tmp / name, env)
            server_cpu = tree_cpu(server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    print("\n== by CPU")
    for row in sorted(rows, key=lambda r: -r["cpu"]):
        print(f"{row['cpu']:7.1f} s CPU {row['wall']:7.1f} s wall  {row['part']:<12} {row['place']}")
    print("\n== per part")
    for name in args.parts:
        mine = [r for r in rows if r["part"] == name]
        print(f"{name:<12} {len(mine):3d} commands {sum(r['wall'] for r in mine):8.1f} s wall "
              f"{sum(r['cpu'] for r in mine):8.1f} s CPU  {sum(r['exit'] != 0 for r in mine)} failed")
    print(f"Prefect server: {server_cpu:.1f} s CPU")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if any(r["exit"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
