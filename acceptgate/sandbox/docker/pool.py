"""Warm sandbox containers: creation with every restriction, leasing, reuse and removal.

A container runs the keeper as PID 1 and serves one execution at a time. After an execution the
keeper reports whether it left the container as it found it (no other process, empty tmpfs mounts,
no IPC objects, no memory or process limit hit); only then does the container go back to the pool,
else it is removed and a fresh one started in the background. A container also retires after
``max_uses`` executions. Containers are started with ``auto_remove``: if this process dies, the
keeper's input closes (the engine's attach, or the socket whose other end this process held), the
keeper ends, and the container disappears.

The keeper's channel (``CHANNELS``): ``socket`` -- a unix socket this process listens on in a directory
of its own and bind-mounts read-only; the keeper connects before any execution exists, then this
process accepts that one connection and removes the name, so no later process of the container can
connect. Each execution's runner then gets a pair of pipes this process made (passed with the start
frame): calls and answers go between the harness and the runner with no keeper and no engine in
between. It needs an engine on this machine (the directory is bind-mounted by path) and a harness that
can give the socket to the container's uid (root). ``attach`` -- the container's stdin/stdout through
the engine's attach socket: any engine; the keeper relays every call and answer, one more hop each way
through the engine. ``auto`` takes ``socket`` where it can and falls back to ``attach`` when the engine
cannot mount the directory (an engine on another machine or in another mount namespace).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import struct
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources

from acceptgate._util import affinity
from acceptgate.sandbox import seccomp
from acceptgate.sandbox.backend import PRELOAD, BackendUnavailable, Limits, runner_source
from acceptgate.sandbox.stdlib_image import EXTENSIONS_SKIPPED
from acceptgate.sandbox.docker.stream import KeeperStream, StreamClosed, StreamError
from acceptgate._util.interrupt import pid_alive

log = logging.getLogger(__name__)

LABEL = "acceptgate.sandbox"
SANDBOX_USER = "65534:65534"
START_TIMEOUT = 20.0  # seconds for a new container's keeper to say hello
REMOVE_TIMEOUT = 10.0  # seconds to wait for a container whose removal the engine had already begun
KEEPER_FLAGS = ["-I", "-S", "-B", "-c"]
KEEPER_PROCESSES = 2  # the keeper (PID 1) and its fork server
# A runtime whose own threads the container's pids limit counts: gVisor's runsc (its Sentry and gofer
# run in the container's cgroup; the sandboxed processes are its tasks, not the host's, so that limit
# caps none of them: DockerBackend.isolation names it)
RUNTIME_PIDS = {"runsc": 128}
CHANNELS = ("auto", "socket", "attach")
SOCKET_DIR = "/run/acceptgate-keeper"  # where the keeper finds the socket, inside the container
UNIX_PATH_MAX = 108  # sun_path, the terminating NUL included
STDLIB_IMAGE = "stdlib.image"  # beside the keeper's socket: the fork server's image (keeper.py reads it)


def keeper_source() -> str:
    return resources.files("acceptgate.sandbox.docker").joinpath("keeper.py").read_text("utf-8")


def zygote_source() -> str:
    return resources.files("acceptgate.sandbox").joinpath("zygote.py").read_text("utf-8")


@dataclass(frozen=True)
class ContainerConfig:
    """What a container is created with; executions with the same config can share containers."""

    image: str
    memory_bytes: int
    pids: int
    tmpfs_bytes: int
    fork_server: bool = True
    runtime: str | None = None  # the engine's OCI runtime (None: its default, runc); e.g. gVisor's "runsc"

    @classmethod
    def for_limits(cls, image: str, limits: Limits, fork_server: bool = True,
                   runtime: str | None = None) -> "ContainerConfig":
        # The candidate gets limits.processes (its runner included); the keeper and its fork server
        # take the rest.
        pids = max(limits.processes + KEEPER_PROCESSES, RUNTIME_PIDS.get(runtime or "", 0))
        return cls(image=image, memory_bytes=limits.memory_bytes, pids=pids,
                   tmpfs_bytes=limits.file_bytes, fork_server=fork_server, runtime=runtime)

    def host_config(self, api, uid: int = 65534, mounts: list | None = None) -> dict:
        size = self.tmpfs_bytes
        config = api.create_host_config(
            mounts=mounts,
            network_mode="none",
            mem_limit=self.memory_bytes,
            memswap_limit=self.memory_bytes,  # equal: no swap beyond the limit
            pids_limit=self.pids,
            read_only=True,
            cap_drop=["ALL"],
            # acceptgate's deny list (seccomp.py) in place of the engine's default profile
            security_opt=["no-new-privileges", "seccomp=" + seccomp.docker_profile()],
            ipc_mode="none",  # a private IPC namespace and no /dev/shm
            tmpfs={
                "/sandbox": f"rw,nosuid,nodev,noexec,size={size},uid={uid},gid={uid},mode=0700",
                "/tmp": f"rw,nosuid,nodev,noexec,size={size},mode=1777",
            },
            auto_remove=True,
            runtime=self.runtime,
        )
        if self.fork_server:
            # The engine's masked /proc paths off (as `--security-opt systempaths=unconfined`): the kernel
            # refuses a new /proc (each execution's) in a user namespace while another one is partly
            # covered. Only the keeper and the fork server see the container's /proc; no candidate does.
            config["MaskedPaths"] = []
            config["ReadonlyPaths"] = []
        return config


def _local_socket(client) -> bool:
    base = str(getattr(client.api, "base_url", ""))
    return base.startswith(("http+docker://localhost", "http+unix://", "unix://"))


def _cpu_counter(api, container_id: str):
    """The CPU-time counter of the container's cgroup, as the host sees it (the engine on this
    machine): every process of the container, counted by the kernel where nothing inside reaches."""
    from acceptgate.sandbox import cgroup

    try:
        pid = int(api.inspect_container(container_id)["State"]["Pid"])
    except Exception:  # noqa: BLE001 -- an engine that does not say: no counter
        return None
    return cgroup.counter_for_pid(pid, must_contain=container_id) if pid > 0 else None


def _uid_pool():
    """The per-slot uid allocator of this harness process (None when not root or none is free)."""
    from acceptgate.sandbox import hostprobe
    from acceptgate.sandbox.uidslots import slot_pool

    caps = hostprobe.probe()
    return slot_pool(caps.uid_slots) if caps.uid_slots else None


class MountRefused(BackendUnavailable):
    """The engine cannot bind-mount this process's socket directory (it runs elsewhere)."""


