"""acceptgate dask credentials --out DIR [--days N]

The credentials of a Dask cluster with mutual TLS (``acceptgate.pipelines.clustertls``): a private CA and a
certificate and key for the scheduler, the workers and acceptgate's client. Copy DIR/ca.pem and the
role's pair to each host; the cluster commands of docs/orchestration.md use them as written.
"""

from __future__ import annotations

from acceptgate.pipelines import clustertls
def add_parser(sub) -> None:
    p = sub.add_parser("dask", help="Dask cluster helpers: the mutual-TLS credentials of a cluster",
                       description="Helpers for running sharded stages on a Dask cluster (docs/orchestration.md).")
    commands = p.add_subparsers(dest="dask_command", metavar="COMMAND", required=True)
    c = commands.add_parser(
        "credentials", help="write a new private CA and the scheduler's, workers' and client's certificates",
        description="Write a new private CA (its key is not kept) and a certificate and key for each role of a "
                    "Dask cluster -- scheduler, worker, client -- into DIR (a new or empty directory, 0700; keys "
                    "0600). Every role accepts only peers whose certificate this CA signed: start the scheduler "
                    "and workers with --tls-ca-file/--tls-cert/--tls-key and give acceptgate --dask tls://HOST:PORT "
                    "with --dask-tls-ca-file DIR/ca.pem --dask-tls-cert DIR/client.pem --dask-tls-key "
                    "DIR/client-key.pem.")
    c.add_argument("--out", required=True, metavar="DIR", help="a new or empty directory")
    c.add_argument("--days", type=int, default=clustertls.DEFAULT_DAYS,
                   help="how long the certificates are valid (default %(default)s)")
    c.set_defaults(func=run_credentials)


def run_credentials(args) -> int:
    out = clustertls.write_credentials(args.out, days=args.days)
    ca = clustertls.role_files(out, "scheduler").ca_file
    print(f"acceptgate dask credentials: wrote {out}/ ({clustertls.CA_FILE}; "
          + ", ".join(f"{r}.pem + {r}-key.pem" for r in clustertls.ROLES) + f"), valid {args.days} days")
    for role, command in (("scheduler", "dask scheduler --protocol tls --host HOST --port 8786 --no-dashboard"),
                          ("worker", "dask worker tls://HOST:8786 --nthreads 1 --no-dashboard")):
        files = clustertls.role_files(out, role)
        print(f"  {role}: {command} --tls-ca-file {ca} --tls-cert {files.cert} --tls-key {files.key}")
    client = clustertls.role_files(out, "client")
    print(f"  acceptgate: --dask tls://HOST:8786 --dask-tls-ca-file {ca} --dask-tls-cert {client.cert} "
          f"--dask-tls-key {client.key}")
    return 0
