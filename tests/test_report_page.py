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
from raysim.report.page_data import cdf_on, cdf_points, step_means

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
    ids = [c["id"] for c in charts_of(html)]
    assert ids[:5] == ["jct_cdf", "queue_cdf", "queue_per_vc", "series_gpu_utilization", "series_pending_gpujob_num"]
    jct = next(c for c in charts_of(html) if c["id"] == "jct_cdf")
    assert jct["x"]["log"] and jct["data"][1][-1] == 1.0 and len(jct["data"][0]) <= 201
    utilisation = next(c for c in charts_of(html) if c["id"] == "series_gpu_utilization")
    assert utilisation["series"][0] == "cluster" and len(utilisation["series"]) == 11  # the cluster and 10 VCs
    assert len(utilisation["data"][0]) <= 1000
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


def test_run_page_in_chromium(venus_run, tmp_path):
    """Drawn in headless Chromium: every chart, the summary's numbers, no request but the page."""
    shot = tmp_path / "run.png"
    seen = render(venus_run / "report.html", screenshot=shot)
    assert seen.errors == []
    assert seen.requests == [(venus_run / "report.html").resolve().as_uri()]
    specs = charts_of((venus_run / "report.html").read_text())
    assert seen.drawn == str(len(specs)) and seen.charts == len(specs)
    assert seen.titles == [c["title"] for c in specs]
    overall = pd.read_csv(venus_run / "summary.csv").set_index("vc").loc["all"]
    assert f"{overall.avg_jct:,.1f}" in seen.text and f"{int(overall.jobs):,}" in seen.text
    assert shot.stat().st_size > 50_000
