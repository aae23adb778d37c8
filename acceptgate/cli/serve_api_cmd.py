"""acceptgate serve-api [--host H] [--port P] --keys FILE [...] | serve-api new-key | serve-api openapi

The gate as an HTTP service for assistants (``acceptgate.service``). ``new-key`` makes a client's
API key (printed once; only its hash is kept). ``openapi`` prints the service's OpenAPI document (the
committed copy is ``acceptgate/service/openapi.json``; a test keeps them equal).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from acceptgate._util import outputs
from acceptgate._util.errors import InvalidInput

DEFAULT_JOURNAL = Path("data") / "service.sqlite"
OPENAPI_FILE = Path(__file__).resolve().parents[1] / "service" / "openapi.json"


def add_parser(sub) -> None:
    p = sub.add_parser("serve-api", help="serve the gate over HTTP for assistants (deliver or refuse)",
                       description="Starts the gate service on HOST:PORT. Clients authenticate with an API key "
                                   "(Authorization: Bearer KEY) from the keys file.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--keys", metavar="FILE", help="the clients' key hashes (make one with 'serve-api new-key')")
    p.add_argument("--journal", default=str(DEFAULT_JOURNAL), metavar="FILE",
                   help="the service's own record of tasks and decisions (SQLite; default %(default)s)")
    p.add_argument("--warehouse", metavar="PATH",
                   help="DuckDB warehouse the decisions are published to (default: $ACCEPTGATE_WAREHOUSE or "
                        "data/warehouse.duckdb)")
    p.add_argument("--no-warehouse", action="store_true", help="keep decisions in the journal only")
    p.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    p.add_argument("--max-executions", type=int, default=2, help="sandbox executions at once (default 2)")
    p.add_argument("--queue", type=int, default=16, help="requests that may wait for an execution (default 16)")
    p.add_argument("--rate-per-minute", type=float, default=120.0, help="calls per client per minute (default 120)")
    p.add_argument("--burst", type=int, default=20, help="calls a client may make at once (default 20)")
    p.add_argument("--max-request-bytes", type=int, default=8 << 20, help="largest request body (default 8 MiB)")
    p.add_argument("--publish-seconds", type=float, default=5.0, help="how often decisions go to the warehouse")
    p.add_argument("--model-url", metavar="URL", help="OpenAI-compatible endpoint for gated generations")
    p.add_argument("--model", metavar="NAME", help="model name for gated generations")
    p.add_argument("--model-key-env", default="OPENAI_API_KEY", help="environment variable holding the model's key")
    p.add_argument("--no-certify", action="store_true",
                   help="register tasks without certifying them (by default a task's pool, built from its reference, "
                        "must pass the six V4V gates with its hidden suite at registration -- else 422 naming the task "
                        "-- and no decision is made on an uncertified task); stored with every decision")
    p.add_argument("--forwarded-allow-ips", metavar="ADDRS", default="",
                   help="comma-separated addresses or networks of the reverse proxies whose X-Forwarded-For and "
                        "X-Forwarded-Proto headers are believed (e.g. 127.0.0.1 for a proxy on this machine); "
                        "default none: every caller is the address it connects from, so no caller picks its "
                        "own address (the keyless calls' rate limit is per address)")
    p.set_defaults(func=run)
    cmds = p.add_subparsers(dest="serve_api_command", metavar="SUBCOMMAND")
    nk = cmds.add_parser("new-key", help="make an API key for a client and record its hash in the keys file")
    nk.add_argument("--client", required=True, help="the client's id (letters, digits, . _ -)")
    nk.add_argument("--keys", required=True, metavar="FILE", dest="keys_file")
    nk.set_defaults(func=run_new_key)
    oa = cmds.add_parser("openapi", help="print the service's OpenAPI document")
    oa.add_argument("--out", metavar="FILE", help="write it here instead of stdout")
    oa.set_defaults(func=run_openapi)


def config_from_args(args):
    from acceptgate.store import warehouse
    from acceptgate.service.config import Limits, ServiceConfig, load_keys

    if not args.keys:
        raise InvalidInput("give --keys FILE (make one with 'acceptgate serve-api new-key --client ID --keys FILE')",
                           field="--keys")
    clients = load_keys(args.keys)
    journal = Path(args.journal)
    _check_writable(journal, "--journal")
    path = None
    if not args.no_warehouse:
        path = warehouse.check_path(warehouse.resolve_path(args.warehouse))
    if bool(args.model_url) != bool(args.model):
        raise InvalidInput("give both --model-url and --model, or neither", field="--model")
    try:
        limits = Limits(max_request_bytes=args.max_request_bytes, max_executions=args.max_executions,
                        queue_size=args.queue, rate_per_minute=args.rate_per_minute, burst=args.burst)
    except ValueError as exc:
        raise InvalidInput(str(exc).splitlines()[-1], field="limits") from None
    return ServiceConfig(clients=clients, journal=journal, warehouse=path, backend=args.backend, limits=limits,
                         certify=not args.no_certify,
                         publish_seconds=args.publish_seconds, model_base_url=args.model_url,
                         model_name=args.model, model_key_env=args.model_key_env)


def forwarded_allow_ips(value: str) -> list[str]:
    """The proxies the operator trusts with forwarding headers: IP addresses or networks, none by default."""
    import ipaddress

    out = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        try:
            out.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise InvalidInput(f"{item!r} is not an IP address or network", field="--forwarded-allow-ips") from None
    return out


def _check_writable(path: Path, field: str) -> None:
    outputs.check_file(path, field)
    path.parent.mkdir(parents=True, exist_ok=True)


def run(args) -> int:
    import uvicorn

    from acceptgate.sandbox import backend as backends
    from acceptgate.service.app import create_app

    config = config_from_args(args)
    proxies = forwarded_allow_ips(args.forwarded_allow_ips)
    sandbox = backends.create(config.backend)  # a backend that cannot run here: exit 3 before listening
    try:
        app = create_app(config, backend=sandbox)
        print(f"acceptgate serve-api: http://{args.host}:{args.port} (OpenAPI at /openapi.json), "
              f"{len(config.clients)} clients, journal {config.journal}, "
              f"warehouse {config.warehouse or 'none'}", file=sys.stderr)
        # uvicorn believes X-Forwarded-For from loopback unless told otherwise (and reads FORWARDED_ALLOW_IPS):
        # only the proxies given here are believed, none by default.
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", proxy_headers=bool(proxies),
                    forwarded_allow_ips=proxies or [])
    finally:
        sandbox.close()
    return 0


def run_new_key(args) -> int:
    from acceptgate.service.config import new_key

    outputs.check_file(args.keys_file, "--keys")
    key = new_key(args.keys_file, args.client)
    print(key)
    print(f"client {args.client}: key hash recorded in {args.keys_file}; the key is shown only now",
          file=sys.stderr)
    return 0


def openapi_document() -> dict:
    from acceptgate.service.app import create_app
    from acceptgate.service.config import ServiceConfig
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(ServiceConfig(clients={}, journal=Path(tmp) / "j.sqlite"))
        doc = app.openapi()
        app.state.journal.close()
    return doc


def run_openapi(args) -> int:
    if args.out:
        outputs.check_file(args.out, "--out")
    text = json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"
    if args.out:
        outputs.write_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    return 0
