"""Docker backend: each execution in a locked-down container, fast through warm reuse.

The container: no network, memory limit with swap equal, process limit, read-only root, all
capabilities dropped, no-new-privileges, acceptgate's seccomp deny list (``seccomp.py``) as its
profile, a non-root uid (as root a host uid of its own per container), a private IPC namespace, and two small tmpfs
mounts (/sandbox, the working directory, and /tmp). Its PID 1 is the keeper (``docker/keeper.py``),
which runs the local backend's fork server (``zygote.py``) in namespaces of its own: every execution
is a fresh process in fresh namespaces and a root of its own (a tmpfs), from which no directory of
the image is reachable by name (so neither the image's nor the container's filesystem caches carry
anything between executions), and all its processes end with its init. Afterwards the keeper checks
the container's tmpfs mounts and IPC; a container the keeper cannot prove clean (or one that hit its
memory or process limit) is replaced, never reused. So nothing survives from one execution to the
next, while an execution costs a fork instead of a container start. The container's masked /proc
paths are off (each execution's new /proc needs it) and its seccomp profile leaves the mount and
namespace calls to the fork server; every runner denies them to the candidate.

Needs a reachable engine (``bash scripts/dockerd.sh start``) and the sandbox image, which is built
from this host's Python on first use when no image is named (see ``docker/image.py``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time

from acceptgate._util import affinity
from acceptgate._util.settings import env_name, settings
from acceptgate.sandbox import cgroup, residency, seccomp
from acceptgate.sandbox.backend import (
    Backend, BackendUnavailable, ExitStatus, Isolation, Limits, RunnerPipes, SandboxProcess, register,
    time_limit_text,
)
from acceptgate.sandbox.docker import engine, image as images
from acceptgate.sandbox.docker.pool import KEEPER_PROCESSES, RUNTIME_PIDS, ContainerConfig, Pool, WarmContainer
from acceptgate.sandbox.docker.stream import StreamClosed, StreamError

log = logging.getLogger(__name__)

IMAGE_ENV = env_name("sandbox_image")
MAX_USES = 500  # executions per container before it retires anyway
KILL_GRACE = 3.0  # seconds for the keeper to confirm a kill before the container itself goes

available = engine.available


class StaleContainer(BackendUnavailable):
    """A pooled container stopped answering while idle (e.g. the engine restarted)."""


class ContainerProcess(SandboxProcess):
    """One execution in a leased container, spoken to through its keeper."""

    def __init__(self, pool: Pool, wc: WarmContainer) -> None:
        self.pool = pool
        self.wc = wc
        self.stream = wc.stream
        self.report: dict | None = None  # the keeper's end-of-execution report
        self.lost = False  # the container stopped answering or died
        self._lost_oom = False
        self._kill_sent = False
        self._closed = False
        try:
            if not self.stream.idle_ok():
                raise StreamClosed("its output closed while idle")
            self._start(time.monotonic() + KILL_GRACE)
        except (TimeoutError, StreamClosed) as exc:
            self._lose()
            pool.release(wc, reusable=False)
            raise StaleContainer(f"sandbox container {wc.id[:12]} did not take the execution: {exc}") from None

    def _start(self, deadline: float) -> None:
        self.stream.send(b"S", b"", deadline)

    def _lose(self) -> None:
        """The container stopped answering: note whether the engine saw an OOM kill, then remove it."""
        if not self.lost:
            self.lost = True
            self._lost_oom = self._container_oom()
            self.wc.remove()

    def _next(self, deadline: float) -> tuple[bytes, bytes]:
        try:
            return self.stream.recv(deadline)
        except (StreamClosed, StreamError):
            self._lose()
            return b"X", b""

    def write(self, data: bytes, deadline: float) -> None:
        if self.report is not None or self.lost:
            raise BrokenPipeError("the runner has ended")
        try:
            self.stream.send(b"I", data, deadline)
        except StreamClosed:
            self._lose()
            raise BrokenPipeError("the container has ended") from None

    def read(self, deadline: float) -> bytes:
        while self.report is None and not self.lost:
            kind, payload = self._next(deadline)
            if kind == b"O":
                return payload
            if kind == b"X":
                self._finished(payload)
        return b""

    def _finished(self, payload: bytes) -> None:
        if self.lost:
            self.report = {"returncode": None, "signal": signal.SIGKILL, "oom": self._lost_oom,
                           "problems": ["container lost"]}
            return
        self.report = json.loads(payload)

    def _container_oom(self) -> bool:
        try:
            return bool(self.wc.client.api.inspect_container(self.wc.id)["State"].get("OOMKilled"))
        except Exception:  # noqa: BLE001 -- gone already (auto-removed): unknown, so no
            return False

    def cpu_seconds(self) -> float | None:
        # The container's cgroup: its keeper and fork server only wait (on the attach channel, relay)
        # while an execution runs (they clean up after its end), so this is the execution's CPU time.
        cpu = self.wc.cpu
        return cpu.seconds() if cpu is not None else None

    def run_delay(self):
        # The container's processes as the host sees them (an engine on this machine): the keeper and
        # its fork server wait while an execution runs.
        cpu = self.wc.cpu
        return cgroup.RunDelay(cpu.pids) if cpu is not None else None

    def kill(self) -> None:
        if self.report is not None or self.lost or self._kill_sent:
            return
        self._kill_sent = True
        try:
            self.stream.send(b"K", b"", time.monotonic() + KILL_GRACE)
        except (TimeoutError, StreamClosed):
            self._lose()  # the keeper cannot be reached: the container goes instead

    def wait(self, timeout: float) -> ExitStatus:
        deadline = time.monotonic() + timeout
        while self.report is None and not self.lost:
            try:
                kind, payload = self._next(deadline)
            except TimeoutError:
                if self._kill_sent:  # asked to die and did not confirm: remove the container
                    self._lose()
                    break
                return ExitStatus(returncode=None)
            if kind == b"X":
                self._finished(payload)
        if self.report is None:
            self._finished(b"")
        return self.exit_status()

    def exit_status(self) -> ExitStatus:
        r = self.report or {}
        sig = r.get("signal")
        rc = r.get("returncode")
        return ExitStatus(returncode=-sig if sig else rc, signal=sig, oom_killed=bool(r.get("oom")))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.report is None and not self.lost:
            self.kill()
            self.wait(KILL_GRACE)
        reusable = not self.lost and self.report is not None and not self.report.get("problems")
        self.pool.release(self.wc, reusable=reusable)


class DirectContainerProcess(RunnerPipes, ContainerProcess):
    """An execution whose runner holds pipes this process made (the socket channel): calls and answers
    go between the harness and the runner directly; the keeper's frames only start, kill and report."""

    def _start(self, deadline: float) -> None:
        stdin_r, stdin_w = os.pipe2(os.O_CLOEXEC)
        stdout_r, stdout_w = os.pipe2(os.O_CLOEXEC)
        self.open_pipes(stdin_w, stdout_r)
        try:
            self.stream.send(b"S", b"", deadline, fds=(stdin_r, stdout_w))
        except BaseException:
            self.close_pipes()
            raise
        finally:  # the runner's ends are the runner's alone from here on
            os.close(stdin_r)
            os.close(stdout_w)

    def write(self, data: bytes, deadline: float) -> None:
        if self.lost:
            raise BrokenPipeError("the container has ended")
        RunnerPipes.write(self, data, deadline)

    def read(self, deadline: float) -> bytes:
        # b"" once every process of the execution is gone (the keeper kills them all when the runner
        # ends), or the container with them
        return b"" if self.lost else RunnerPipes.read(self, deadline)

    def close(self) -> None:
        if not self._closed:
            try:
                super().close()
            finally:
                self.close_pipes()