class SocketChannel:
    """The host's side of a keeper's socket, from before the container exists to the keeper's hello."""

    NAME = "keeper.sock"

    def __init__(self, uid: int) -> None:
        self.uid = uid
        self.dir = tempfile.mkdtemp(prefix="acceptgate-keeper-")
        self.listener: socket.socket | None = None
        if len(os.fsencode(os.path.join(self.dir, self.NAME))) >= UNIX_PATH_MAX:
            self.close()  # a long TMPDIR: auto takes attach (as for an engine that cannot mount it)
            raise MountRefused(f"the keeper's socket path under {tempfile.gettempdir()} is longer than a "
                               "unix socket address allows")
        try:
            os.chmod(self.dir, 0o711)  # the keeper's uid passes through; nobody else lists or writes it
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            path = os.path.join(self.dir, self.NAME)
            self.listener.bind(path)
            os.chown(path, uid, uid)  # the container's uid alone may connect (and root)
            os.chmod(path, 0o600)
            self.listener.listen(1)
        except OSError:
            self.close()
            raise

    def put(self, name: str, data: bytes) -> None:
        """A file beside the socket, readable by the keeper before it connects (removed with the rest)."""
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o644)

    def mount(self):
        import docker.types

        return docker.types.Mount(SOCKET_DIR, self.dir, type="bind", read_only=True)

    @classmethod
    def argv(cls) -> str:
        return f"socket:{SOCKET_DIR}/{cls.NAME}"

    def accept(self, deadline: float) -> KeeperStream:
        """The keeper's one connection (it connects before it says hello); then no name is left for any
        process to connect to, and no listener."""
        self.listener.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            conn, _ = self.listener.accept()
        except socket.timeout:
            raise TimeoutError("the keeper did not connect") from None
        finally:
            self.close()
        try:
            # SO_PEERCRED: the peer's pid, uid and gid as the kernel saw them at connect()
            _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                            struct.calcsize("3i")))
            if uid != self.uid:
                raise StreamError(f"the keeper's socket was connected by uid {uid}, not {self.uid}")
        except BaseException:
            conn.close()
            raise
        return KeeperStream.over_socket(conn)

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        shutil.rmtree(self.dir, ignore_errors=True)


def _mount_refused(exc) -> bool:
    text = str(getattr(exc, "explanation", "") or exc)
    return "bind source path" in text or ("mount" in text.lower() and "no such file" in text.lower())


