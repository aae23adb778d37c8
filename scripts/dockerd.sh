#!/usr/bin/env bash
# A private Docker engine for acceptgate's Docker sandbox, started without touching the host network.
#
#   bash scripts/dockerd.sh start|stop|status
#   source scripts/dockerd.sh; start_dockerd; ...; stop_dockerd      (as .ci/run does)
#
# start: reuses an engine that already answers; else installs Debian's docker.io when dockerd is
# missing (root, non-interactive, with service starts blocked), starts dockerd in the background with
# no bridge, no iptables/ip6tables rules and no ip_forward change, its data-root, exec-root, pidfile
# and log under $ACCEPTGATE_DOCKERD_DIR, and waits until the engine answers.
# stop: ends the dockerd this script started (by the PID in its pidfile), nothing else.
#
# Settings (environment): ACCEPTGATE_DOCKERD_DIR (default /tmp/acceptgate-dockerd),
# ACCEPTGATE_DOCKERD_WAIT (seconds to wait for the engine, default 60), DOCKER_HOST (default socket
# unix:///var/run/docker.sock; must be a unix socket for start).

ACCEPTGATE_DOCKERD_DIR="${ACCEPTGATE_DOCKERD_DIR:-/tmp/acceptgate-dockerd}"
ACCEPTGATE_DOCKERD_WAIT="${ACCEPTGATE_DOCKERD_WAIT:-60}"

_dockerd_log() { echo "dockerd.sh: $*" >&2; }

_dockerd_socket() {
    local host="${DOCKER_HOST:-unix:///var/run/docker.sock}"
    echo "${host#unix://}"
}

# True when an engine answers on the socket (the docker CLI, else curl, else a Python one-liner).
dockerd_answers() {
    local sock
    sock="$(_dockerd_socket)"
    if command -v docker >/dev/null 2>&1; then
        timeout 10 docker -H "unix://$sock" info >/dev/null 2>&1 && return 0
        return 1
    fi
    if command -v curl >/dev/null 2>&1; then
        [ "$(timeout 10 curl -s --unix-socket "$sock" http://localhost/_ping 2>/dev/null)" = "OK" ]
        return
    fi
    timeout 10 python3 - "$sock" >/dev/null 2>&1 <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: localhost\r\n\r\n")
sys.exit(0 if s.recv(4096).rstrip().endswith(b"OK") else 1)
EOF
}

_dockerd_alive() {  # a live (not zombie) dockerd with this PID
    local pid="$1" state
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "dockerd" ] || return 1
    state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
    [ -n "$state" ] && [ "$state" != "Z" ] && [ "$state" != "X" ]
}

_dockerd_pid() {  # the PID of the dockerd this script started, if it still runs
    local dir="$ACCEPTGATE_DOCKERD_DIR" pid
    for pid in "$(cat "$dir/dockerd.pid" 2>/dev/null || true)" "$(cat "$dir/dockerd.launch.pid" 2>/dev/null || true)"; do
        if _dockerd_alive "$pid"; then
            echo "$pid"
            return 0
        fi
    done
    return 1
}

# Install docker.io from Debian when dockerd is missing, without letting the package start a service
# (its init script would start a default dockerd that rewrites iptables).
ensure_dockerd_installed() {
    command -v dockerd >/dev/null 2>&1 && return 0
    if [ "$(id -u)" != 0 ]; then
        _dockerd_log "dockerd is missing and installing docker.io needs root"
        return 1
    fi
    _dockerd_log "installing docker.io (apt-get)..."
    local policy=/usr/sbin/policy-rc.d created=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && created=1
    fi
    local rc=0
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null ||
        rc=$?
    [ -n "$created" ] && rm -f "$policy"
    if [ "$rc" != 0 ]; then
        _dockerd_log "apt-get install docker.io failed (exit $rc)"
        return 1
    fi
    if ! command -v dockerd >/dev/null 2>&1; then
        _dockerd_log "docker.io is installed but dockerd is not on PATH ($PATH)"
        return 1
    fi
}

# Wait until the engine answers (0), the dockerd PID ends (1) or the wait runs out (2).
_dockerd_wait() {
    local pid="$1" waited=0
    while ! dockerd_answers; do
        _dockerd_alive "$pid" || return 1
        [ "$waited" -ge $((ACCEPTGATE_DOCKERD_WAIT * 10)) ] && return 2
        sleep 0.1
        waited=$((waited + 1))
    done
}

