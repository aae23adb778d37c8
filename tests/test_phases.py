"""The progress helpers every command shares (acceptgate._util.phases)."""

from __future__ import annotations

import io

from acceptgate._util.phases import Phases, ProgressLine, tenths


def test_tenths_says_about_ten_lines_and_always_the_last():
    lines: list[str] = []
    report = tenths(lines.append, "import")
    for done in range(1, 164 + 1):
        report(done, 164)
    assert lines[-1] == "import: 164/164" and 9 <= len(lines) <= 11
    lines.clear()
    report = tenths(lines.append, "gauge")
    for done in (3, 7, 9):  # progress that jumps: a line whenever a tenth has passed, and the last
        report(done, 9)
    assert lines == ["gauge: 3/9", "gauge: 7/9", "gauge: 9/9"]


def test_progress_line_waits_between_lines_and_prints_the_last():
    out = io.StringIO()
    line = ProgressLine("score", "samples", every=3600, stream=out)
    for done in range(1, 11):
        line(done, 10)
    printed = out.getvalue().splitlines()
    assert len(printed) == 1 and printed[0].startswith("score: samples 10/10 (100%)")
    quiet = io.StringIO()
    ProgressLine("score", "samples", quiet=True, stream=quiet)(10, 10)
    assert quiet.getvalue() == ""


def test_phases_name_each_phase_and_the_total():
    timed = Phases()
    with timed("load"):
        pass
    timed.add("execute", 2.0)
    text = timed.line("gate")
    assert text.startswith("gate: time: load ") and "execute 2.0 s" in text and "; total " in text
