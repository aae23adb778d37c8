"""acceptgate exec --spec SPEC.json --candidate FILE [--backend local|docker]"""

from __future__ import annotations

from pathlib import Path

from acceptgate.suites import render, suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.executor import execute


def add_parser(sub) -> None:
    p = sub.add_parser("exec", help="run one candidate against one suite; print one JSON result")
    p.add_argument("--spec", required=True, metavar="SPEC.json")
    p.add_argument("--candidate", required=True, metavar="FILE", help="Python program defining the entry point")
    p.add_argument("--backend", default="local", help="sandbox backend (default: local)")
    p.add_argument("--fail-fast", action="store_true",
                   help="stop at the first failing case (for a visible suite only: being called again tells the "
                        "candidate that its previous answer passed; by default the cases are called in blocks fixed "
                        "before the run from their number, every case of a block whatever the answers before it, and "
                        "the execution stops at the first block boundary after a failing case)")
    p.add_argument("--all-cases", action="store_true", help="call every case (no fail-fast, no blocks)")
    p.set_defaults(func=run)


def read_candidate(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read candidate: {exc.strerror}", source=path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"candidate is not UTF-8 (byte {exc.start})", source=path) from None


def make_backend(name: str):
    try:
        return backends.create(name)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None


def run(args) -> int:
    spec = suitespec.load(args.spec)
    source = read_candidate(args.candidate)
    harness = render.harness_for(spec)
    with make_backend(args.backend) as backend:
        result = execute(harness, source, backend, fail_fast=args.fail_fast, all_cases=args.all_cases)
    print(result.to_json())
    return 0