# A containerd that our dockerd started and left behind (dockerd killed with SIGKILL) holds the state a
# new dockerd needs, and a stale containerd pidfile whose PID still exists (a zombie, say) makes the new
# dockerd wait for a containerd that never answers. End the first (by the PID in its pidfile, only if
# its command line names our state dir) and remove the pidfile.
_containerd_orphan_stop() {
    local dir="$ACCEPTGATE_DOCKERD_DIR" pidfile pid state i
    pidfile="$dir/exec/containerd/containerd.pid"
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    [ -n "$pid" ] || return 0
    state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "containerd" ] && [ -n "$state" ] && [ "$state" != "Z" ] &&
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir/exec/containerd/"; then
        _dockerd_log "ending containerd $pid left by an earlier dockerd"
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do
            state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
            [ -z "$state" ] || [ "$state" = "Z" ] && break
            sleep 0.1
        done
        [ -z "$state" ] || [ "$state" = "Z" ] || kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

_dockerd_launch() {
    local dir="$ACCEPTGATE_DOCKERD_DIR" sock
    sock="$(_dockerd_socket)"
    mkdir -p "$dir/data" "$dir/exec"
    _containerd_orphan_stop
    rm -f "$dir/dockerd.pid" "$dir/dockerd.launch.pid"
    # gVisor's runsc, where installed (Debian's runsc package), as a runtime containers may ask for
    # (DockerBackend(runtime="runsc"), bench/bench_gvisor.py); runc stays the default. Its own network
    # stack off (--network=none: the sandbox containers have none), through a wrapper, since dockerd's
    # --add-runtime takes a path and no arguments.
    local runtimes=()
    if command -v runsc >/dev/null 2>&1; then
        printf '#!/bin/sh\nexec %s --network=none "$@"\n' "$(command -v runsc)" >"$dir/runsc-nonet"
        chmod 755 "$dir/runsc-nonet"
        runtimes=(--add-runtime "runsc=$dir/runsc-nonet")
    fi
    # setsid: the engine outlives this shell and ignores its job-control signals.
    setsid dockerd "${runtimes[@]}" \
        --host "unix://$sock" \
        --iptables=false --ip6tables=false --ip-forward=false --bridge=none \
        --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
        >>"$dir/dockerd.log" 2>&1 </dev/null &
    echo "$!" >"$dir/dockerd.launch.pid"
    echo "$!"
}

start_dockerd() {
    if dockerd_answers; then
        _dockerd_log "an engine already answers on $(_dockerd_socket); reusing it"
        return 0
    fi
    ensure_dockerd_installed || return 1
    local dir="$ACCEPTGATE_DOCKERD_DIR" pid started rc
    if pid="$(_dockerd_pid)"; then
        if ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "--host unix://$(_dockerd_socket) "; then
            _dockerd_log "dockerd $pid (ours) listens elsewhere, not on $(_dockerd_socket) (DOCKER_HOST);" \
                "stop it first: bash scripts/dockerd.sh stop"
            return 1
        fi
        _dockerd_log "dockerd $pid (ours) runs but does not answer yet; waiting"
        _dockerd_wait "$pid" && return 0
        if _dockerd_alive "$pid"; then
            _dockerd_log "dockerd $pid still does not answer after ${ACCEPTGATE_DOCKERD_WAIT}s; log: $dir/dockerd.log"
            return 1
        fi
        _dockerd_log "dockerd $pid ended; starting a new one"
    fi
    started=$(date +%s.%N)
    pid="$(_dockerd_launch)"
    rc=0
    _dockerd_wait "$pid" || rc=$?
    if [ "$rc" != 0 ]; then
        [ "$rc" = 1 ] && _dockerd_log "dockerd exited during start; last log lines:" ||
            _dockerd_log "no answer after ${ACCEPTGATE_DOCKERD_WAIT}s; last log lines:"
        tail -n 20 "$dir/dockerd.log" >&2
        return 1
    fi
    _dockerd_log "dockerd $pid ready on $(_dockerd_socket) in $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $started }")s (log: $dir/dockerd.log)"
}

stop_dockerd() {
    local dir="$ACCEPTGATE_DOCKERD_DIR" pid i
    if ! pid="$(_dockerd_pid)"; then
        _dockerd_log "no dockerd started by this script is running"
        rm -f "$dir/dockerd.launch.pid"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 150); do
        _dockerd_alive "$pid" || break
        sleep 0.1
    done
    if _dockerd_alive "$pid"; then
        _dockerd_log "dockerd $pid ignored SIGTERM for 15s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/dockerd.launch.pid"
    _containerd_orphan_stop
    _dockerd_log "dockerd $pid stopped"
}

status_dockerd() {
    local pid
    if pid="$(_dockerd_pid)"; then
        echo "dockerd started by this script: pid $pid (state under $ACCEPTGATE_DOCKERD_DIR)"
    else
        echo "no dockerd started by this script"
    fi
    if dockerd_answers; then
        echo "engine answering on $(_dockerd_socket)"
        return 0
    fi
    echo "no engine answering on $(_dockerd_socket)"
    return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case "${1:-}" in
        start) start_dockerd ;;
        stop) stop_dockerd ;;
        status) status_dockerd ;;
        *) echo "usage: bash $0 start|stop|status" >&2; exit 2 ;;
    esac
fi
