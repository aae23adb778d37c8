"""Prerequisites: a reachable Docker engine (and the docker SDK to talk to it)."""

from __future__ import annotations

from acceptgate.sandbox.backend import BackendUnavailable

SDK_VERSION = "7.1.0"
START_HINT = ("start one with `bash scripts/dockerd.sh start` (installs Debian's docker.io if dockerd "
              "is missing; needs root), or set DOCKER_HOST to a running engine")
CONNECT_TIMEOUT = 10  # seconds per API call; image import and container start stay well below


def _sdk():
    try:
        import docker
    except ImportError:
        raise BackendUnavailable(f"the docker SDK is not installed: pip install docker=={SDK_VERSION}") from None
    return docker


def connect(timeout: int = CONNECT_TIMEOUT):
    """A client for the engine named by the environment (DOCKER_HOST or the default socket)."""
    docker = _sdk()
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BackendUnavailable(f"no Docker engine reachable ({_short(exc)}); {START_HINT}") from None
    return client


def available() -> tuple[bool, str]:
    """Whether an engine answers here, and a one-line reason either way."""
    try:
        client = connect(timeout=5)
    except BackendUnavailable as exc:
        return False, str(exc)
    try:
        version = client.version().get("Version", "?")
        return True, f"Docker engine {version} at {client.api.base_url}"
    finally:
        client.close()


def describe(client) -> dict:
    info = client.info()
    return {
        "server_version": info.get("ServerVersion"),
        "storage_driver": info.get("Driver"),
        "cgroup_version": info.get("CgroupVersion"),
        "security_options": info.get("SecurityOptions", []),
        "default_runtime": info.get("DefaultRuntime"),
        "api": client.api.base_url,
    }


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) < 200 else text[:197] + "..."
