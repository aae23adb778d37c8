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
from pathlib import Path

import json

from acceptgate._util import boundedjson
from acceptgate._util import outputs
from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput


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


def _trajectories(path: str) -> dict:
    from acceptgate.judge.records import Trajectory, load_jsonl

    return {t.trajectory_id: t for t in load_jsonl(path, Trajectory).valid}


def run_sample(args) -> int:
    from acceptgate.judge import human
    from acceptgate.pipelines import judge as judge_io

    if not Path(args.records).is_file():
        raise InvalidInput("no such file", source=args.records, field="--records")
    out = outputs.check_dir(args.out, "--out")  # before any work; created only when the sheet is written
    path = warehouse.resolve_path(args.warehouse)
    if not path.exists():
        raise InvalidInput("no warehouse here", source=str(path), field="--warehouse")
    run_id, verdicts, _ = judge_io.read_verdicts(path, args.judge_run)
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
            doc = boundedjson.loads(line)
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
    for row in human.by_degree(assignments, loaded.valid).to_dict("records"):
        print(f"degree {row['degree']}: {row['ratings']} ratings, mean satisfaction {row['satisfaction']:.2f}, "
              f"accepted as is {100 * row['accept_as_is']:.1f}%, unnecessary steps marked "
              f"{row['unnecessary_steps']:.2f} per record ({100 * row['any_unnecessary']:.1f}% with any)")
    return 0


def _write_jsonl(path: str, rows: list[dict]) -> Path:
    out = Path(path)
    outputs.check_file(out, "--out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(out)
    return out


def _verdicts(args):
    from acceptgate.pipelines import judge as judge_io

    path = warehouse.resolve_path(args.warehouse)
    if not path.exists():
        raise InvalidInput("no warehouse here", source=str(path), field="--warehouse")
    return judge_io.read_verdicts(path, args.judge_run)


def _validation_tasks(labels_path: str | None, records_path: str | None) -> set[str]:
    from acceptgate.judge.records import HumanLabel, load_jsonl, strict

    if not labels_path:
        return set()
    for name, flag in ((labels_path, "--validation"), (records_path, "--records")):
        if not name or not Path(name).is_file():
            raise InvalidInput("no such file", source=str(name), field=flag)
    labels = load_jsonl(labels_path, HumanLabel)
    strict(labels)
    trajs = _trajectories(records_path)
    unknown = sorted(h.trajectory_id for h in labels.valid if h.trajectory_id not in trajs)
    if unknown:
        raise InvalidInput(f"{len(unknown)} labelled trajectories are not in the records, e.g. {unknown[0]}",
                           source=labels_path, field="--validation")
    return {trajs[h.trajectory_id].task_id for h in labels.valid}


def run_memory_select(args) -> int:
    from acceptgate.judge import memory

    run_id, verdicts, _ = _verdicts(args)
    exclude = _validation_tasks(args.validation, args.records)
    patterns = memory.prediction_patterns(verdicts, config=args.config, run=args.run)
    chosen, short = memory.select_tasks(patterns, seed=args.seed, exclude=exclude)
    rows = [{"task_id": c.task_id, "disposition": c.disposition, "pattern": c.pattern,
             "trajectory_plus": c.trajectories[0], "trajectory_minus": c.trajectories[1], "seed": args.seed,
             "judge_run": run_id} for c in chosen]
    out = _write_jsonl(args.out, rows)
    print(f"judge run {run_id}: {len(chosen)} tasks, {2 * len(chosen)} trajectories selected for the memory bank "
          f"(seed {args.seed}; {len(exclude)} validation tasks excluded) -> {out}")
    for note in short:
        print(f"  fewer than asked: {note}")
    return 0


def run_memory_freeze(args) -> int:
    from acceptgate.judge import memory
    from acceptgate.judge.records import Exemplar, load_jsonl, strict

    if not Path(args.memory).is_file():
        raise InvalidInput("no such file", source=args.memory, field="--memory")
    loaded = load_jsonl(args.memory, Exemplar)
    strict(loaded)
    selection = None
    if args.selection:
        if not Path(args.selection).is_file():
            raise InvalidInput("no such file", source=args.selection, field="--selection")
        selection = [memory.Selected(d["task_id"], d["disposition"], d["pattern"],
                                     (d["trajectory_plus"], d["trajectory_minus"]))
                     for d in map(json.loads, Path(args.selection).read_text(encoding="utf-8").splitlines())]
    outputs.check_file(Path(args.out), "--out")
    path, digest = memory.freeze(loaded.valid, args.out, validation_tasks=_validation_tasks(args.validation,
                                                                                             args.records),
                                 selection=selection)
    print(f"memory bank frozen: {len(loaded.valid)} records, sha256 {digest} -> {path} (+ {path.name}.sha256)")
    return 0


def run_audit_subset(args) -> int:
    from acceptgate.judge import memory

    if args.per_config < 1:
        raise InvalidInput("must be at least 1", field="--per-config")
    run_id, verdicts, _ = _verdicts(args)
    subset = memory.audit_subset(verdicts, per_config=args.per_config, seed=args.seed)
    out = _write_jsonl(args.out, subset.to_dict("records"))
    counts = subset.groupby("config").size().to_dict()
    print(f"judge run {run_id}: audit subset of {len(subset)} E+ trajectories ({counts}; seed {args.seed}) -> {out}")
    return 0