class DockerBackend(Backend):
    name = "docker"

    def __init__(self, image: str | None = None, *, pool_size: int | None = None, reuse: bool = True,
                 max_uses: int = MAX_USES, fork_server: bool = True, python: str | None = None,
                 channel: str = "auto", client=None, runtime: str | None = None) -> None:
        self.client = client or engine.connect()
        self.image = image or settings().sandbox_image or self._local_image(python)
        if not images.image_exists(self.client, self.image):
            raise BackendUnavailable(f"sandbox image {self.image} not found; build it with `acceptgate "
                                     "sandbox image build` (or `--from-rootfs` without a registry)")
        self.reuse = reuse
        self.fork_server = fork_server
        self.runtime = runtime  # the engine's OCI runtime for its containers (None: the default, runc)
        self.pool = Pool(self.client, size=pool_size or os.cpu_count() or 1, max_uses=max_uses, reuse=reuse,
                         channel=channel)
        self.pool.stdlib_image = self._host_stdlib_image(python)
        self._engine = engine.describe(self.client)
        self._cpu_counted: bool | None = None
        self._server_problem = ""
        self.layers = self._layer_dirs()
        # Before the first container: pinned in memory until the process exits (one pin for every backend
        # of the process, residency.hold), or else read in and re-checked.
        self._pin = residency.hold(self.layers) if self.layers else None
        self._resident()

    @property
    def pinned(self) -> residency.Pinned | None:
        return residency.held(self._pin)

    def _layer_dirs(self) -> tuple[str, ...]:
        """The image's overlay layer directories on this host, when the harness can read them (root,
        engine on this machine): the files every container of the image reads, and shares the page
        cache of."""
        try:
            data = self.client.api.inspect_image(self.image).get("GraphDriver", {}).get("Data", {}) or {}
        except Exception:  # noqa: BLE001 -- an engine that does not say: not made resident
            return ()
        dirs = [d for key in ("UpperDir", "LowerDir") for d in (data.get(key) or "").split(":") if d]
        if not dirs or not all(os.path.isdir(d) and os.access(d, os.R_OK | os.X_OK) for d in dirs):
            return ()
        return tuple(dirs)

    def _resident(self) -> None:
        """Every page of the image's files resident (residency.py); a no-op when checked recently."""
        if self.layers and self.pinned is None:
            residency.ensure(self.layers)

    def _host_stdlib_image(self, python: str | None) -> bytes | None:
        """The fork server's standard-library image built here, when the sandbox image is this host's own
        Python (the rootfs image of exactly these files): the keeper then need not compile it."""
        from acceptgate.sandbox import stdlib_image

        try:
            if images.current_rootfs_image(self.client, python) != self.image:
                return None
            return stdlib_image.image(os.path.realpath(python or images.default_python()))
        except (images.ImageError, stdlib_image.ImageUnavailable, OSError):
            return None

    def _local_image(self, python: str | None) -> str:
        try:
            tag = images.current_rootfs_image(self.client, python)
            if tag:
                return tag
            log.warning("building the sandbox image from this host's Python (once, about a second)")
            tag, rootfs = images.build_from_rootfs(self.client, python)
        except images.ImageError as exc:
            raise BackendUnavailable(f"cannot build the sandbox image: {exc}") from None
        log.warning("built sandbox image %s (%.0f MB)", tag, rootfs.size / 1e6)
        return tag

    def spawn(self, limits: Limits) -> SandboxProcess:
        self._resident()
        config = ContainerConfig.for_limits(self.image, limits, self.fork_server, self.runtime)
        try:
            proc = self._process(self._on_callers_cpu(self.pool.acquire(config)))
        except StaleContainer:  # once: the next container is a new one if the engine restarted
            proc = self._process(self._on_callers_cpu(self.pool.acquire(config)))
        # The container's profile leaves sendmsg, socket and connect to the keeper; the runner denies
        # them to the candidate (seccomp.runner_bpf).
        proc.runner_seccomp = seccomp.runner_bpf()
        return proc

    def _process(self, wc: WarmContainer) -> ContainerProcess:
        if wc.stream.passes_descriptors:
            return DirectContainerProcess(self.pool, wc)
        return ContainerProcess(self.pool, wc)

    @staticmethod
    def _on_callers_cpu(wc: WarmContainer) -> WarmContainer:
        # The keeper, its fork server and the runner it has ready: where the calling thread runs
        # (affinity.py). The keeper finds its and the fork server's mask as the host left it at the
        # execution's start, and retires the container if the candidate changed it.
        affinity.follow(wc, wc.host_pids)
        return wc

    def warm(self, limits: Limits = Limits(), count: int | None = None) -> None:
        """Start idle containers ahead of a batch (default: one per pool slot)."""
        self.pool.warm(ContainerConfig.for_limits(self.image, limits, self.fork_server, self.runtime),
                       count or self.pool.size)

    def isolation(self, limits: Limits) -> Isolation:
        mib = 1024 * 1024
        iso = Isolation(backend=self.name)
        iso.enforced += [
            f"docker container (engine {self._engine.get('server_version')}, image {self.image}"
            + (f", runtime {self.runtime})" if self.runtime else ")"),
            "network none (loopback only, no route out)",
            f"memory {limits.memory_bytes // mib} MiB per container, swap equal (OOM kill -> memory)",
            f"pids limit {limits.processes} for the candidate ({limits.processes + KEEPER_PROCESSES} per "
            "container with the keeper and its fork server)",
            "read-only root filesystem",
            "all capabilities dropped",
            "no-new-privileges",
            ("non-root host uid of its own per container (from this harness's claimed block)"
             if self.pool_uids() else "non-root uid 65534 (the same for every container: not root here)"),
            "private IPC namespace, no /dev/shm",
            f"tmpfs /sandbox (cwd) and /tmp, {limits.file_bytes // mib} MiB each, emptied and checked "
            "after every execution",
            ("fork server (the local backend's, zygote.py) started by a non-dumpable PID 1 keeper in user, mount, "
             "pid, network, ipc and uts namespaces of its own before any execution: every execution a fresh "
             "process in fresh user, pid, mount, ipc and uts namespaces and a root of its own (a tmpfs: /proc of "
             "its pid namespace, pids only; /sandbox, /tmp, /dev/shm; five device nodes), no directory of the "
             "image reachable by name, the standard library from memory; pid 1 of the execution ends with the "
             "runner and takes every process left with it"
             if self.fork_server and not self.fork_server_problem() else
             "fresh runner process per execution (fork + exec by a non-dumpable PID 1 keeper); every other "
             "process killed afterwards"),
            "empty environment",
            f"rlimit address space {limits.memory_bytes // mib} MiB beyond the runner's own, cpu {limits.cpu_seconds} s, "
            f"file size {limits.file_bytes // mib} MiB, open files {limits.open_files}, no core",
            time_limit_text(limits, "the container's cgroup, read by the harness on the host"
                            if self.cpu_counted() else ""),
        ]
        if any(opt.startswith("name=seccomp") for opt in self._engine.get("security_options", [])):
            iso.enforced.append(seccomp.describe() + " (acceptgate's profile, in place of the engine's default)")
        else:
            iso.not_enforced.append("seccomp (the engine reports no seccomp support)")
        if self.pinned is not None:
            iso.enforced.append(
                f"page cache of the image's files: all {self.pinned.bytes // mib} MiB of its layers mapped and "
                "locked in memory by the harness before the first container, until the harness exits, "
                "so no execution can load a page another one could see, nor anyone evict one")
        elif self.layers:
            iso.enforced.append(
                "page cache of the image's files: every file of its layers read in by the harness before the "
                f"first container and re-checked every {residency.REFRESH_SECONDS:g} s, so no execution can "
                "load a page another one could see, nor evict one (the evicting and probing calls are denied)")
        else:
            iso.not_enforced.append(
                "page cache residency of the image's files (the harness cannot read the engine's layer "
                "directories: a read by one execution can load pages whose read time a later one measures)")
        if self.pool.channel_in_use == "socket":
            iso.notes.append("keeper channel: a unix socket bind-mounted read-only, connected to by the keeper "
                             "before any execution and then removed by the harness (no name left to connect "
                             "to); each runner holds pipes the harness made, passed with the start frame")
        else:
            iso.notes.append("keeper channel: the container's stdin/stdout through the engine's attach")
        if self.runtime in RUNTIME_PIDS:
            iso.not_enforced.append(f"process cap per execution (runtime {self.runtime}: the container's pids limit "
                                    "counts the runtime's own threads, not the sandboxed processes)")
        if not self.fork_server or self.fork_server_problem():
            why = self.fork_server_problem() or "not requested"
            iso.not_enforced.append(f"a root of its own per execution (no fork server: {why}): executions of a "
                                    "container share its filesystem, and all of them the image's layers and "
                                    "their kernel caches (dentries, page cache)")
        if self.reuse:
            iso.notes.append(f"warm containers reused up to {self.pool.max_uses} executions when the "
                             "keeper proves them clean; a container that hit a limit is replaced")
            iso.notes.append("kernel counters of a container (pid numbers, cgroup usage peaks) are not "
                             "reset between the executions it serves")
        else:
            iso.notes.append("one container per execution")
        return iso

    def cpu_counted(self) -> bool:
        """Can the harness read a container's CPU counter here (an engine on this machine)?"""
        self._look()
        return self._cpu_counted

    def fork_server_problem(self) -> str:
        """Why a container's keeper runs no fork server ("" when it does, or none was asked for)."""
        if not self.fork_server:
            return ""
        self._look()
        return self._server_problem

    def _look(self) -> None:
        if self._cpu_counted is None:  # one container looked at (then kept warm in the pool)
            wc = self.pool.acquire(ContainerConfig.for_limits(self.image, Limits(), self.fork_server, self.runtime))
            self._cpu_counted = wc.cpu is not None
            self._server_problem = "" if wc.hello.get("fork_server") else (
                wc.hello.get("fork_server_problem") or "the keeper started none")
            self.pool.release(wc, reusable=True)

    @staticmethod
    def pool_uids() -> bool:
        from acceptgate.sandbox.docker.pool import _uid_pool

        return _uid_pool() is not None

    def close(self) -> None:
        self.pool.close()
        pin, self._pin = self._pin, None
        residency.release(pin)
        try:
            self.client.close()
        except Exception:  # noqa: BLE001
            pass


register("docker", DockerBackend)
