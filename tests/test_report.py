"""acceptgate report: the page's sections from a warehouse snapshot, Wilson intervals, "not run yet" for
absent tables, the markdown summary; the page in headless Chromium with no console output."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acceptgate import report, warehouse
from acceptgate.report import data as report_data
from acceptgate.report import markdown
from acceptgate.report import seed004 as report_seed004

REPO = Path(__file__).resolve().parents[1]
SECTION_IDS = [s.key for s in report_data.SECTIONS] + [key for key, *_ in report_seed004.SPECS]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr",
                  "--v=0"]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    """A published warehouse with one gate run (conform 2 false of 14 tasks, 10 delivered; off 10 of 14),
    leak verdicts for it, and no V4V or statistics rows."""
    path = tmp_path_factory.mktemp("report") / "w.duckdb"
    warehouse.migrate(path)
    when = dt.datetime(2026, 3, 1, 12, tzinfo=dt.timezone.utc)
    with warehouse.transaction(path) as con:
        con.execute("insert into gate_runs (run_id, run_id_origin, pipeline, acceptgate_version, source, tasks_from, "
                    "tasks_sha256, task_count, arms, per_task, backend, status, started_at, wall_seconds) values "
                    "('gate-r1', 'user', 'gate/1', '0', 'codet:x', 'd', 'h', 14, 'conform,off', 5, 'local', 'ok', ?, 3.5)",
                    [when])
        for arm, delivered, false in (("conform", 10, 2), ("off", 14, 10)):
            for i in range(14):
                con.execute("insert into deliveries (run_id, arm, task_id, delivered, refused, attempts_used, "
                            "hidden_spec_hash, gt_cases_total, false_delivery, gt_seconds) values "
                            "('gate-r1', ?, ?, ?, ?, 1, 'h', 3, ?, 0.1)",
                            [arm, f"HumanEval/{i}", i < delivered, i >= delivered, i < false])
        con.execute("insert into leak_verdicts (run_id, arm, block, task_id, scan_id, origin, finished, verdict, "
                    "reasons, texts, v1_hits, v1_flagged, v2_hits, v2_violations, gt_as_visible, items_v1, items_v2, "
                    "inputs_sha256) values ('gate-r1', 'conform', '', 'HumanEval/0', 's1', 'warehouse', true, "
                    "'clean', [], 4, 0, false, 0, 0, false, 10, 10, 'h'), ('gate-r1', 'off', '', 'HumanEval/0', "
                    "'s1', 'warehouse', true, '<violation>', ['planted'], 4, 1, true, 1, 1, false, 10, 10, 'h')")
    warehouse.publish(path, ["gate-r1"])
    return path


def test_sections_rates_and_intervals(snapshot):
    data = report_data.collect(warehouse.snapshot_path(snapshot))
    assert [s.key for s in data.sections] == SECTION_IDS
    fd = data.section("false-delivery")
    frame = next(iter(fd.tables.values())).set_index("arm")
    assert frame.loc["conform", ["tasks", "delivered", "false_deliveries"]].tolist() == [14, 10, 2]
    assert frame.loc["conform", "false_over_all"] == pytest.approx(2 / 14)
    assert frame.loc["conform", "false_over_delivered"] == pytest.approx(2 / 10)
    # Wilson 95% for 2/14 (Wilson 1927): centre (2 + 1.96^2/2) / (14 + 1.96^2), not the normal approximation
    assert frame.loc["conform", "all_ci_low"] == pytest.approx(0.0401, abs=5e-4)
    assert frame.loc["conform", "all_ci_high"] == pytest.approx(0.3994, abs=5e-4)
    assert frame.loc["off", "false_over_all"] == pytest.approx(10 / 14)
    assert data.section("leak").ran and "leak_verdicts" in data.section("leak").tables
    assert not data.section("v4v").ran and data.section("v4v").note == "not run yet"
    assert not data.section("audit").ran
    assert not data.section("seed004-table2").ran and "not run yet" in data.section("seed004-table2").note


def test_markdown_summary(snapshot):
    text = markdown.summary(report_data.collect(warehouse.snapshot_path(snapshot)), ["nightly: audit ok"])
    assert "## False delivery by arm" in text and "| gate-r1 | conform | 14 | 10 | 4 | 2 |" in text
    assert "## V4V certification\n\n_not run yet_" in text


def test_cli_writes_page_and_checks_paths(snapshot, tmp_path):
    out = tmp_path / "r.html"
    run = subprocess.run([sys.executable, "-m", "acceptgate", "report", "--warehouse", str(snapshot), "--out", str(out)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr
    page = out.read_text()
    assert page.count("<section id=") == len(SECTION_IDS) and "<svg" in page
    assert "&lt;violation&gt;" in page and "<violation>" not in page  # warehouse text is escaped
    # self-contained: no scripts, no stylesheet links, every href/src an in-page reference
    assert "<script" not in page and "<link" not in page
    refs = re.findall(r'(?:href|src)="([^"]*)"', page) + re.findall(r"url\(([^)]*)\)", page)
    assert refs and all(v.startswith("#") for v in refs), refs
    missing = subprocess.run([sys.executable, "-m", "acceptgate", "report", "--warehouse", str(tmp_path / "none.duckdb"),
                              "--out", str(tmp_path / "x.html")], capture_output=True, text=True)
    assert missing.returncode == 2 and "none.snapshot.duckdb" in missing.stderr
    assert not (tmp_path / "x.html").exists()
    unwritable = subprocess.run([sys.executable, "-m", "acceptgate", "report", "--warehouse", str(snapshot),
                                 "--out", str(out / "under-a-file.html")], capture_output=True, text=True)
    assert unwritable.returncode == 2 and "--out" in unwritable.stderr


def chromium(page: Path, tmp_path: Path, *extra: str) -> tuple[str, list[str]]:
    """(the DOM after load, the console lines Chromium logged) for a file, in a fresh profile."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("chromium not installed (scripts/test.sh installs Debian's chromium)")
    run = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra, "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, [line for line in run.stderr.splitlines() if ":CONSOLE" in line]


def test_console_check_sees_errors(tmp_path):
    """The check below can fail: a page with a script error is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>nosuchfunction();</script></body></html>")
    _, console = chromium(bad, tmp_path)
    assert any("nosuchfunction" in line for line in console)


def test_page_in_headless_chromium(snapshot, tmp_path):
    out, _ = report.build(snapshot, tmp_path / "report.html")
    dom, console = chromium(out, tmp_path)
    assert console == []
    for key in SECTION_IDS:
        assert f'<section id="{key}">' in dom
    # audit (none in this warehouse), V4V and statistics (no tables yet), and seed 004's six tables
    assert dom.count("not run yet") == 3 + len(report_seed004.SPECS)
    assert "<svg" in dom and "gate-r1" in dom
