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

from acceptgate import report
from acceptgate.store import warehouse
from acceptgate.report import data as report_data
from acceptgate.report import markdown
from acceptgate.report import seed004 as report_seed004

REPO = Path(__file__).resolve().parents[1]
SECTION_IDS = [s.key for s in report_data.SECTIONS]  # seed 004's sections registered by its import above
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
                    "('gate-r1', 'user', 'gate/1', '0', 'codet:<b>x</b>', 'd', 'h', 14, 'conform,off', 5, 'local', 'ok', ?, 3.5)",
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
    leak = data.section("leak")
    per_run = leak.tables["verdicts per run (with the planted-leak and negative controls)"]
    assert per_run.set_index("run_id").loc["gate-r1", ["records", "clean", "violation"]].tolist() == [2, 1, 0]
    assert list(leak.tables)[0].startswith("verdicts per run")  # the summary first, no raw table dump
    assert not any(caption in ("leak_verdicts", "leak_hits", "leak_scans") for caption in leak.tables)
    assert leak.queries and all(sql.startswith("select ") for _, sql in leak.queries)
    assert not data.section("v4v").ran and data.section("v4v").note == "not run yet"
    assert not data.section("audit").ran
    assert not data.section("seed004-table2").ran and "not run yet" in data.section("seed004-table2").note


def test_markdown_summary(snapshot):
    text = markdown.summary(report_data.collect(warehouse.snapshot_path(snapshot)), ["nightly: audit ok"])
    # beside every rate, the measured FPR_h of the V that gated it (this run was not certified)
    assert "## False delivery by arm" in text and ("| `conform` | `14.3% [4.0%, 39.9%]` | `20.0% [5.7%, 51.0%]` | "
                                                   "`not measured (--no-certify)` | `gate` | 14 | 10 | 4 | 2 | `gate-r1` |") in text
    assert "## V4V certification\n\n_not run yet_" in text


