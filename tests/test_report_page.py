"""report.html: the numbers its charts are drawn from (checked by hand), the page of a Venus-like
run (what was run, on which data, the summary, the charts, the wall time; nothing loaded from
outside), its rebuild by `raysim report`, and, in headless Chromium, that it draws every chart and
asks for nothing but itself."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from browser_check import render
from raysim.report.page import Chart, Page, number_list
from raysim.report.page_data import cdf_on, cdf_points, largest_vcs, step_means
from raysim.tables import cell

REPO = Path(__file__).resolve().parent.parent
IMG = REPO / "docs" / "img"


def charts_of(html: str) -> list[dict]:
    """The chart specifications a page carries."""
    found = re.search(r'<script id="raysim-charts" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))


def test_cdf_points_lie_on_the_empirical_cdf():
    x, f = cdf_points([3.0, 1.0, 2.0, np.nan, 2.0])  # NaN: a job that never finished, left out
    assert x.tolist() == [1.0, 2.0, 3.0] and f.tolist() == [0.25, 0.75, 1.0]
    assert cdf_on(np.array([0.5, 2.0, 9.0]), [1.0, 2.0, 2.0, 3.0]).tolist() == [0.0, 0.75, 1.0]
    assert all(len(a) == 0 for a in cdf_points([np.nan]))
    many = cdf_points(np.arange(100_000.0))
    assert len(many[0]) <= 201 and many[1][-1] == 1.0


def test_step_means_are_time_weighted():
    # 2 from t=0 to 10, 4 from 10 to 40 (the end)
    means = step_means(np.array([0, 10]), np.array([2.0, 4.0]), 40.0, np.array([0.0, 20.0, 40.0]))
    assert means.tolist() == [3.0, 4.0]  # (2*10 + 4*10) / 20, then 4
    outside = step_means(np.array([100]), np.array([1.0]), 200.0, np.array([0.0, 50.0, 150.0, 300.0]))
    assert np.isnan(outside[0]) and outside[1:].tolist() == [1.0, 1.0]  # before the first row: no value


def test_vc_series_splits_row_groups_with_their_own_dictionaries(tmp_path):
    """A grid file whose row groups encode the VC names differently: each VC's spans come out right."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from raysim.report.page_data import series_edges, vc_series

    def group(times, names, util):
        return pa.table({"vc": pa.array(names).dictionary_encode(), "time": pa.array(times, pa.int64()),
                         "gpu_utilization": pa.array(util, pa.float32())})

    path = tmp_path / "timeseries.parquet"
    with pq.ParquetWriter(path, group([0], ["a"], [0.0]).schema) as writer:
        writer.write_table(group([0, 0, 0, 60, 60, 60], ["a", "b", "all", "a", "b", "all"], [0, 1, .5, 1, 1, 1]))
        writer.write_table(group([120, 120, 120], ["all", "b", "a"], [1, 0.75, 0.5]))  # another dictionary
    edges, step = series_edges(path)
    assert step == 60 and edges.tolist() == [0, 60, 120, 180]
    got = vc_series(path, ["all", "a", "b"], ["gpu_utilization"], edges)
    assert got["a"]["gpu_utilization"].tolist() == [0, 1, 0.5]
    assert got["b"]["gpu_utilization"].tolist() == [1, 1, 0.75]
    assert got["all"]["gpu_utilization"].tolist() == [0.5, 1, 1]
    coarse = vc_series(path, ["a"], ["gpu_utilization"], np.array([0.0, 180.0]))
    assert coarse["a"]["gpu_utilization"].tolist() == [0.5]  # (0 + 1 + 0.5) / 3


def test_page_is_self_contained_and_escapes_text():
    page = Page(title="a <b> & 'c'")
    page.section("s", "Section", page.chart(Chart("c1", "</script><script>alert(1)</script>", {"label": "x"},
                                                  {"label": "y"}, ["line"], [[0, 1], [np.nan, np.inf]])))
    html = page.render()
    assert "a &lt;b&gt; &amp; &#x27;c&#x27;" in html
    assert html.count("</script>") == 3  # the JSON, uPlot and the page's script: the title cannot close one
    assert charts_of(html)[0]["data"] == [[0.0, 1.0], [None, None]]
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing to fetch
    assert number_list([1234567.891, 0.000123456]) == [1234600.0, 0.00012346]
    assert number_list([1879258.0, 0.2231194, np.nan], exact=True) == [1879258.0, 0.2231194, None]


