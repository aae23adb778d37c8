"""Every Dask cluster acceptgate uses authenticates with mutual TLS.

A real cluster started as docs/orchestration.md ("Scale-out on Dask") writes it (``dask scheduler`` and ``dask worker`` with
the files of ``acceptgate dask credentials``, on 127.0.0.1): a plain-TCP client, a client whose
certificate another CA signed, a self-signed one and a TLS client with no certificate are all refused by
the scheduler and by the worker's own listener, and the client with the right certificate runs work. The
LocalCluster of ``--dask N`` listens on loopback, TLS only, under a CA of its own; the CLI refuses a
``tcp://`` scheduler and a TLS one without credentials before any work.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acceptgate.pipelines import clustertls, daskcluster
from acceptgate.pipelines.daskcluster import DaskCluster, DaskTLS
from acceptgate._util.errors import InvalidInput

START_SECONDS = 120  # a process start on a loaded 2-core machine
REFUSED_WITHIN = 20  # seconds a refused client may take to give up


def _readme_command(role: str) -> tuple[dict[str, str], list[str]]:
    """The documented cluster command for ``role`` (its code block, continuation lines joined): the
    environment it sets and its words."""
    lines = (Path(__file__).resolve().parents[1] / "docs" / "orchestration.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.search(rf"(^|\s)dask {role} ", line.strip()))
    while start > 0 and lines[start - 1].rstrip().endswith("\\") and not lines[start - 1].startswith("#"):
        start -= 1
    text, i = "", start
    while True:
        text += lines[i].strip().rstrip("\\") + " "
        if not lines[i].rstrip().endswith("\\"):
            break
        i += 1
    words = shlex.split(text)
    env = dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_]+=", w))
    return env, [w for w in words if not re.match(r"^[A-Z_]+=", w)]


@pytest.fixture(scope="module")
def creds(tmp_path_factory) -> Path:
    return clustertls.write_credentials(tmp_path_factory.mktemp("tls") / "creds")


@pytest.fixture(scope="module")
def other_creds(tmp_path_factory) -> Path:
    """A second, unrelated CA and its certificates."""
    return clustertls.write_credentials(tmp_path_factory.mktemp("tls-other") / "creds")


def _start(command: tuple[dict[str, str], list[str]], log: Path) -> subprocess.Popen:
    env, args = command
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=out, stderr=subprocess.STDOUT,
                                cwd=log.parent, env={**os.environ, **env}, start_new_session=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def _substitute(command: tuple[dict[str, str], list[str]], creds: Path, role: str, scheduler: str = "",
                extra: tuple[str, ...] = ()) -> tuple[dict[str, str], list[str]]:
    """The documented command's placeholders filled in: DIR, the scheduler's address, SCHEDULER = 127.0.0.1,
    and port 0 (a free one) for the scheduler."""
    env, words = command
    filled = [w.replace("DIR/", f"{creds}/").replace("tls://SCHEDULER:8786", scheduler) for w in words[2:]]
    filled = ["127.0.0.1" if w == "SCHEDULER" else w for w in filled]
    if role == "scheduler":
        filled[filled.index("--port") + 1] = "0"
    return env, [role, *filled, *extra]


@pytest.fixture(scope="module")
def cluster(creds, tmp_path_factory):
    """``dask scheduler`` and one ``dask worker`` (no nanny: its listener is the worker's) as the docs
    starts them; yields (scheduler address, worker address)."""
    from distributed import Client

    root = tmp_path_factory.mktemp("tls-cluster")
    info = root / "scheduler.json"
    procs = [_start(_substitute(_readme_command("scheduler"), creds, "scheduler",
                                extra=("--scheduler-file", str(info))), root / "scheduler.log")]
    try:
        deadline = time.monotonic() + START_SECONDS
        while not info.exists() or not info.read_text().strip():
            assert procs[0].poll() is None, (root / "scheduler.log").read_text()
            assert time.monotonic() < deadline, (root / "scheduler.log").read_text()
            time.sleep(0.2)
        time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tls://127.0.0.1:"), address
        (root / "w").mkdir()
        procs.append(_start(_substitute(_readme_command("worker"), creds, "worker", address,
                                        extra=("--no-nanny", "--host", "127.0.0.1")), root / "w" / "worker.log"))
        with Client(address, security=_security(creds), timeout=START_SECONDS) as client:
            client.wait_for_workers(1, timeout=START_SECONDS)
            info = client.scheduler_info()
        worker = next(iter(info["workers"]))
        http = [info["services"]["dashboard"], info["workers"][worker]["services"]["dashboard"]]
        yield address, worker, http
    finally:
        _stop(procs)


def _info_pages_served(ports: list[int]) -> dict[int, int]:
    """HTTP status of each node's worker list (info pages) and health check, by port: 404 means not served."""
    import urllib.error
    import urllib.request

    out = {}
    for port in ports:
        for path in ("/info/main/workers.html", "/json/counts.json", "/metrics", "/health"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=REFUSED_WITHIN) as r:
                    out[(port, path)] = r.status
            except urllib.error.HTTPError as exc:
                out[(port, path)] = exc.code
    return out


def _assert_health_only(ports: list[int]) -> None:
    served = _info_pages_served(ports)
    assert all(code == (200 if path == "/health" else 404) for (_, path), code in served.items()), served


def _security(creds: Path, role: str = "client"):
    from distributed.security import Security

    files = clustertls.role_files(creds, role)
    return Security(require_encryption=True, tls_ca_file=str(files.ca_file), tls_client_cert=str(files.cert),
                    tls_client_key=str(files.key))


def _identity(address: str, security=None):
    """Ask the node at ``address`` who it is, over Dask's own protocol (what any client, or an attacker
    reading a worker's data, does first): its answer, or what refused the connection."""
    import asyncio

    from distributed.comm import connect

    async def ask():
        args = security.get_connection_args("client") if security is not None else {}
        comm = await connect(address, timeout=REFUSED_WITHIN, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await asyncio.wait_for(comm.read(), REFUSED_WITHIN)
        finally:
            comm.abort()

    try:
        return asyncio.run(ask())
    except Exception as exc:  # noqa: BLE001  (whatever the refusal raised)
        return f"{type(exc).__name__}: {exc}"


def _refused(address: str, security=None) -> str:
    answer = _identity(address, security)
    assert isinstance(answer, str), f"a node answered a client without the cluster's credentials: {answer}"
    return answer


def _tls_handshake_without_certificate(address: str, ca_file: Path) -> str:
    """A TLS client that trusts the cluster's CA but presents no certificate of its own."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(ca_file))
    ctx.check_hostname = False
    try:
        with socket.create_connection((host, int(port)), timeout=REFUSED_WITHIN) as raw:
            with ctx.wrap_socket(raw) as tls:
                tls.sendall(b"\x00" * 64)
                data = tls.recv(1)  # TLS 1.3: the server's refusal of the missing certificate arrives here
        return f"closed after {data!r}" if not data else pytest.fail(f"the server answered: {data!r}")
    except (ssl.SSLError, ConnectionError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"


def test_the_right_certificate_runs_work(cluster, creds):
    from distributed import Client

    address, _, http = cluster
    with Client(address, security=_security(creds), timeout=START_SECONDS) as client:
        assert client.submit(lambda x: x + 1, 41).result(timeout=START_SECONDS) == 42
    _assert_health_only(http)  # no node serves its worker list, tasks, logs or metrics


@pytest.mark.parametrize("target", ["scheduler", "worker"])
def test_clients_without_the_credentials_are_refused(cluster, creds, other_creds, target):
    from distributed.security import Security

    address = cluster[0] if target == "scheduler" else cluster[1]
    assert address.startswith("tls://")
    assert _identity(address, _security(creds))["type"] == target.title()  # the right certificate: an answer
    reasons = {
        "plain tcp": _refused(address.replace("tls://", "tcp://", 1)),
        "another CA's certificate": _refused(address, _security(other_creds)),
        "a self-signed certificate": _refused(address, Security.temporary()),
        "no certificate": _tls_handshake_without_certificate(address, clustertls.role_files(creds, "client").ca_file),
    }
    assert all(reasons.values()), reasons


def test_the_local_cluster_listens_on_loopback_with_tls_only(other_creds):
    """``--dask N``'s LocalCluster: every listener is tls:// on 127.0.0.1, and clients without its own
    in-memory credentials are refused."""
    from acceptgate.flows import dask_runner

    with dask_runner.task_runner(DaskCluster(workers=1)) as runner:
        client = runner.client
        client.wait_for_workers(1, timeout=START_SECONDS)
        address = client.scheduler.address
        workers = list(client.scheduler_info()["workers"])
        assert address.startswith("tls://127.0.0.1:") and workers and all(
            w.startswith("tls://127.0.0.1:") for w in workers), (address, workers)
        assert client.submit(lambda: "ran", pure=False).result(timeout=START_SECONDS) == "ran"  # its own client works
        for target in (address, workers[0]):
            assert _refused(target.replace("tls://", "tcp://", 1))
            assert _refused(target, _security(other_creds))
        info = client.scheduler_info()
        _assert_health_only([info["services"]["dashboard"],
                             *(w["services"]["dashboard"] for w in info["workers"].values())])


def test_a_scheduler_without_tls_or_credentials_is_refused_before_any_work(creds, tmp_path):
    ca, cert, key = (str(p) for p in (clustertls.role_files(creds, "client").ca_file,
                                       clustertls.role_files(creds, "client").cert,
                                       clustertls.role_files(creds, "client").key))
    with pytest.raises(InvalidInput, match="not a TLS address"):
        daskcluster.parse("tcp://127.0.0.1:8786", tls_ca_file=ca, tls_cert=cert, tls_key=key)
    with pytest.raises(InvalidInput, match="not a TLS address"):
        daskcluster.parse("127.0.0.1:8786", tls_ca_file=ca, tls_cert=cert, tls_key=key)
    with pytest.raises(InvalidInput, match="needs the client credentials"):
        daskcluster.parse("tls://127.0.0.1:8786")
    with pytest.raises(InvalidInput, match="all three"):
        daskcluster.parse("tls://127.0.0.1:8786", tls_ca_file=ca)
    with pytest.raises(InvalidInput, match="not found"):
        daskcluster.parse("tls://127.0.0.1:8786", tls_ca_file=ca, tls_cert=cert, tls_key=str(tmp_path / "none"))
    with pytest.raises(InvalidInput, match="local cluster makes its own"):
        daskcluster.parse("2", tls_ca_file=ca, tls_cert=cert, tls_key=key)
    for bad in ("0", "", "-1"):
        with pytest.raises(InvalidInput, match="at least 1 worker"):
            daskcluster.parse(bad)
    good = daskcluster.parse("tls://127.0.0.1:8786", tls_ca_file=ca, tls_cert=cert, tls_key=key)
    assert good == DaskCluster(address="tls://127.0.0.1:8786", tls=DaskTLS(ca_file=ca, cert=cert, key=key))
    assert daskcluster.parse(good.model_dump()) == good  # a deployment's parameter, as a mapping
    assert daskcluster.parse("3") == DaskCluster(workers=3)
    # the command line: exit 2 naming --dask, before any input is read
    out = subprocess.run([sys.executable, "-m", "acceptgate.cli", "score", "--suites", str(tmp_path), "--samples",
                          str(tmp_path / "none.jsonl"), "--suite", "hidden", "--dask", "tcp://127.0.0.1:8786"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--dask" in out.stderr and "not a TLS address" in out.stderr, out.stderr


def test_credentials_are_private_and_never_overwritten(creds, tmp_path):
    assert oct(creds.stat().st_mode & 0o777) == "0o700"
    for role in clustertls.ROLES:
        files = clustertls.role_files(creds, role)
        assert oct(files.key.stat().st_mode & 0o777) == "0o600"
        assert files.cert.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert not any(p.name.startswith("ca-key") for p in creds.iterdir())  # the CA's key is not kept
    before = {p.name: p.read_bytes() for p in creds.iterdir()}
    from acceptgate.cli import main

    assert main(["dask", "credentials", "--out", str(creds)]) == 2
    assert {p.name: p.read_bytes() for p in creds.iterdir()} == before
    blocked = tmp_path / "file"
    blocked.write_text("x")
    assert main(["dask", "credentials", "--out", str(blocked / "sub")]) == 2
    assert main(["dask", "credentials", "--out", str(tmp_path / "new"), "--days", "0"]) == 2
    assert not (tmp_path / "new").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["file"]
