"""acceptgate study sample --records FILE --raters A,B[,..] --out DIR [--judge-run ID] [--per-disposition 100]
                         [--seed N] [--warehouse PATH]
acceptgate study ratings --records FILE --key DIR/key.jsonl RATINGS.jsonl [--strict]
acceptgate study memory-select --out FILE [--judge-run ID] [--config NAME] [--run N] [--validation FILE] [--seed N]
acceptgate study memory-freeze --memory LABELLED.jsonl --out FILE --validation FILE [--selection FILE]
acceptgate study audit-subset --out FILE [--judge-run ID] [--per-config 400] [--seed N]

Human-study support (seed 004, appendix H): a stratified, blinded rating sheet from a judge run's
verdicts, and the validated import of the ratings (each invalid line reported with file, line and
field and counted; --strict refuses the file with exit 2).
"""

from __future__ import annotations

import sys


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
    m = study.add_parser("memory-select", help="seed 004 G.3: 2 tasks per disposition and prediction pattern of a "
                                               "judge run without memory (32 tasks, 64 trajectories), seeded")
    m.add_argument("--out", required=True, metavar="FILE", help="the selection (jsonl) the experts label")
    m.add_argument("--judge-run", metavar="ID", help="the memory-less judge run (default: the latest)")
    m.add_argument("--config", help="the agent configuration whose trajectories are used (default: first by name)")
    m.add_argument("--run", type=int, default=1, help="the agent run (default 1)")
    m.add_argument("--validation", metavar="FILE", help="human labels of the validation split: their tasks are "
                                                        "never selected")
    m.add_argument("--records", metavar="FILE", help="trajectory records (to map --validation to tasks)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--warehouse", metavar="PATH")
    m.set_defaults(func=run_memory_select)
    f = study.add_parser("memory-freeze", help="freeze the labelled memory bank (canonical file + sha256); refuses "
                                               "a task shared with validation")
    f.add_argument("--memory", required=True, metavar="FILE", help="the experts' consensus records (Exemplar jsonl)")
    f.add_argument("--out", required=True, metavar="FILE")
    f.add_argument("--validation", required=True, metavar="FILE", help="human labels of the validation split")
    f.add_argument("--records", required=True, metavar="FILE", help="trajectory records (maps labels to tasks)")
    f.add_argument("--selection", metavar="FILE", help="the memory-select output the records must cover exactly")
    f.set_defaults(func=run_memory_freeze)
    a = study.add_parser("audit-subset", help="seed 004 K: E+ trajectories for the audit judge, 400 per configuration")
    a.add_argument("--out", required=True, metavar="FILE", help="trajectory ids (jsonl)")
    a.add_argument("--judge-run", metavar="ID")
    a.add_argument("--per-config", type=int, default=400)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--warehouse", metavar="PATH")
    a.set_defaults(func=run_audit_subset)


def run_sample(args) -> int:
    from acceptgate.pipelines import study

    raters = [x.strip() for x in args.raters.split(",") if x.strip()]
    got = study.sample(args.records, raters, args.out, judge_run=args.judge_run, per_disposition=args.per_disposition,
                       seed=args.seed, warehouse_path=args.warehouse)
    over, n = got.over_defending, len(got.assignments)
    print(f"judge run {got.run_id}: {n} records for rating ({over} over-defending, {n - over} not), "
          f"{len(raters)} raters, seed {args.seed}\nsheet: {got.sheet}\nkey (keep from raters): {got.key}")
    return 0


def run_ratings(args) -> int:
    from acceptgate.pipelines import study

    got = study.ratings(args.ratings, args.key, args.records, strict_lines=args.strict)
    valid, errors = got.loaded.valid, got.loaded.errors
    for e in errors:
        print(f"acceptgate study ratings: invalid record: {e}", file=sys.stderr)
    print(f"{len(valid)} valid ratings, {len(errors)} invalid, "
          f"{got.unrated} items without a valid rating (not rated yet or invalid)")
    if not valid:  # nothing usable: a wrong file, or a sheet nobody filled in
        print(f"acceptgate study ratings: invalid input: {args.ratings}: no valid rating "
              f"({len(errors)} invalid records)", file=sys.stderr)
        return 2
    for v_p, n, sat, acc in got.by_judgement():
        print(f"judge V_p={v_p}: mean satisfaction {sat:.2f} (1-5), accepted as is {100 * acc:.1f}% of {n}")
    for row in got.by_degree().to_dict("records"):
        print(f"degree {row['degree']}: {row['ratings']} ratings, mean satisfaction {row['satisfaction']:.2f}, "
              f"accepted as is {100 * row['accept_as_is']:.1f}%, unnecessary steps marked "
              f"{row['unnecessary_steps']:.2f} per record ({100 * row['any_unnecessary']:.1f}% with any)")
    return 0


def run_memory_select(args) -> int:
    from acceptgate.pipelines import study

    got = study.memory_select(args.out, judge_run=args.judge_run, config=args.config, run=args.run,
                              validation=args.validation, records=args.records, seed=args.seed,
                              warehouse_path=args.warehouse)
    print(f"judge run {got.run_id}: {len(got.chosen)} tasks, {2 * len(got.chosen)} trajectories selected for the "
          f"memory bank (seed {args.seed}; {got.excluded} validation tasks excluded) -> {got.out}")
    for note in got.short:
        print(f"  fewer than asked: {note}")
    return 0


def run_memory_freeze(args) -> int:
    from acceptgate.pipelines import study

    count, path, digest = study.memory_freeze(args.memory, args.out, validation=args.validation,
                                              records=args.records, selection=args.selection)
    print(f"memory bank frozen: {count} records, sha256 {digest} -> {path} (+ {path.name}.sha256)")
    return 0


def run_audit_subset(args) -> int:
    from acceptgate.pipelines import study

    run_id, subset, out = study.audit_subset(args.out, judge_run=args.judge_run, per_config=args.per_config,
                                             seed=args.seed, warehouse_path=args.warehouse)
    counts = subset.groupby("config").size().to_dict()
    print(f"judge run {run_id}: audit subset of {len(subset)} E+ trajectories ({counts}; seed {args.seed}) -> {out}")
    return 0