def test_bars_and_points_carry_their_values_exact_and_the_tables_text():
    """A bar's value is read one at a time (as a table's): its JSON is exact, not 5 digits, and
    its legend shows the text given (the table's), where lines keep 5 significant digits."""
    page = Page(title="t")
    page.chart(Chart("b", "bars", {"label": "run", "categories": ["a", "b"]}, {"label": ""}, ["makespan"],
                     [[0, 1], [1879209.0, 1879258.0]], kind="bars", text=[["1,879,209", "1,879,258"]]))
    page.chart(Chart("l", "line", {"label": "x"}, {"label": "y"}, ["u"], [[0, 1], [0.2231194, 1879258.0]]))
    bars, line = charts_of(page.render())
    assert bars["data"][1] == [1879209.0, 1879258.0] and bars["text"] == [["1,879,209", "1,879,258"]]
    assert line["data"][1] == [0.22312, 1879300.0] and line["text"] is None


def test_bar_axis_starts_at_0_unless_values_lie_close_but_not_too_close():
    from raysim.report.bar_axis import bar_axis

    fmt = "{:,.0f}".format
    makespans = bar_axis([1879209, 1879209, 1879258])  # 0.0026 % apart: from 0, the caption says how close
    assert makespans.low == 0 and makespans.high > 1879258 and makespans.from_zero
    assert makespans.note(fmt) == ("The values lie within 0.0026 % of each other (1,879,209 to 1,879,258): "
                                   "bars from 0 look equal.")
    jct = bar_axis([809406.625, 840136.67, 811044.264])  # 3.7 % apart: the axis spans them
    assert 800000 < jct.low < 809406.625 and 840136.67 < jct.high < 850000 and not jct.from_zero
    assert "does not start at 0" in jct.note(fmt) and "at most 3.7 % of the largest value" in jct.note(fmt)
    far = bar_axis([26923.2, 12766.3, np.nan])  # a factor 2 apart: from 0, nothing to say; NaN: no bar
    assert far.low == 0 and far.high > 26923.2 and far.note(fmt) == ""
    assert bar_axis([5.0, 5.0]).note(fmt) == "Every run has the same value (5)." and bar_axis([5.0, 5.0]).low == 0
    assert bar_axis([5.0, np.nan]).note(fmt) == ""  # one bar: nothing to compare
    negative = bar_axis([-3.0, 2.0])
    assert negative.low < -3 and negative.high > 2
    assert bar_axis([0.0, 0.0]).high == 1.0 and bar_axis([np.nan]) is None