class WarmContainer:
    """One started container with its keeper on the other end of the channel (socket or attach)."""

    def __init__(self, client, config: ContainerConfig, channel: str = "attach",
                 stdlib_image: bytes | None = None) -> None:
        self.client = client
        # The fork server's standard-library image, where the harness built it for this very interpreter
        # (the rootfs image of its own Python): handed over beside the socket, so that the keeper need
        # not compile the standard library at every container start (None: the keeper builds it).
        self.stdlib_image = stdlib_image
        self.config = config
        self.channel = channel
        self.channel_dir: str | None = None  # socket: the host directory of its socket (gone once started)
        self.uses = 0
        self.id = ""
        self.stream: KeeperStream | None = None
        self.hello: dict = {}
        self.cpu = None  # the container cgroup's CPU counter, read on the host (None: not readable here)
        # A host uid of its own while it lives (root: from this harness's claimed block), so that
        # containers running at once share no per-user kernel state (pipe-buffer and key quotas).
        self._uids = _uid_pool()
        self.uid = self._uids.acquire(timeout=START_TIMEOUT) if self._uids is not None else 65534
        self._start()

    def _start(self) -> None:
        import docker.errors

        api = self.client.api
        command = ["python3", *KEEPER_FLAGS, keeper_source(), runner_source().decode("utf-8")]
        if self.config.fork_server:  # the local backend's fork server (zygote.py), inside the container
            command += ["fork", zygote_source(), seccomp.bpf().hex(), str(self.config.tmpfs_bytes),
                        ",".join(PRELOAD), ",".join(sorted(EXTENSIONS_SKIPPED))]
        else:
            command.append("exec")
        channel = None
        try:
            if self.channel == "socket":
                channel = SocketChannel(self.uid)
                self.channel_dir = channel.dir
                command.append(channel.argv())
                if self.stdlib_image and self.config.fork_server:
                    channel.put(STDLIB_IMAGE, self.stdlib_image)
            created = api.create_container(
                self.config.image, command=command, user=f"{self.uid}:{self.uid}", working_dir="/sandbox",
                environment={}, hostname="sandbox", tty=False,
                # attach: the SDK sets StdinOnce for this pair; socket: no stdin, nothing attached
                stdin_open=channel is None, detach=channel is not None,
                labels={LABEL: "pool", f"{LABEL}.owner": f"{os.uname().nodename}:{os.getpid()}"},
                host_config=self.config.host_config(api, self.uid, [channel.mount()] if channel else None),
            )
            self.id = created["Id"]
            deadline = time.monotonic() + START_TIMEOUT
            if channel is None:  # attach before start (as `docker run -i` does) so no output is lost
                sock = api.attach_socket(self.id, params={"stdin": 1, "stdout": 1, "stderr": 0, "stream": 1})
                self.stream = KeeperStream.attach(sock)
            api.start(self.id)
            if channel is not None:
                self.stream = channel.accept(deadline)
            kind, payload = self.stream.recv(deadline)
        except MountRefused:  # before anything was made (the socket's path)
            self._abandon(None)
            raise
        except docker.errors.ImageNotFound:
            self._abandon(channel)
            raise BackendUnavailable(f"sandbox image {self.config.image} not found; build it with "
                                     "`acceptgate sandbox image build --from-rootfs`") from None
        except docker.errors.APIError as exc:
            self._abandon(channel)
            if channel is not None and _mount_refused(exc):
                raise MountRefused(f"the engine cannot mount the keeper's socket directory: {exc}") from None
            raise BackendUnavailable(f"sandbox container did not start: {exc}") from None
        except (OSError, StreamClosed, StreamError, TimeoutError) as exc:
            self._abandon(channel)
            raise BackendUnavailable(f"sandbox container did not start: {exc or type(exc).__name__}") from None
        if kind != b"H":
            self.remove()
            raise BackendUnavailable(f"sandbox keeper sent {kind!r} instead of hello")
        self.hello = json.loads(payload)
        self.cpu = _cpu_counter(api, self.id)

    def _abandon(self, channel: SocketChannel | None) -> None:
        if channel is not None:
            channel.close()
        self.remove()

    def host_pids(self) -> list[int]:
        """The container's processes as this host sees them (none when its engine is elsewhere)."""
        return self.cpu.pids() if self.cpu is not None else []

    @property
    def keeper_protected(self) -> bool:
        """The keeper made itself non-dumpable: a candidate cannot ptrace it, so reuse is safe."""
        return self.hello.get("dumpable") is False

    def remove(self) -> None:
        """Kill and remove the container (idempotent; auto_remove may already be under way)."""
        import docker.errors

        if self.stream is not None:
            self.stream.close()
        if self.cpu is not None:
            self.cpu.close()
            self.cpu = None
        if self.id:
            try:
                self.client.api.remove_container(self.id, force=True)
            except docker.errors.NotFound:
                pass  # gone already
            except docker.errors.APIError:  # its auto-removal is in progress: gone once this returns
                try:
                    self.client.api.wait(self.id, timeout=REMOVE_TIMEOUT, condition="removed")
                except Exception:  # noqa: BLE001 -- gone meanwhile (not found), or the engine is
                    pass
            except Exception:  # noqa: BLE001 -- the engine itself is gone: so is the container
                pass
        if self._uids is not None:
            uids, self._uids = self._uids, None
            uids.release(self.uid)