def test_cli_writes_page_and_checks_paths(snapshot, tmp_path):
    out = tmp_path / "r.html"
    run = subprocess.run([sys.executable, "-m", "acceptgate.cli", "report", "--warehouse", str(snapshot), "--out", str(out)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr
    page = out.read_text()
    data = report_data.collect(warehouse.snapshot_path(snapshot))
    ran = [sec.key for sec in data.sections if sec.ran or not sec.note.startswith("not run yet")]
    assert page.count("<section id=") == len(ran) + 1 and "<svg" in page  # + the one not-run line
    assert "codet:&lt;b&gt;x" in page and "<b>x" not in page  # warehouse text is escaped (a run's source)
    # self-contained: no scripts, no stylesheet links, every href/src an in-page reference
    assert "<script" not in page and "<link" not in page
    refs = re.findall(r'(?:href|src)="([^"]*)"', page) + re.findall(r"url\(([^)]*)\)", page)
    assert refs and all(v.startswith("#") for v in refs), refs
    missing = subprocess.run([sys.executable, "-m", "acceptgate.cli", "report", "--warehouse", str(tmp_path / "none.duckdb"),
                              "--out", str(tmp_path / "x.html")], capture_output=True, text=True)
    assert missing.returncode == 2 and "none.snapshot.duckdb" in missing.stderr
    assert not (tmp_path / "x.html").exists()
    unwritable = subprocess.run([sys.executable, "-m", "acceptgate.cli", "report", "--warehouse", str(snapshot),
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
    for key in SECTION_IDS:  # a section, or its name in the one not-run line: the nav's anchors all exist
        assert f'<section id="{key}">' in dom or f'<span id="{key}">' in dom
    # audit (none in this warehouse), V4V, and seed 004's six tables (no judge statistics yet): one line
    idle = re.search(r'<section id="not-run">(.*?)</section>', dom, re.S).group(1)
    assert f"Not run yet ({2 + len(report_seed004.SPECS)} sections)" in idle
    assert all(f'<span id="{key}">' in idle for key in ("audit", "v4v", *(k for k in SECTION_IDS if "seed004" in k)))
    assert dom.count("not run yet") == 1 and "acceptgate judge, then acceptgate stats --judge-run ID" in idle
    assert "no statistics published" in dom  # the stats tables exist, no stats run was published
    assert "<svg" in dom and "gate-r1" in dom


def _gate_warehouse(path: Path, arms: dict[str, tuple[int, int, int]], run_id: str = "gate-x",
                    more_run_ids: tuple[str, ...] = ()) -> Path:
    """A published gate run (or several alike, in one transaction and one publish): arm -> (tasks,
    delivered, false deliveries)."""
    warehouse.migrate(path)
    when = dt.datetime(2026, 3, 2, 12, tzinfo=dt.timezone.utc)
    tasks = max((n for n, _, _ in arms.values()), default=0)
    run_ids = [run_id, *more_run_ids]
    with warehouse.transaction(path) as con:
        for rid in run_ids:
            con.execute("insert into gate_runs (run_id, run_id_origin, pipeline, acceptgate_version, source, "
                        "tasks_from, tasks_sha256, task_count, arms, per_task, backend, status, started_at, "
                        "wall_seconds) values (?, 'user', 'gate/1', '0', 'codet:x', 'd', 'h', ?, ?, 5, 'local', 'ok', "
                        "?, 1.0)", [rid, tasks, ",".join(arms), when])
            for arm, (n, delivered, false) in arms.items():
                for i in range(n):
                    con.execute("insert into deliveries (run_id, arm, task_id, delivered, refused, attempts_used, "
                                "hidden_spec_hash, gt_cases_total, false_delivery, gt_seconds) values "
                                "(?, ?, ?, ?, ?, 1, 'h', 3, ?, 0.1)",
                                [rid, arm, f"T/{i}", i < delivered, i >= delivered, i < false])
    warehouse.publish(path, run_ids)
    return path


@pytest.mark.parametrize("arms", [
    {"conform": (14, 10, 0), "off": (14, 14, 14)},  # 0 % and 100 %: the Wilson bound a hair outside [0, 1]
    {"conform": (1, 1, 1), "off": (1, 0, 0)},        # one task; an arm that delivered nothing
    {"conform": (3, 0, 0)},                          # nothing delivered at all: no rate over delivered
])
def test_extreme_rates_render(tmp_path, arms):
    path = _gate_warehouse(tmp_path / "w.duckdb", arms)
    out, data = report.build(path, tmp_path / "r.html")
    frame = data.section("false-delivery").tables["per gate run and arm (Wilson 95% CIs; newest run first)"]
    assert ((frame["all_ci_low"] >= 0) & (frame["all_ci_high"] <= 1)).all()
    assert (frame["all_ci_low"] <= frame["false_over_all"]).all() and (frame["false_over_all"] <= frame["all_ci_high"]).all()
    page = out.read_text()
    assert "<svg" in page
    if "conform" in arms and arms["conform"][1] == 0:
        assert "n/a (no tasks)" in page  # the rate over delivered has no denominator, and says so


def test_demonstration_arm_is_labelled(tmp_path):
    path = _gate_warehouse(tmp_path / "w.duckdb", {"conform": (10, 9, 2), "off": (10, 10, 4),
                                                    "hmix-leaky-gt": (10, 10, 0)})
    out, data = report.build(path, tmp_path / "r.html")
    page = out.read_text()
    assert "hmix-leaky-gt (DEMONSTRATION: deliberately broken, sees GT)" in page
    assert "hmix-leaky-gt (demo, broken)" in page  # the chart's label
    assert page.count('class="caveat"') == 1
    assert ">hmix-leaky-gt</td>" not in page  # never the bare name alone in an arm cell
    md = markdown.summary(data)
    assert "DEMONSTRATION" in md


def test_long_tables_are_cut_and_say_so(tmp_path):
    path = tmp_path / "w.duckdb"
    # 30 runs in one publish (a publish per run made this test take 40 s on a loaded machine)
    _gate_warehouse(path, {"off": (2, 2, 1)}, run_id="gate-0", more_run_ids=tuple(f"gate-{i}" for i in range(1, 30)))
    data = report_data.collect(warehouse.snapshot_path(path))
    runs = data.section("runs")
    assert len(runs.tables["gate runs (newest first)"]) == report_data.MAX_ROWS
    assert any(f"showing {report_data.MAX_ROWS} of 30 rows" in n and "acceptgate sql" in n for n in runs.notes)
    fd = data.section("false-delivery")
    assert fd.tables["per gate run and arm (Wilson 95% CIs; newest run first)"]["run_id"].nunique() == 5
    assert any("newest 5 of 30 gate runs" in n for n in fd.notes)
    out, _ = report.build(path, tmp_path / "r.html")
    assert out.stat().st_size < 300_000  # the page's size is bounded, whatever the warehouse holds


def test_a_registered_section_is_drawn(snapshot, tmp_path):
    def collect(r, section):
        section.tables["summary"] = r.frame("select 42 as answer")
        section.queries.append(("the answer", "select 42"))

    spec = report_data.SectionSpec("extra", "An added section", collect)
    report_data.register(spec, after="leak")
    try:
        out, data = report.build(snapshot, tmp_path / "r.html")
        keys = [s.key for s in data.sections]
        assert keys.index("extra") == keys.index("leak") + 1
        page = out.read_text()
        assert '<section id="extra">' in page and "<td>42</td>" in page and "select 42" in page
    finally:
        report_data.SECTIONS.remove(spec)


@pytest.mark.parametrize("width", [1200, 400])
def test_screenshots_at_desktop_and_phone_width(snapshot, tmp_path, width):
    """The page renders at both widths (kept under tests' tmp for a person to look at); 400 px in an
    iframe of that width, as Chromium's headless window is at least 500 px wide."""
    out, _ = report.build(snapshot, tmp_path / "report.html")
    shot = tmp_path / f"report-{width}.png"
    chromium(framed(out, width), tmp_path, f"--window-size={max(width, 500)},2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000


def _coordinates(svg: str) -> tuple[float, list[float]]:
    """The SVG's width and every x coordinate drawn (attributes and path commands)."""
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
    xs = [float(v) for v in re.findall(r'\b(?:x|x1|x2|cx)="(-?[\d.]+)"', svg)]
    for path in re.findall(r' d="([^"]+)"', svg):
        xs += [float(v) for v in re.findall(r"[MH](-?[\d.]+)", path)]
    return width, xs


@pytest.mark.parametrize("zero_line", [False, True])
def test_a_chart_draws_every_point_inside_its_frame(zero_line):
    """A value or interval beyond the chart's nominal range widens the scale: nothing is clipped."""
    import pandas as pd

    from acceptgate.report import html as report_html

    frame = pd.DataFrame({"label": ["conform", "off", "edge"], "value": [100.0, -12.0, 0.0],
                          "low": [96.0, -30.0, 0.0], "high": [104.0, 3.0, 2.5]})
    spec = report_data.Chart(frame, xlabel="false delivery (%)", caption="c", xlim=(0.0, 100.0), zero_line=zero_line)
    svg = report_html.chart(spec)
    assert "clip" not in svg  # no clip path hides a point
    width, xs = _coordinates(svg)
    assert xs and all(0 <= x <= width for x in xs), (width, sorted(xs)[:3], sorted(xs)[-3:])
    assert "off: -12 [-30, 3]" in svg  # every row's value and interval, as a tooltip


def _audit_runs(path: Path, runs: list[tuple[str, int | None, int]]) -> None:
    """Published audit runs: (run id, --limit or None for all tasks, minute finished), one execution each."""
    warehouse.migrate(path)
    with warehouse.transaction(path) as con:
        for run_id, limit, minute in runs:
            when = dt.datetime(2026, 3, 3, 12, minute, tzinfo=dt.timezone.utc)
            con.execute("insert into runs (run_id, run_id_origin, pipeline, acceptgate_version, dataset, source, "
                        "source_sha256, backend, task_limit, status, attempts, first_started_at, started_at, "
                        "finished_at, wall_seconds) values (?, 'derived', 'audit/1', '0', 'humaneval', 's', 'h', "
                        "'local', ?, 'ok', 1, ?, ?, ?, 1.0)", [run_id, limit, when, when, when])
            con.execute("insert into executions (run_id, task_id, suite, candidate_sha256, spec_hash, render_hash, "
                        "role, label, verdict, detail, exit, cases_total, cases_passed, cases_recorded, wall_seconds, "
                        "backend, isolation, executed_in) values (?, 'HumanEval/0', 'hidden', ?, 'h', 'h', "
                        "'reference', 'ref', 'pass', '', '0', 1, 1, 1, 0.1, 'local', '{}', 'execute')",
                        [run_id, run_id])
    warehouse.publish(path, [r[0] for r in runs])


def test_the_audit_section_shows_the_main_job_and_folds_the_others(tmp_path):
    """A nightly's 3-task audit after the 164-task main job does not take its place; it stays one click away."""
    path = tmp_path / "w.duckdb"
    _audit_runs(path, [("audit-main", None, 0), ("audit-nightly", 3, 30), ("audit-older", 20, 10)])
    out, data = report.build(path, tmp_path / "r.html")
    audit = data.section("audit")
    assert list(audit.tables) == ["audit run audit-main (all tasks; the main job)"]
    assert list(audit.more) == ["audit run audit-nightly (--limit 3)", "audit run audit-older (--limit 20)"]
    page = out.read_text()
    assert page.index("audit-main (all tasks; the main job)") < page.index(
        '<details class="run"><summary>audit run audit-nightly (--limit 3)</summary>')




def framed(page: Path, width: int) -> Path:
    """The page in an iframe exactly ``width`` px wide (headless Chromium's window is never narrower than
    500 px), and a script that writes into the title what overflows: the page's width and its viewport,
    how many table boxes scroll sideways, and how many elements stick out other than inside such a box."""
    import html as html_text

    measure = ("<script>window.onload = function () { var d = document.getElementById('f').contentDocument,"
               " w = d.documentElement.clientWidth, out = 0, boxes = 0;"
               " d.querySelectorAll('body *').forEach(function (e) { if (e.getBoundingClientRect().right > w + 1"
               " && !e.closest('.wide')) out++; });"
               " d.querySelectorAll('.wide').forEach(function (e) { if (e.scrollWidth > e.clientWidth + 1) boxes++; });"
               " document.title = [d.documentElement.scrollWidth, w, boxes, out].join(' '); };</script>")
    wrapper = page.with_name(f"framed-{width}.html")
    wrapper.write_text(f'<!DOCTYPE html><html><body style="margin:0"><iframe id="f" style="width:{width}px;'
                       f'height:2400px;border:0" srcdoc="{html_text.escape(page.read_text(), quote=True)}"></iframe>'
                       f"{measure}</body></html>")
    return wrapper


def _layout(page: Path, tmp_path: Path, width: int) -> tuple[int, int, int, int]:
    dom, _ = chromium(framed(page, width), tmp_path, f"--window-size={max(width, 500)},2400")
    return tuple(map(int, re.search(r"<title>([\d ]+)</title>", dom).group(1).split()))


def test_no_sideways_scrolling_at_1200_px_and_nothing_sticks_out_at_400(tmp_path):
    """At 1200 px no table scrolls sideways (ids and paths wrap inside their cells); at 400 px the
    navigation wraps and only wide tables scroll, inside their own box."""
    from acceptgate.report import html as report_html

    assert 'class="text mid"' in report_html._cell("codet:../shared/data/samples/x.gz")
    path = _gate_warehouse(tmp_path / "w.duckdb", {"conform": (164, 120, 9), "hmix": (164, 130, 12),
                                                   "off": (164, 164, 31), "hmix-leaky-gt": (164, 160, 0)},
                           run_id="gate-7f3c2a91d4e5b6a7", more_run_ids=("gate-1b2c3d4e5f6a7b8c",))
    out, _ = report.build(path, tmp_path / "r.html")
    page_width, client, boxes, sticking_out = _layout(out, tmp_path, 1200)
    assert page_width <= client and boxes == 0 and sticking_out == 0, (page_width, client, boxes, sticking_out)
    page_width, client, boxes, sticking_out = _layout(out, tmp_path, 400)
    assert page_width <= client and sticking_out == 0, (page_width, client, boxes, sticking_out)


def test_the_layout_check_can_fail(tmp_path):
    """The same measure on a page with a 900 px block outside any table box and a table box that scrolls."""
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><div style="width:900px">wide</div><div class="wide" style="overflow-x:auto">'
                   '<table style="width:2000px"><tr><td>x</td></tr></table></div></body></html>')
    page_width, client, boxes, sticking_out = _layout(bad, tmp_path, 400)
    assert page_width > client and sticking_out == 1 and boxes == 1

def test_each_rate_is_shown_beside_the_measured_fpr_h_of_the_v_that_gated_it(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with warehouse.transaction(path) as con:
        con.execute("insert into gate_runs (run_id, run_id_origin, pipeline, acceptgate_version, source, tasks_from, "
                    "tasks_sha256, task_count, arms, per_task, backend, status, started_at, certify) values ('gate-c', "
                    "'user', 'gate/1', '0', 'codet:x', 'd', 'h', 2, 'conform,hmix,off', 5, 'local', 'ok', now(), "
                    "'checked')")
        for arm in ("conform", "hmix", "off"):
            for i, fpr in enumerate((100 / 3, 50.0)):
                con.execute("insert into deliveries (run_id, arm, task_id, delivered, refused, attempts_used, "
                            "hidden_spec_hash, gt_cases_total, false_delivery, gt_seconds) values "
                            "('gate-c', ?, ?, true, false, 1, 'h', 3, ?, 0.1)", [arm, f"T/{i}", i == 0])
                con.execute("insert into gate_decisions (run_id, arm, task_id, source, visible_spec_hash, decision, "
                            "stop_reason, attempts_used, tokens_used, wall_seconds, certification, v_fpr_h) values "
                            "('gate-c', ?, ?, 'replay:codet', 'v', 'delivered', 'ok', 1, 0, 0.1, 'certify-1', ?)",
                            [arm, f"T/{i}", fpr])
    warehouse.publish(path, ["gate-c"])
    import duckdb

    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        frame = report_data.false_delivery_display(report_data.false_delivery(con)).set_index("arm")
    assert frame.loc["conform", "V FPR_h (measured)"] == "41.7% (2 tasks)"
    assert frame.loc["off", "V FPR_h (measured)"] == "- (no V: ungated)"
    # H-MIX on replayed samples sent its feedback to no model: its rate is resampling, labelled so
    assert frame.loc[["conform", "hmix", "off"], "kind"].tolist() == ["gate", "resampling", "no gate"]


# What a candidate (or any text stored in the warehouse) may try to make the summary's viewer do.
HOSTILE = ["![pixel](http://attacker.invalid/pixel.png)", "[click](javascript:alert(1))",
           "<img src=http://attacker.invalid/x onerror=alert(1)>", "<a href='http://attacker.invalid/a'>a</a>",
           "`` ` ![tick](http://attacker.invalid/tick) ``", "```", "\\|![pipe](http://attacker.invalid/pipe)|",
           "<http://attacker.invalid/auto>", " `![pad](http://attacker.invalid/pad)` "]


def _rendered(md: str) -> str:
    """The summary as a CommonMark renderer with GFM tables turns it into HTML (markdown-it-py)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(md)


def _elements(page: str) -> set[str]:
    from html.parser import HTMLParser

    found: set[str] = set()

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.add(tag)

    Tags().feed(page)
    return found


def test_markdown_summary_shows_warehouse_and_header_text_as_literal_code(tmp_path):
    """Hostile text in a run's source (a table cell) and in the flow's header lines renders as code: no
    image, no link, no HTML element of its own, every table row keeps its cells, and the text reads back
    literally."""
    import html

    path = tmp_path / "w.duckdb"
    _gate_warehouse(path, {"off": (2, 2, 1)}, run_id="gate-0", more_run_ids=tuple(f"gate-{i}" for i in range(1, len(HOSTILE))))
    with warehouse.transaction(path) as con:
        for i, payload in enumerate(HOSTILE):
            con.execute("update gate_runs set source = ? where run_id = ?", [payload, f"gate-{i}"])
    warehouse.publish(path, [f"gate-{i}" for i in range(len(HOSTILE))])
    data = report_data.collect(warehouse.snapshot_path(path))
    md = markdown.summary(data, ["nightly: gates failed: " + p for p in HOSTILE] + ["```\n![fence](http://attacker.invalid/f)"])
    page = _rendered(md)
    assert _elements(page) <= {"h1", "h2", "p", "em", "strong", "code", "pre", "table", "thead", "tbody", "tr", "th",
                                "td"}, _elements(page)
    outside_code = re.sub(r"<code>.*?</code>", "", page, flags=re.S)
    assert "attacker.invalid" not in outside_code and "javascript:" not in outside_code
    codes = [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", page, flags=re.S)]
    for payload in HOSTILE:
        assert any(c.strip() == payload.strip() for c in codes) or any(payload in c for c in codes), payload
    for table_html in re.findall(r"<table>.*?</table>", page, flags=re.S):
        heads = len(re.findall(r"<th[ >]", table_html))
        rows = re.findall(r"<tr>(.*?)</tr>", table_html.split("</thead>")[-1], flags=re.S)
        assert rows and all(len(re.findall(r"<td[ >]", r)) == heads for r in rows), table_html


def test_markdown_summary_escaping_fails_on_raw_text(tmp_path, monkeypatch):
    """The check above can fail: with cells written raw, the image of a hostile source renders."""
    path = _gate_warehouse(tmp_path / "w.duckdb", {"off": (2, 2, 1)})
    with warehouse.transaction(path) as con:
        con.execute("update gate_runs set source = ?", [HOSTILE[0]])
    warehouse.publish(path, ["gate-x"])
    monkeypatch.setattr(markdown, "_cell", lambda v: str(v))
    page = _rendered(markdown.summary(report_data.collect(warehouse.snapshot_path(path))))
    assert "img" in _elements(page) and '<img src="http://attacker.invalid/pixel.png"' in page
