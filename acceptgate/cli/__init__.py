"""acceptgate command line. Each command parses, calls one library function, and maps the library's
exceptions to a message and an exit code: 2 for invalid input, 3 when a backend cannot run here."""

from __future__ import annotations

import argparse
import importlib
import sys

from acceptgate.errors import InvalidInput
from acceptgate.sandbox.backend import BackendUnavailable

EXIT_INVALID = 2
EXIT_UNAVAILABLE = 3

# Subcommand modules, each with ``add_parser(subparsers)`` that sets ``func`` on its parser.
COMMAND_MODULES = [
    "acceptgate.cli.spec_cmd",
    "acceptgate.cli.exec_cmd",
    "acceptgate.cli.audit_cmd",
    "acceptgate.cli.import_cmd",
    "acceptgate.cli.score_cmd",
    "acceptgate.cli.gate_cmd",
    "acceptgate.cli.sandbox_cmd",
    "acceptgate.cli.serve_cmd",
    "acceptgate.cli.report_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acceptgate",
        description="Keep code-generation evaluations honest: suites as data, a sandbox that hides "
        "the oracle, acceptance gates and audits.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a command not built yet
                continue
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except InvalidInput as exc:
        print(f"acceptgate {args.command}: invalid input: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except BackendUnavailable as exc:
        print(f"acceptgate {args.command}: sandbox backend unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        print(f"acceptgate {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
