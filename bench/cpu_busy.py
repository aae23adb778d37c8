"""How busy the machine's cores are, once a second, beside another command (a bench, the suite):

    python3 bench/cpu_busy.py OUT &  python3 bench/bench_scale.py ...;  kill %1

Each line of OUT: seconds since the start, busy cores (everything but idle and iowait, from the first line
of /proc/stat), of which user and of which system. SIGTERM ends it.
"""

import os
import signal
import sys
import time

CLK = os.sysconf("SC_CLK_TCK")


def _stat() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def busy_seconds() -> float:
    """CPU seconds every core has spent busy since boot (not idle, not iowait): the whole machine's,
    kernel workers included (e.g. a namespace's teardown, which no process's or cgroup's counter holds)."""
    d = _stat()
    return (sum(d) - d[3] - d[4]) / CLK


def main() -> None:
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(sys.argv[1], "w") as out:
        t0 = last_t = time.time()
        last = _stat()
        while not stop:
            time.sleep(1)
            now, t = _stat(), time.time()
            d = [b - a for a, b in zip(last, now)]
            span = (t - last_t) * CLK
            busy = (sum(d) - d[3] - d[4]) / span
            out.write(f"{t - t0:.1f} {busy:.2f} {d[0] / span:.2f} {d[2] / span:.2f}\n")
            out.flush()
            last, last_t = now, t


if __name__ == "__main__":
    main()
