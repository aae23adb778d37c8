"""What each step of the fork server's per-execution environment costs (issue 25, round 5).

    python3 bench/bench_next_environment.py [--runs 30] [--rounds 8] [--variants all]

One fork-server slot per variant; each variant runs ``--runs`` trivial executions (load ``f(x) = x``,
one call, end) per round, the variants interleaved (the order reversed every other round) so that a
shared, loaded machine affects them alike. Reported: the slot's CPU time (its cgroup counter: the
execution's init and runner, their exits, the next environment, the fork server), the whole machine's
(/proc/stat: everything above plus the harness and the kernel's workers, e.g. a network namespace's
teardown; meaningful on an otherwise idle machine) and the harness process's, in µs per execution,
median over rounds.

The variants are the zygote's source with one step left out, to see what that step costs. They are
ABLATIONS FOR MEASUREMENT ONLY, weaker than the real sandbox (no seccomp filter, no /proc covers,
...): this script never scores anything with them, and nothing else can select them.
"""

from __future__ import annotations

import argparse
import marshal
import os
import secrets
import shlex
import statistics
import sys
import time

from acceptgate.sandbox import forkserver, local
from cpu_busy import busy_seconds
from acceptgate.sandbox.backend import Limits

# name -> [(text in zygote.py, its replacement)]: one step left out (or, for the network namespace, put
# back as it was before stop 35: a new one per execution, its loopback brought up by the init)
ABLATIONS = {
    "a network namespace per execution (before)": [
        ("NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS",
         "NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | 0x40000000 | CLONE_NEWUTS"),
        ('("uts", CLONE_NEWUTS))', '("uts", CLONE_NEWUTS), ("net", 0x40000000))'),
        ("    drop_capabilities(NO_CAPABILITIES)\n\n\ndef mount_plan",
         "    import fcntl\n    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:\n"
         "        fcntl.ioctl(s, 0x8914, struct.pack(\"16sH14x\", b\"lo\", 0x41))\n"
         "    drop_capabilities(NO_CAPABILITIES)\n\n\ndef mount_plan")],
    "no read-only /proc covers": [
        ('PROC_COVERS = tuple(b"/proc/" + name for name in (b"sys", b"sysrq-trigger", b"irq", b"bus"))',
         "PROC_COVERS = ()")],
    "no preloaded modules": [("    for name in PRELOAD:\n", "    for name in ():\n")],
    "no seccomp filter": [("        load_filter(FILTER_PROGRAM)  # after", "        pass  # after")],
}
LIMITS = Limits(wall_seconds=60)


def variant_source(name: str) -> str:
    source = forkserver.zygote_source()
    if name == "as is":
        return source
    for old, new in ABLATIONS[name]:
        if old not in source:
            raise SystemExit(f"bench_next_environment: the step {name!r} is no longer in zygote.py; update ABLATIONS")
        source = source.replace(old, new)
    return source


def backend_with(source: str) -> local.LocalBackend:
    """A fork-server backend whose slots run ``source`` as their zygote (read when a slot starts)."""
    original = forkserver.zygote_source
    forkserver.zygote_source = lambda: source
    try:
        backend = local.forkserver_local()
        backend.pool.WARM_UP = 10**9  # one slot per variant: a busy pool would add slots of the real zygote
        run(backend, 2)  # the slot starts here, with this source
    finally:
        forkserver.zygote_source = original
    FIRST_SLOT[id(backend)] = the_slot(backend)
    return backend


FIRST_SLOT: dict[int, object] = {}  # backend -> the slot started with its variant's source


def load_identity(proc, limits: Limits, deadline: float):
    """Raw frames to a spawned runner: its marker, then ``f(x) = x`` loaded. The frame maker and the
    load's answer (also bench_samples.py's per-call floor)."""
    marker = secrets.token_hex(16).encode()

    def frame(kind: bytes, payload: bytes) -> bytes:
        return marker + b" " + kind + b" " + str(len(payload)).encode() + b"\n" + payload

    proc.write(marker + b"\n", deadline)
    proc.write(frame(b"load", marshal.dumps({"source": "def f(x):\n    return x\n", "entry_point": "f",
                                              "limits": limits.rlimits(),
                                              "seccomp": getattr(proc, "runner_seccomp", b"")})), deadline)
    return frame, proc.read(deadline)


