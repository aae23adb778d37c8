"""acceptgate spec check | render"""

from __future__ import annotations

import json

from acceptgate.suites import render, suitespec
def add_parser(sub) -> None:
    spec = sub.add_parser("spec", help="validate or render a SuiteSpec file")
    spec_sub = spec.add_subparsers(dest="spec_command", metavar="ACTION", required=True)
    check = spec_sub.add_parser("check", help="validate; print spec_hash and render_hash (exit 2 if invalid)")
    check.add_argument("spec", metavar="SPEC.json")
    check.set_defaults(func=run_check)
    rend = spec_sub.add_parser("render", help="print the rendered harness program")
    rend.add_argument("spec", metavar="SPEC.json")
    rend.set_defaults(func=run_render)


def run_check(args) -> int:
    spec = suitespec.load(args.spec)
    text = render.render(spec)
    print(json.dumps({"spec": args.spec, "valid": True, "dialect": spec.dialect,
                      "entry_point": spec.entry_point, "cases": len(spec.cases),
                      "spec_hash": spec.spec_hash, "render_hash": render.render_hash(text)}))
    return 0


def run_render(args) -> int:
    spec = suitespec.load(args.spec)
    print(render.render(spec), end="")
    return 0
