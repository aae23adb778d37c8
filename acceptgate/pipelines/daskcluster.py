"""Where a sharded stage runs on Dask (``--dask N|ADDRESS``): a LocalCluster of N workers that this
process starts, or an existing scheduler at a ``tls://`` address with the client credentials to reach
it. Prefect-free and Dask-free: ``flows/dask_runner.py`` turns it into a DaskTaskRunner.

Every cluster authenticates. A LocalCluster listens on loopback with mutual TLS under a CA made for the
run (distributed's ``Security.temporary()``, in memory): no other process can connect to it. An
existing scheduler must speak TLS, and this client presents a certificate its CA signed
(``acceptgate dask credentials``; docs/orchestration.md): a plain ``tcp://`` scheduler accepts
anyone who can reach its port -- read the shards' hidden suites, rewrite the rows a worker returns --
so it is refused before any work.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from acceptgate._util.errors import InvalidInput

TLS_OPTIONS = ("--dask-tls-ca-file", "--dask-tls-cert", "--dask-tls-key")
SECURE_SCHEME = "tls://"


class DaskTLS(BaseModel):
    """The client's credentials for an existing cluster: the cluster's CA and a certificate it signed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ca_file: str
    cert: str
    key: str


class DaskCluster(BaseModel):
    """``workers`` (a LocalCluster started here) or ``address`` with ``tls`` (an existing scheduler)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workers: int | None = None
    address: str | None = None
    tls: DaskTLS | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "DaskCluster":
        if (self.workers is None) == (self.address is None):
            raise ValueError("give a number of local workers or a scheduler address, not both")
        if self.workers is not None and self.workers < 1:
            raise ValueError("must be at least 1 worker or a scheduler address")
        if self.workers is not None and self.tls is not None:
            raise ValueError(f"{', '.join(TLS_OPTIONS)} are for a scheduler address; a local cluster makes "
                             "its own credentials")
        if self.address is not None:
            if not self.address.startswith(SECURE_SCHEME):
                raise ValueError(f"{self.address!r} is not a TLS address: a Dask scheduler without TLS "
                                 "authenticates no one (anyone reaching its port can read the shards' hidden "
                                 "suites and rewrite results); start it with TLS (docs/orchestration.md, "
                                 f"acceptgate dask credentials) and give {SECURE_SCHEME}HOST:PORT")
            if self.tls is None:
                raise ValueError(f"a scheduler address needs the client credentials: {', '.join(TLS_OPTIONS)} "
                                 "(written by acceptgate dask credentials --out DIR: DIR/ca.pem, DIR/client.pem, "
                                 "DIR/client-key.pem)")
        return self

    def __str__(self) -> str:
        if self.workers is not None:
            return f"a local cluster of {self.workers} workers (loopback, mutual TLS)"
        return f"{self.address} (mutual TLS)"


def parse(value: "str | int | dict | DaskCluster | None", *, tls_ca_file: str | None = None,
          tls_cert: str | None = None, tls_key: str | None = None) -> DaskCluster | None:
    """``--dask N|ADDRESS`` and the ``--dask-tls-*`` paths (or a flow's ``dask`` parameter: the same
    text, a DaskCluster, or its fields as a mapping) as a checked DaskCluster; InvalidInput naming the
    option otherwise. The credential files must be readable here."""
    from pydantic import ValidationError

    if value is None or value == "":
        if any((tls_ca_file, tls_cert, tls_key)):
            raise InvalidInput(f"{', '.join(TLS_OPTIONS)} need --dask ADDRESS", field="--dask")
        if value == "":
            raise InvalidInput("must be at least 1 worker or a scheduler address", field="--dask")
        return None
    try:
        if isinstance(value, DaskCluster):
            cluster = value
        elif isinstance(value, dict):
            cluster = DaskCluster.model_validate(value)
        else:
            text = str(value).strip()
            tls = (DaskTLS(ca_file=tls_ca_file, cert=tls_cert, key=tls_key)
                   if all((tls_ca_file, tls_cert, tls_key)) else None)
            if tls is None and any((tls_ca_file, tls_cert, tls_key)):
                raise ValueError(f"give all three of {', '.join(TLS_OPTIONS)}")
            cluster = (DaskCluster(workers=int(text), tls=tls) if text.lstrip("-").isdigit()
                       else DaskCluster(address=text, tls=tls))
    except ValidationError as exc:
        raise InvalidInput(exc.errors()[0]["msg"].removeprefix("Value error, "), field="--dask") from None
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--dask") from None
    if cluster.tls is not None:
        for path, option in zip((cluster.tls.ca_file, cluster.tls.cert, cluster.tls.key), TLS_OPTIONS):
            _readable(path, option)
    return cluster


def _readable(path: str, option: str) -> None:
    p = Path(path)
    if not p.is_file():
        raise InvalidInput("not found", source=path, field=option)
    try:
        with open(p, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror}", source=path, field=option) from None
