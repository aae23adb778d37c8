"""Human-study support: stratified blinded sampling, the rating sheet, and validated ratings import."""

from __future__ import annotations

import json

import pytest

from acceptgate._util.errors import InvalidInput
from acceptgate.judge import human
from acceptgate.judge.records import Trajectory, load_jsonl
from test_judge_core import judge_inputs
from test_judge_core import INPUTS


@pytest.fixture(scope="module")
def verdicts():
    run = judge_inputs(INPUTS, backend="rules", embedder="hashing")
    frame = run.frames()["judge_verdicts"]
    trajs = {t.trajectory_id: t for t in load_jsonl(INPUTS.records, Trajectory).valid}
    return frame, trajs


def test_sampling_is_stratified_capped_blinded_and_reproducible(verdicts, tmp_path):
    frame, trajs = verdicts
    raters = ["r1", "r2", "r3"]
    got = human.sample(frame, raters, per_disposition=1, seed=3)
    over = [a for a in got if a.v_p == 1]
    frame_plus = frame[(frame["condition"] == "E+") & frame["oracle_passed"] & (frame["status"] == "valid")]
    dispositions = set(frame_plus.loc[frame_plus["v_p"] == 1, "disposition"])
    assert sorted(a.disposition for a in over) == sorted(dispositions)  # at most 1 per disposition here
    assert len(got) == 2 * len(over)  # as many V_p = 0 runs as V_p = 1 runs
    assert all(trajs[a.trajectory_id].condition == "E+" and trajs[a.trajectory_id].oracle.passed for a in got)
    assert sorted(a.order for a in got) == list(range(1, len(got) + 1))
    for task in {a.task_id for a in got}:  # the records of one task go to different raters
        mine = [a.rater for a in got if a.task_id == task]
        assert len(mine) == len(set(mine)) or len(mine) > len(raters)
    assert human.sample(frame, raters, per_disposition=1, seed=3) == got
    assert human.sample(frame, raters, per_disposition=1, seed=4) != got
    sheet, key = human.write_study(tmp_path, got, trajs, seed=3)
    text = sheet.read_text()
    for hidden in ("demo-agent", '"E+"', '"E-"', '"kind"', '": "evidence"', "v_p", "degree"):
        assert hidden not in text, hidden
    assert json.loads(key.read_text().splitlines()[0])["seed"] == 3
    with pytest.raises(InvalidInput, match="two distinct raters"):
        human.sample(frame, ["solo"])


def test_ratings_import_validates_each_line(verdicts, tmp_path):
    frame, trajs = verdicts
    got = human.sample(frame, ["r1", "r2"], per_disposition=100, seed=0)
    key = {a.item_id: a for a in got}
    steps = {t: len(trajs[t].actions) for t in trajs}
    a, b, c = got[0], got[1], got[2]
    lines = [
        {"item_id": a.item_id, "rater": a.rater, "satisfaction": 4, "accept_as_is": True, "unnecessary_steps": []},
        {"item_id": "item-nope", "rater": "r1", "satisfaction": 4, "accept_as_is": True, "unnecessary_steps": []},
        {"item_id": b.item_id, "rater": "r9", "satisfaction": 2, "accept_as_is": False, "unnecessary_steps": [1]},
        {"item_id": b.item_id, "rater": b.rater, "satisfaction": 6, "accept_as_is": False, "unnecessary_steps": []},
        {"item_id": c.item_id, "rater": c.rater, "satisfaction": 2, "accept_as_is": False, "unnecessary_steps": [99]},
        {"item_id": a.item_id, "rater": a.rater, "satisfaction": 3, "accept_as_is": True, "unnecessary_steps": []},
    ]
    path = tmp_path / "ratings.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    loaded = human.import_ratings(path, key, steps)
    assert [r.item_id for r in loaded.valid] == [a.item_id]
    assert [(e.line, e.field) for e in loaded.errors] == [(2, "item_id"), (3, "rater"), (4, "satisfaction"),
                                                          (5, "unnecessary_steps"), (6, "item_id")]


def test_sheet_round_trip_through_the_cli(tmp_path, capsys):
    """study sample writes the sheet; raters fill in their answers in place; study ratings accepts it.
    A sheet nobody filled in, or one whose every line is invalid, exits 2."""
    from acceptgate.store import warehouse
    from acceptgate.cli import main
    from acceptgate.pipelines.judge import write

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    write(path, judge_inputs(INPUTS, backend="rules", embedder="hashing"))
    out = tmp_path / "study"
    assert main(["study", "sample", "--records", str(INPUTS.records), "--raters", "r1,r2", "--out", str(out),
                 "--warehouse", str(path)]) == 0
    sheet = [json.loads(line) for line in (out / "sheet.jsonl").read_text().splitlines()]
    assert len(sheet) >= 2
    ratings = ["--key", str(out / "key.jsonl"), "--records", str(INPUTS.records)]
    capsys.readouterr()

    assert main(["study", "ratings", str(out / "sheet.jsonl"), *ratings]) == 2  # nothing filled in yet
    assert "no valid rating" in capsys.readouterr().err

    filled = [{**row, "satisfaction": 4, "accept_as_is": True, "unnecessary_steps": [1]} for row in sheet[:-1]]
    done = tmp_path / "filled.jsonl"
    done.write_text("".join(json.dumps(r) + "\n" for r in filled + sheet[-1:]))  # the last one not rated yet
    assert main(["study", "ratings", str(done), *ratings]) == 0
    captured = capsys.readouterr()
    assert f"{len(sheet) - 1} valid ratings, 0 invalid" in captured.out and "invalid record" not in captured.err

    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text("".join(json.dumps({**r, "rater": "nobody", "colour": "red"}) + "\n" for r in filled))
    assert main(["study", "ratings", str(wrong), *ratings]) == 2
    err = capsys.readouterr().err
    assert "colour" in err and "no valid rating" in err