class Pool:
    """At most ``size`` live containers; idle ones are reused for the same ContainerConfig."""

    def __init__(self, client, *, size: int, max_uses: int, reuse: bool = True, channel: str = "auto") -> None:
        if channel not in CHANNELS:
            raise ValueError(f"channel must be one of {', '.join(CHANNELS)}, not {channel!r}")
        self.client = client
        self.channel = channel
        # auto: the socket when this process can give it to a container's uid and the engine listens on
        # a unix socket (on this machine); the first refused mount turns it to attach for good.
        self._channel = channel if channel != "auto" else (
            "socket" if os.geteuid() == 0 and _local_socket(client) else "attach")
        self.size = max(1, size)
        self.max_uses = max_uses if reuse else 1
        self.reuse = reuse
        self._idle: list[WarmContainer] = []
        self._live = 0  # busy + idle + starting
        self._cond = threading.Condition()
        self._background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="acceptgate-docker",
                                              initializer=affinity.unpin)  # perhaps started by a pinned worker
        self._closed = False
        self.started = 0
        self.retired = 0
        self.stdlib_image: bytes | None = None  # see WarmContainer (DockerBackend sets it)

    def acquire(self, config: ContainerConfig, timeout: float = 120.0) -> WarmContainer:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    raise BackendUnavailable("the docker backend was closed")
                for i, wc in enumerate(self._idle):
                    if wc.config == config:
                        return self._idle.pop(i)
                if self._live < self.size:
                    self._live += 1
                    break
                if self._idle:  # full of containers for other limits: make room
                    victim = self._idle.pop(0)
                    self._live -= 1
                    self._background.submit(victim.remove)
                    continue
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise BackendUnavailable(f"no sandbox container free within {timeout:g} s")
        try:
            return self._new(config)
        except BaseException:
            with self._cond:
                self._live -= 1
                self._cond.notify()
            raise

    @property
    def channel_in_use(self) -> str:
        return self._channel

    def _new(self, config: ContainerConfig) -> WarmContainer:
        try:
            wc = WarmContainer(self.client, config, self._channel, self.stdlib_image)
        except MountRefused as exc:
            if self.channel != "auto":
                raise
            log.warning("keeper channel: attach (%s)", exc)
            self._channel = "attach"
            wc = WarmContainer(self.client, config, self._channel)
        with self._cond:
            self.started += 1
        return wc

    def release(self, wc: WarmContainer, reusable: bool) -> None:
        wc.uses += 1
        keep = reusable and self.reuse and wc.keeper_protected and wc.uses < self.max_uses
        with self._cond:
            if keep and not self._closed:
                self._idle.append(wc)
                self._cond.notify()
                return
            self._live -= 1
            self.retired += 1
            self._cond.notify()
            closed = self._closed
        try:
            if closed:
                raise RuntimeError("pool closed")
            self._background.submit(wc.remove)
        except RuntimeError:  # closed (perhaps just now): remove it here
            wc.remove()
            return
        if self.reuse:  # a fresh container for the next execution, started while this one goes
            try:
                self._background.submit(self._prewarm, wc.config)
            except RuntimeError:
                pass

    def _prewarm(self, config: ContainerConfig) -> None:
        with self._cond:
            if self._closed or self._live >= self.size:
                return
            self._live += 1
        try:
            wc = self._new(config)
        except BackendUnavailable as exc:
            log.warning("could not start a replacement sandbox container: %s", exc)
            with self._cond:
                self._live -= 1
                self._cond.notify()
            return
        self._add_idle(wc)

    def _add_idle(self, wc: WarmContainer) -> None:
        with self._cond:
            if self._closed:
                self._live -= 1
            else:
                self._idle.append(wc)
                self._cond.notify()
                return
        wc.remove()

    def warm(self, config: ContainerConfig, count: int) -> None:
        """Start up to ``count`` idle containers now (in parallel), so first executions do not wait."""
        futures = [self._background.submit(self._prewarm, config) for _ in range(count)]
        for f in futures:
            f.result()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._live -= len(idle)
            self._cond.notify_all()
        self._background.shutdown(wait=True)
        for wc in idle:
            wc.remove()


def remove_stale(client, *, everything: bool = False) -> int:
    """Remove sandbox containers whose owner process is gone (all of ours with ``everything``)."""
    import docker.errors

    host = os.uname().nodename
    removed = 0
    # Another process's pool may remove its containers between the listing and their inspection.
    for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        owner = c.labels.get(f"{LABEL}.owner", "")
        node, _, pid = owner.partition(":")
        alive = node == host and pid.isdigit() and pid_alive(int(pid))
        if everything or not alive:
            try:
                c.remove(force=True)
                removed += 1
            except docker.errors.APIError:
                pass
    return removed
