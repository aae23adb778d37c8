"""Checks the commands run before any work: output paths writable, the warehouse not locked, the
sandbox backend able to run here. Each raises what ``cli.main`` maps to an exit code, so a
run that cannot finish stops in its first seconds and leaves nothing on disk.

(A helper module, not a command: it is not listed in ``COMMAND_MODULES``.)
"""

from __future__ import annotations

from pathlib import Path

from acceptgate._util import outputs
from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import backend as backends


def backend_ready(name: str) -> None:
    """Open and close the backend once: an unknown name is exit 2, an unavailable one exit 3."""
    try:
        sandbox = backends.create(name)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None
    sandbox.close()


def warehouse_ready(arg: str | None) -> Path:
    """The warehouse file a run will write: a DuckDB file or a new one in a writable directory (exit 2),
    not held by another process (waits up to the lock timeout, then exit 4). Creates no file."""
    from acceptgate.store import warehouse

    path = warehouse.resolve_path(arg)
    outputs.check_file(path, "--warehouse")
    outputs.check_file(warehouse.snapshot_path(path), "--warehouse")
    if path.exists():
        warehouse.check_path(path)  # a DuckDB file, readable and writable
        with warehouse.connect(path):  # raises WarehouseLocked after the lock timeout
            pass
    return path


def run_ids(path: Path, table: str) -> list[str]:
    """The run ids of ``table`` in the warehouse (none when it or the table does not exist yet)."""
    from acceptgate.store import warehouse

    if not Path(path).exists():
        return []
    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if table not in tables:
            return []
        return [r[0] for r in con.execute(f"select run_id from {table}").fetchall()]


DASK_HELP = ("run in shards on Dask (Prefect's DaskTaskRunner): N = a LocalCluster of N worker processes on "
             "loopback (mutual TLS under a CA made for the run), or the address of a TLS scheduler, "
             "tls://host:8786, with --dask-tls-ca-file, --dask-tls-cert and --dask-tls-key (plain tcp:// is "
             "refused: it authenticates no one); the rows are the single-process ones, written by this process "
             "(docs/orchestration.md, 'Scale-out on Dask')")


def add_dask(p, unit: str, default: int, *, shard_size: bool = True) -> None:
    """``--dask N|ADDRESS``, the client credentials of a TLS scheduler, and ``--shard-size`` (of ``unit``),
    as ``acceptgate score`` has them."""
    p.add_argument("--dask", metavar="N|ADDRESS", help=DASK_HELP)
    tls = p.add_argument_group("the credentials for --dask tls://ADDRESS (acceptgate dask credentials --out DIR "
                               "writes them)")
    tls.add_argument("--dask-tls-ca-file", metavar="FILE", help="the cluster's CA certificate (DIR/ca.pem)")
    tls.add_argument("--dask-tls-cert", metavar="FILE", help="this client's certificate (DIR/client.pem)")
    tls.add_argument("--dask-tls-key", metavar="FILE", help="this client's private key (DIR/client-key.pem)")
    if shard_size:
        p.add_argument("--shard-size", type=int, default=default, metavar="N",
                       help=f"{unit} per Dask shard (default {default})")


def dask_ready(args) -> None:
    """--dask, its credentials and --shard-size refused before any work (exit 2); ``args.dask`` becomes
    the checked ``DaskCluster`` (or None)."""
    from acceptgate.pipelines import daskcluster
    args.dask = daskcluster.parse(args.dask, tls_ca_file=args.dask_tls_ca_file, tls_cert=args.dask_tls_cert,
                                  tls_key=args.dask_tls_key)
    if args.dask is not None and getattr(args, "shard_size", 1) < 1:
        raise InvalidInput("must be at least 1", field="--shard-size")