def run(backend: local.LocalBackend, n: int) -> None:
    for _ in range(n):
        proc = backend.spawn(LIMITS)
        try:
            deadline = time.monotonic() + 60
            frame, answer = load_identity(proc, LIMITS, deadline)
            if b" ready " not in answer:
                raise SystemExit("bench_next_environment: the runner did not load f")
            proc.write(frame(b"call", marshal.dumps(((1,), {}))), deadline)
            proc.read(deadline)
            proc.write(frame(b"end", b""), deadline)
            proc.wait(2.0)
        finally:
            proc.close()


def the_slot(backend: local.LocalBackend):
    slots = backend.pool.idle_slots()
    if len(slots) != 1 or slots[0].cpu is None:
        raise SystemExit("bench_next_environment: needs one idle fork-server slot with a cpuacct cgroup (as root)")
    return slots[0]


def slot_cpu(backend: local.LocalBackend) -> float:
    slot = the_slot(backend)
    if slot is not FIRST_SLOT[id(backend)]:  # a replacement slot would run the real zygote
        raise SystemExit("bench_next_environment: a slot was discarded and replaced; rerun")
    return slot.cpu.seconds()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="executions per variant per round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--variants", default="all", help="comma-separated names of ABLATIONS, or all")
    args = parser.parse_args(argv)
    names = list(ABLATIONS) if args.variants == "all" else [v.strip() for v in args.variants.split(",")]
    unknown = [n for n in names if n not in ABLATIONS]
    if unknown:
        print(f"unknown variant(s) {unknown}; known: {list(ABLATIONS)}", file=sys.stderr)
        return 2
    variants = [(name, backend_with(variant_source(name))) for name in ["as is", *names]]
    load0 = os.getloadavg()[0]
    found: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name, _ in variants}
    try:
        for r in range(args.rounds):
            for name, backend in (variants if r % 2 == 0 else variants[::-1]):
                sandbox0, harness0, wall0 = slot_cpu(backend), time.process_time(), time.perf_counter()
                machine0 = busy_seconds()
                run(backend, args.runs)
                wall = time.perf_counter() - wall0
                time.sleep(0.05)  # the last init's exit and the next spare are counted in this round
                found[name].append(((slot_cpu(backend) - sandbox0) / args.runs * 1e6,
                                    (time.process_time() - harness0) / args.runs * 1e6, wall / args.runs * 1e3,
                                    (busy_seconds() - machine0) / args.runs * 1e6))
    finally:
        for _, backend in variants:
            backend.close()
    command = shlex.join(["python3", "bench/bench_next_environment.py", *(argv if argv is not None else sys.argv[1:])])
    print(f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, "
          f"load {load0:.1f}→{os.getloadavg()[0]:.1f}\n")
    print("| zygote | sandbox CPU µs per execution (median) | rounds | machine CPU µs per execution (median) | "
          "harness process CPU µs per execution | wall ms per execution (one after another) |")
    print("|---|---:|---|---:|---:|---:|")
    base = statistics.median(x[0] for x in found["as is"])
    machine_base = statistics.median(x[3] for x in found["as is"])
    for name, _ in variants:
        sandbox = statistics.median(x[0] for x in found[name])
        machine = statistics.median(x[3] for x in found[name])
        delta = "" if name == "as is" else f" ({sandbox - base:+,.0f})"
        machine_delta = "" if name == "as is" else f" ({machine - machine_base:+,.0f})"
        print(f"| {name} | {sandbox:,.0f}{delta} | {', '.join(f'{x[0]:,.0f}' for x in found[name])} | "
              f"{machine:,.0f}{machine_delta} | {statistics.median(x[1] for x in found[name]):,.0f} | "
              f"{statistics.median(x[2] for x in found[name]):,.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
