"""acceptgate study sample --records FILE --raters A,B[,..] --out DIR [--judge-run ID] [--per-disposition 100]
                         [--seed N] [--warehouse PATH]
acceptgate study ratings --records FILE --key DIR/key.jsonl RATINGS.jsonl [--strict]

Human-study support (seed 004, appendix H): a stratified, blinded rating sheet from a judge run's
verdicts, and the validated import of the ratings (each invalid line reported with file, line and
field and counted; --strict refuses the file with exit 2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from acceptgate import outputs, warehouse
from acceptgate.errors import InvalidInput


def add_parser(sub) -> None:
    p = sub.add_parser("study", help="human study: blinded stratified rating sheet from a judge run; ratings import",
                       description=__doc__.split("\n\n")[1])
    study = p.add_subparsers(dest="study_command", metavar="STEP", required=True)
    s = study.add_parser("sample", help="write sheet.jsonl (for raters) and key.jsonl (for the study lead)")
    s.add_argument("--records", required=True, metavar="FILE", help="the trajectory records the judge run read")
    s.add_argument("--raters", required=True, help="comma-separated rater ids (at least two)")
    s.add_argument("--out", required=True, metavar="DIR")
    s.add_argument("--judge-run", metavar="ID", help="default: the latest judge run")
    s.add_argument("--per-disposition", type=int, default=100, help="cap on over-defending runs per disposition")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--warehouse", metavar="PATH")
    s.set_defaults(func=run_sample)
    r = study.add_parser("ratings", help="validate a ratings file (the sheet, filled in) against the key and summarise "
                                         "it; exit 2 when no line holds a valid rating")
    r.add_argument("ratings", metavar="RATINGS.jsonl")
    r.add_argument("--key", required=True, metavar="FILE")
    r.add_argument("--records", required=True, metavar="FILE")
    r.add_argument("--strict", action="store_true")
    r.set_defaults(func=run_ratings)


def _trajectories(path: str) -> dict:
    from acceptgate.judge.records import Trajectory, load_jsonl

    return {t.trajectory_id: t for t in load_jsonl(path, Trajectory).valid}


def run_sample(args) -> int:
    from acceptgate.judge import human, metrics

    if not Path(args.records).is_file():
        raise InvalidInput("no such file", source=args.records, field="--records")
    out = outputs.check_dir(args.out, "--out")  # before any work; created only when the sheet is written
    path = warehouse.resolve_path(args.warehouse)
    if not path.exists():
        raise InvalidInput("no warehouse here", source=str(path), field="--warehouse")
    run_id, verdicts, _ = metrics.read_verdicts(path, args.judge_run)
    trajs = _trajectories(args.records)
    missing = sorted(set(verdicts["trajectory_id"]) - set(trajs))
    if missing:
        raise InvalidInput(f"{len(missing)} judged trajectories are not in this file, e.g. {missing[0]}",
                           source=args.records, field="--records")
    raters = [x.strip() for x in args.raters.split(",") if x.strip()]
    got = human.sample(verdicts, raters, per_disposition=args.per_disposition, seed=args.seed)
    sheet, key = human.write_study(out, got, trajs, args.seed)
    over = sum(a.v_p for a in got)
    print(f"judge run {run_id}: {len(got)} records for rating ({over} over-defending, {len(got) - over} not), "
          f"{len(raters)} raters, seed {args.seed}\nsheet: {sheet}\nkey (keep from raters): {key}")
    return 0


def run_ratings(args) -> int:
    from acceptgate.judge import human
    from acceptgate.judge.records import strict

    assignments = {}
    for name, flag in ((args.key, "--key"), (args.records, "--records"), (args.ratings, "RATINGS.jsonl")):
        if not Path(name).is_file():
            raise InvalidInput("no such file", source=name, field=flag)
    for n, line in enumerate(Path(args.key).read_text(encoding="utf-8").splitlines(), start=1):
        try:
            doc = json.loads(line)
            doc.pop("seed", None)
            assignments[doc["item_id"]] = human.Assignment(**doc)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InvalidInput(f"not a key record written by 'study sample' ({type(exc).__name__}: {exc})",
                               source=args.key, record=f"line {n}", field="item_id") from None
    trajs = _trajectories(args.records)
    steps = {t: len(trajs[t].actions) for t in trajs}
    loaded = human.import_ratings(args.ratings, assignments, steps)
    if args.strict:
        strict(loaded)
    for e in loaded.errors:
        print(f"acceptgate study ratings: invalid record: {e}", file=sys.stderr)
    groups: dict[int, list] = {0: [], 1: []}
    for r in loaded.valid:
        groups[assignments[r.item_id].v_p].append(r)
    print(f"{len(loaded.valid)} valid ratings, {len(loaded.errors)} invalid, "
          f"{len(assignments) - len(loaded.valid)} items without a valid rating (not rated yet or invalid)")
    if not loaded.valid:  # nothing usable: a wrong file, or a sheet nobody filled in
        print(f"acceptgate study ratings: invalid input: {args.ratings}: no valid rating "
              f"({len(loaded.errors)} invalid records)", file=sys.stderr)
        return 2
    for v_p, rs in groups.items():
        if rs:
            sat = sum(r.satisfaction for r in rs) / len(rs)
            acc = sum(r.accept_as_is for r in rs) / len(rs)
            print(f"judge V_p={v_p}: mean satisfaction {sat:.2f} (1-5), accepted as is {100 * acc:.1f}% of {len(rs)}")
    return 0
