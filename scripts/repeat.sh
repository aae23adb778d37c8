#!/usr/bin/env bash
# Runs the given tests N times in a row, each run with two CPU-bound processes beside it (as
# `scripts/test.sh --under-load` does): a test that passes only on a quiet machine, or only sometimes,
# fails here. After each run it lists what the run left behind: acceptgate's cgroups and processes.
#   bash scripts/repeat.sh 20 tests/test_signals.py
# One line per run; the last line counts the failed runs. Exit 1 when any run failed or left something.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:?usage: scripts/repeat.sh N PYTEST_ARGS...}"
shift
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false GX_ANALYTICS_ENABLED=false
export PREFECT_HOME="${PREFECT_HOME:-$PWD/.prefect}"
unset PYTHONDONTWRITEBYTECODE

BUSY_PIDS=()
stop_busy() { for pid in "${BUSY_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_busy EXIT
for _ in 1 2; do
    python3 -c 'while True: pass' &
    BUSY_PIDS+=("$!")
done

# What a run may leave: a cgroup of the sandbox's (acceptgate-*) or a process running acceptgate code.
leftovers() {
    { find /sys/fs/cgroup -maxdepth 6 -type d -name 'acceptgate*' 2>/dev/null || true; } | wc -l
}
stray() {
    pgrep -f 'acceptgate|prefect server' 2>/dev/null | grep -v -w -e "$$" | wc -l || true
}

FAILED=0
LOG_DIR="$(mktemp -d)"
for i in $(seq 1 "$RUNS"); do
    started=$SECONDS
    status=0
    before="$(leftovers)"
    python3 -m pytest -q -p no:cacheprovider -p no:benchmark "$@" > "$LOG_DIR/run-$i.log" 2>&1 || status=$?
    summary="$(tail -n 1 "$LOG_DIR/run-$i.log")"
    cgroups=$(( $(leftovers) - before ))
    procs="$(stray)"
    load="$(cut -d' ' -f1 /proc/loadavg)"
    echo "run $i/$RUNS: exit $status, $((SECONDS - started)) s, load $load: $summary; left: $cgroups cgroups, $procs processes"
    if [ "$status" != 0 ] || [ "$cgroups" -gt 0 ] || [ "$procs" != 0 ]; then
        FAILED=$((FAILED + 1))
        echo "  log: $LOG_DIR/run-$i.log"
    fi
done
echo "scripts/repeat.sh: $FAILED of $RUNS runs failed or left something behind (logs: $LOG_DIR)"
[ "$FAILED" = 0 ]