@pytest.fixture(scope="module")
def venus_run(tmp_path_factory) -> Path:
    """The README's quick start, in-process: the shipped Venus-like week under FIFO."""
    folder = tmp_path_factory.mktemp("venus") / "run"
    res = subprocess.run([sys.executable, "-m", "raysim", "+experiment=venus", "runtime=local",
                          f"hydra.run.dir={folder}"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"page: {folder / 'report.html'}" in res.stdout
    assert "speedup bound (critical path per window, VCs packed as for k CPUs): " in res.stdout
    return folder


def test_run_page_says_what_was_run_and_what_came_out(venus_run):
    html = (venus_run / "report.html").read_text()
    summary = pd.read_csv(venus_run / "summary.csv")
    overall = summary[summary.vc == "all"].iloc[0]
    assert f"{overall.avg_jct:,.1f}" in html and f"{overall.avg_queue:,.1f}" in html  # the summary table
    for vc in summary.vc:
        assert f">{vc}<" in html
    assert "python -m raysim +experiment=venus runtime=local" in html
    for fact in ("policy", "placer", "quota", "runtime", "seed", "raysim version", "sha256"):
        assert f"<dt>{fact}</dt>" in html
    assert re.search(r"<code>[0-9a-f]{64}</code>", html)  # the trace file's hash
    assert "none skipped, none converted" in html
    assert "<dt>cluster</dt><dd>15 VCs, 1,080 GPUs</dd>" in html  # GPUs of the unnamed type `gpu`: no "1,080 gpu GPUs"
    assert "simulating" in html and "reading the trace" in html  # the wall-time split
    charts = {c["id"]: c for c in charts_of(html)}
    per_vc = [f"series_gpu_utilization_{i}" for i in range(10)]
    assert list(charts)[:15] == ["jct_cdf", "queue_cdf", "queue_per_vc", "series_gpu_utilization", *per_vc,
                                 "series_pending_gpujob_num"]
    jct = charts["jct_cdf"]
    assert jct["x"]["log"] and jct["data"][1][-1] == 1.0 and len(jct["data"][0]) <= 201
    vc_queue = summary[summary.vc != "all"].avg_queue
    queue = charts["queue_per_vc"]  # exact, the legend as the table
    assert queue["data"][1] == vc_queue.tolist() and queue["text"] == [[cell(v, "avg_queue") for v in vc_queue]]
    assert jct["kind"] == charts["queue_cdf"]["kind"] == "step"  # an empirical CDF is a step function
    utilisation = charts["series_gpu_utilization"]
    assert utilisation["series"] == ["cluster"] and len(utilisation["data"][0]) <= 1000
    layout = json.loads((venus_run / "trace_report.json").read_text())["layout"]
    assert [charts[i]["title"] for i in per_vc] == largest_vcs(layout)  # a small chart for each of the 10 largest VCs
    for i in per_vc:  # each against the cluster's line, on the same axes
        assert charts[i]["series"] == ["cluster", charts[i]["title"]] and charts[i]["bold"] == 1
        assert charts[i]["data"][1] == utilisation["data"][1] and charts[i]["y"]["range"] == [0, 1]
    pending = charts["series_pending_gpujob_num"]  # the cluster, the 5 VCs that queue most, the other 10 summed
    assert pending["series"][0] == "cluster" and pending["series"][-1] == "other 10 VCs" and len(pending["series"]) == 7
    check_pending_lines(venus_run / "timeseries.parquet", list(layout), pending)
    assert (venus_run / "report.html").stat().st_size < 1_000_000
    trace_report = json.loads((venus_run / "trace_report.json").read_text())
    assert set(trace_report["wall_s"]) == {"read_s", "ray_start_s", "simulate_s", "write_s"}
    assert trace_report["wall_s"]["ray_start_s"] is None  # runtime=local
    timing = trace_report["timing"]  # inside the simulation: the split and the bound (tests/test_speedup.py)
    assert "Inside the simulation" in html and "the critical path" in html and "waiting beyond it" in html
    assert all(f"<b>{b:.2f}x</b> on {k} CPUs" in html for k, b in timing["speedup_bound"].items())


def check_pending_lines(path: Path, vcs: list[str], chart: dict) -> None:
    """The pending-jobs chart's VC lines are those of the VCs whose span means peak highest, and its
    last line the sum of the others' (to the page's significant digits), span by span."""
    from raysim.report.page_data import PENDING_VCS, series_edges, vc_series

    edges, _ = series_edges(path)
    every = {vc: d["pending_gpujob_num"] for vc, d in vc_series(path, vcs, ["pending_gpujob_num"], edges).items()}
    peaks = sorted(every, key=lambda vc: -np.nanmax(every[vc]))
    shown = chart["series"][1:-1]
    assert len(shown) == PENDING_VCS and set(shown) == set(peaks[:PENDING_VCS])
    assert shown == [vc for vc in vcs if vc in shown]  # in layout order
    drawn = [np.array([np.nan if v is None else v for v in line], dtype=float) for line in chart["data"][1:]]
    others = sum(every[vc] for vc in vcs if vc not in shown)
    np.testing.assert_allclose(drawn[-1], others, rtol=1e-3)
    for vc, line in zip(shown, drawn[1:-1]):
        np.testing.assert_allclose(line, every[vc], rtol=1e-3)
    np.testing.assert_allclose(drawn[0], sum(every.values()), rtol=1e-3, atol=1e-2)  # the cluster: every VC's


def test_the_run_page_names_the_ray_nodes_of_the_vc_groups():
    from raysim.report.run_page import nodes_html

    nodes = {"driver": "a" * 56, "groups": ["a" * 56, "b" * 56, "b" * 56],
             "nodes": {"a" * 56: {"host": "head", "address": "10.0.0.1"}, "b" * 56: {"host": "w<1>", "address": "10.0.0.2"}}}
    html = nodes_html(nodes)
    assert "On 2 Ray nodes" in html and "head (10.0.0.1, node <code>aaaaaaaaaaaa</code>): 1 VC group and the driver" in html
    assert "w&lt;1&gt; (10.0.0.2, node <code>bbbbbbbbbbbb</code>): 2 VC groups</li>" in html
    assert nodes_html(None) == ""


def test_peaks_and_others_keeps_the_highest_queues_and_sums_the_rest():
    from raysim.report.page_data import peaks_and_others

    lines = {"a": np.array([1.0, 2.0]), "b": np.array([9.0, 0.0]), "c": np.array([0.0, 5.0]),
             "d": np.array([np.nan, 3.0]), "e": np.array([np.nan, np.nan])}
    kept = peaks_and_others(lines, top=2)
    assert list(kept) == ["b", "c", "other 3 VCs"]  # b and c peak highest; layout order kept
    assert kept["other 3 VCs"].tolist() == [1.0, 5.0]  # a + d (+ e, no value): NaN counts as none
    assert peaks_and_others(lines, top=4) == lines  # at most top + 1 VCs: each its own line
    gaps = peaks_and_others({"a": np.array([1.0, np.nan]), "b": np.array([2.0, np.nan]), "c": np.full(2, np.nan)}, top=1)
    assert list(gaps) == ["b", "other 2 VCs"] and gaps["other 2 VCs"][0] == 1.0 and np.isnan(gaps["other 2 VCs"][1])


def test_report_rebuilds_a_run_page(venus_run, tmp_path):
    (venus_run / "report.html").unlink()
    res = subprocess.run([sys.executable, "-m", "raysim", "report", str(venus_run)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert (venus_run / "report.html").exists() and "report.html" in res.stdout


@pytest.fixture(scope="module")
def ten_job_run(tmp_path_factory) -> Path:
    """A run of the shipped Venus-like week's first 10 jobs (its whole cluster): CDFs of a few steps."""
    import pyarrow.parquet as pq

    week = REPO / "traces" / "venus_synth"
    trace = tmp_path_factory.mktemp("ten_jobs") / "trace"
    trace.mkdir()
    pq.write_table(pq.read_table(week / "jobs.parquet").slice(0, 10), trace / "jobs.parquet")
    (trace / "vc_config.csv").write_text((week / "vc_config.csv").read_text())
    folder = trace.parent / "run"
    res = subprocess.run([sys.executable, "-m", "raysim", "+experiment=venus", "runtime=local", f"trace.path={trace}",
                          f"hydra.run.dir={folder}"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return folder


def check_laid_out(seen, html: str) -> None:
    """What a person sees of a page's layout in Chromium: every tick label and axis title inside its
    chart (none cut off at the edge), legends that name the lines without a placeholder value while
    the cursor is away, and a hint over every table wider than the page."""
    specs = charts_of(html)
    assert seen.texts > 3 * len(specs)  # the charts' labels were drawn and measured: two axis titles, ticks
    assert seen.outside == []
    assert seen.legends == [spec["series"] for spec in specs]  # the names alone: no x value, no "–"
    assert all(seen.wide_tables)


def test_run_page_in_chromium(venus_run, tmp_path):
    """Drawn in headless Chromium at a laptop's width (1,280 px): every chart, the summary's numbers,
    no request but the page; nothing cut off, legends without placeholders, the wide summary's hint."""
    shot = tmp_path / "run.png"
    seen = render(venus_run / "report.html", screenshot=shot, width=1280)
    assert seen.errors == []
    check_laid_out(seen, (venus_run / "report.html").read_text())
    assert seen.wide_tables  # the summary's 20-odd columns
    assert seen.requests == [(venus_run / "report.html").resolve().as_uri()]
    specs = charts_of((venus_run / "report.html").read_text())
    assert seen.drawn == str(len(specs)) and seen.charts == len(specs)
    assert seen.titles == [c["title"] for c in specs]
    overall = pd.read_csv(venus_run / "summary.csv").set_index("vc").loc["all"]
    assert f"{overall.avg_jct:,.1f}" in seen.text and f"{int(overall.jobs):,}" in seen.text
    assert shot.stat().st_size > 50_000


def hand_causes(tmp_path: Path) -> Path:
    """A run folder holding the lost_by_cause.csv of test_capacity's four hand-made jobs."""
    from test_capacity import hand_stops

    from raysim.report.capacity import write_lost_by_cause

    write_lost_by_cause(hand_stops(), tmp_path, plot=False)
    return tmp_path


def test_the_run_pages_causes_are_those_of_lost_by_cause_csv(tmp_path):
    """The per-cause table and charts carry lost_by_cause.csv's numbers as they are, and the
    headline keeps the policy's preemptions, the reclaims and the failures apart."""
    from raysim.report.causes import causes_html, headline, read_causes

    csv = pd.read_csv(hand_causes(tmp_path) / "lost_by_cause.csv")
    cluster = csv[csv.vc == "all"]
    page = Page(title="t")
    html = causes_html(page, read_causes(tmp_path))
    cells = re.findall(r'<tr><td data-v="([^"]*)">[^<]*</td><td data-v="[^"]*">[^<]*</td>'
                       r'<td class=n data-v="([^"]*)">[^<]*</td><td class=n data-v="([^"]*)">', html)
    assert [(c, float(n), float(h)) for c, n, h in cells[:len(cluster)]] == list(
        zip(cluster.cause, cluster.interruptions.astype(float), cluster.lost_gpu_h))
    charts = {c.id: c for c in page.charts}
    assert charts["causes_lost_gpu_h"].x["categories"] == cluster.cause.tolist()
    assert charts["causes_lost_gpu_h"].data[1].tolist() == cluster.lost_gpu_h.tolist()
    assert charts["causes_interruptions"].data[1].tolist() == cluster.interruptions.tolist()
    events = charts["causes_events_lost_gpu_h"]  # the failures alone, not dwarfed by the stops
    assert events.x["categories"] == ["gpu"] and events.data[1].tolist() == [1.5]
    assert headline(read_causes(tmp_path)) == [
        ("stops: failures and node events", "2"), ("GPU-hours lost: failures and node events", "1.5"),
        ("stops: the policy's preemptions", "2"), ("GPU-hours lost: the policy's preemptions", "2.0"),
        ("stops: quota reclaims", "1"), ("GPU-hours lost: quota reclaims", "2.0"),
        ("stops: preemptions and reclaims, not split", "4"),
        ("GPU-hours lost: preemptions and reclaims, not split", "1.0")]


def test_a_sweep_has_columns_per_cause(tmp_path):
    from raysim.report.causes import read_causes, sweep_causes_html, with_cause_columns

    runs = pd.DataFrame({"run": ["x", "x", "x", "y", "y", "y"], "vc": ["a", "b", "all"] * 2, "jobs": [1, 1, 2] * 2})
    table_ = with_cause_columns(runs, {"x": read_causes(hand_causes(tmp_path))})
    assert list(table_.columns) == ["run", "vc", "jobs", "preemptions_interruptions", "preemptions_lost_gpu_h",
                                    "reclaims_interruptions", "reclaims_lost_gpu_h", "gpu_interruptions",
                                    "gpu_lost_gpu_h", "preemptions_and_reclaims_interruptions",
                                    "preemptions_and_reclaims_lost_gpu_h"]
    x = table_[table_.run == "x"].set_index("vc")
    assert x.gpu_lost_gpu_h.tolist() == [1.0, 0.5, 1.5] and x.reclaims_interruptions.tolist() == [1, 0, 1]
    assert table_[table_.run == "y"].iloc[:, 3:].isna().all().all()  # no capacity events: empty, not 0
    page = Page(title="t")
    assert "preemptions_and_reclaims" in sweep_causes_html(page, table_, ["x", "y"])
    dots = page.charts[0]
    assert dots.series == ["x", "y"] and dots.x["categories"] == ["preemptions", "reclaims", "gpu",
                                                                  "preemptions_and_reclaims"]
    assert dots.data[1].tolist() == [2.0, 2.0, 1.5, 1.0] and np.isnan(dots.data[2]).all()


@pytest.fixture(scope="module")
def failures_run(tmp_path_factory, venus_first_day) -> Path:
    """The maintenance experiment's node log and Llama 3's failures under Tiresias with checkpoints,
    on the shipped week's first day."""
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run import run

    folder = tmp_path_factory.mktemp("failures") / "run"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[
            "+experiment=venus_maintenance", "policy=tiresias", "runtime=local", "failures=llama3",
            "failures.gpu_mtbf_h=2000", "checkpoint.interval_s=1800", "checkpoint.write_s=60",
            "checkpoint.restart_s=300", "report.plots=none", f"trace.path={venus_first_day}"])
    run(cfg, folder)
    return folder


def test_a_run_page_with_failures_in_chromium(failures_run):
    """The page of a run with a node log and failures, drawn in Chromium: the stops and lost work per
    cause as lost_by_cause.csv has them (the policy's preemptions apart from the failures and node
    events), and the node log and failure model by their resolved paths and hashes."""
    from playwright.sync_api import sync_playwright

    from browser_check import FLAGS, chromium

    csv = pd.read_csv(failures_run / "lost_by_cause.csv")
    cluster = csv[csv.vc == "all"]
    assert "preemptions" in set(cluster.cause) and len(cluster) > 2  # Tiresias' own, and failures and node events
    log = REPO / "traces" / "venus_synth" / "maintenance.csv"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((failures_run / "report.html").resolve().as_uri(), wait_until="load")
            rows = page.eval_on_selector_all("#causes > .scroll > table > tbody > tr", """rows => rows.map(
                r => Array.from(r.cells).map(c => c.getAttribute('data-v')))""")
            titles = page.locator("#causes .uplot .u-title").all_inner_texts()
            cards = page.locator("#summary .card").all_inner_texts()
            data = page.inner_text("#data")
            text = page.inner_text("body")
        finally:
            browser.close()
    assert errors == []
    assert [(c, float(n), float(h)) for c, _, n, h in rows] == list(
        zip(cluster.cause, cluster.interruptions.astype(float), cluster.lost_gpu_h))
    assert titles == ["GPU-hours of work lost per cause, whole cluster", "Interruptions per cause, whole cluster",
                      "GPU-hours of work lost per failure or node event, whole cluster"]
    events = cluster[cluster.cause != "preemptions"]
    preempted = cluster[cluster.cause == "preemptions"].iloc[0]
    shown = {tuple(c.split("\n")[::-1]) for c in cards}
    assert {("stops: failures and node events", f"{events.interruptions.sum():,}"),
            ("GPU-hours lost: failures and node events", f"{events.lost_gpu_h.sum():,.1f}"),
            ("stops: the policy's preemptions", f"{preempted.interruptions:,}"),
            ("GPU-hours lost: the policy's preemptions", f"{preempted.lost_gpu_h:,.1f}")} <= shown
    assert not any(k == "GPU-hours of work lost" for k, _ in shown)  # no lumped total
    assert "${" not in text
    assert str(log) in data and hashlib.sha256(log.read_bytes()).hexdigest() in data
    assert "llama3" in data and "faulty_gpu" in data


def test_a_failure_trace_is_recorded_and_shown_by_its_resolved_path_and_hash(tmp_path, monkeypatch):
    from raysim.report.causes import capacity_inputs_html
    from raysim.run.outputs import record_capacity_inputs

    monkeypatch.chdir(tmp_path)  # a relative path: from where raysim was launched
    (tmp_path / "fails.csv").write_text("time,vc,node,category,repair_s\n10,a,0,failure,60\n")
    (tmp_path / "trace_report.json").write_text("{}")
    record_capacity_inputs(tmp_path, "cluster.capacity", None,
                           {"name": "trace", "path": "fails.csv", "kinds": {"failure": "down"}})
    report = json.loads((tmp_path / "trace_report.json").read_text())
    digest = hashlib.sha256((tmp_path / "fails.csv").read_bytes()).hexdigest()
    assert report["capacity"] == {"node_log": None, "failures": {
        "name": "trace", "kinds": {"failure": "down"}, "path": {"path": str((tmp_path / "fails.csv").resolve()),
                                                                "sha256": digest}}}
    html = capacity_inputs_html(report)
    assert f"<code>{(tmp_path / 'fails.csv').resolve()}</code>" in html and digest in html
    assert "<dt>node log (cluster.capacity)</dt><dd>none</dd>" in html


@pytest.mark.slow
@pytest.mark.parametrize("run,width", [("venus_run", 1400), ("ten_job_run", 1400), ("ten_job_run", 1280)])
def test_run_page_layout_in_chromium(run, width, request, tmp_path):
    """The page at 1,400 px and a small run's page (CDFs of ten steps, no job that waited) at both
    widths: nothing cut off, no placeholder in a legend, a hint over the wide summary."""
    folder = request.getfixturevalue(run)
    seen = render(folder / "report.html", screenshot=tmp_path / "page.png", width=width)
    assert seen.errors == []
    check_laid_out(seen, (folder / "report.html").read_text())
