"""report.html: the numbers its charts are drawn from (checked by hand), the page of a Venus-like
run (what was run, on which data, the summary, the charts, the wall time; nothing loaded from
outside), its rebuild by `raysim report`, and, in headless Chromium, that it draws every chart and
asks for nothing but itself."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def venus_run(tmp_path_factory) -> Path:
    """The README's quick start, in-process: the shipped Venus-like week under FIFO."""
    folder = tmp_path_factory.mktemp("venus") / "run"
    res = subprocess.run([sys.executable, "-m", "raysim", "+experiment=venus", "runtime=local",
                          f"hydra.run.dir={folder}"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"page: {folder / 'report.html'}" in res.stdout
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
    assert jct["kind"] == charts["queue_cdf"]["kind"] == "step"  # an empirical CDF is a step function
    utilisation = charts["series_gpu_utilization"]
    assert utilisation["series"] == ["cluster"] and len(utilisation["data"][0]) <= 1000
    layout = json.loads((venus_run / "trace_report.json").read_text())["layout"]
    assert [charts[i]["title"] for i in per_vc] == largest_vcs(layout)  # a small chart for each of the 10 largest VCs
    for i in per_vc:  # each against the cluster's line, on the same axes
        assert charts[i]["series"] == ["cluster", charts[i]["title"]] and charts[i]["bold"] == 1
        assert charts[i]["data"][1] == utilisation["data"][1] and charts[i]["y"]["range"] == [0, 1]
    assert len(charts["series_pending_gpujob_num"]["series"]) == 11  # the cluster and 10 VCs
    assert (venus_run / "report.html").stat().st_size < 1_000_000
    trace_report = json.loads((venus_run / "trace_report.json").read_text())
    assert set(trace_report["wall_s"]) == {"read_s", "ray_start_s", "simulate_s", "write_s"}
    assert trace_report["wall_s"]["ray_start_s"] is None  # runtime=local


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


@pytest.mark.slow
@pytest.mark.parametrize("run,width", [("venus_run", 1400), ("ten_job_run", 1400), ("ten_job_run", 1280)])
def test_run_page_layout_in_chromium(run, width, request, tmp_path):
    """The page at 1,400 px and a small run's page (CDFs of ten steps, no job that waited) at both
    widths: nothing cut off, no placeholder in a legend, a hint over the wide summary."""
    folder = request.getfixturevalue(run)
    seen = render(folder / "report.html", screenshot=tmp_path / "page.png", width=width)
    assert seen.errors == []
    check_laid_out(seen, (folder / "report.html").read_text())
