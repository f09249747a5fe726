"""Hydra multirun writes a comparison table and plots; `raysim report` rebuilds them."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from test_forking import in_a_fresh_process
from test_report_page import charts_of

REPO = Path(__file__).resolve().parent.parent


def test_multirun_summary_and_report(tmp_path):
    """Run from a folder of the user's (not the checkout: there Hydra's plugin scan sees
    hydra_plugins as files, elsewhere through the editable install's import hook)."""
    sweep = tmp_path / "sweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", "+experiment=venus", "runtime=local",
                          "policy=fifo,srtf", f"hydra.sweep.dir={sweep}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert sorted(table["run"].unique()) == ["policy=fifo", "policy=srtf"]
    overall = table[table.vc == "all"].set_index("run")
    assert overall.loc["policy=srtf", "avg_queue"] < overall.loc["policy=fifo", "avg_queue"]
    assert len(table) == 2 * 16  # 15 VCs + all, per run
    md = (sweep / "sweep_summary.md").read_text()
    assert "avg_queue per VC" in md and "policy=srtf" in md
    for name in ("jct_cdf", "queue_per_vc", "gpu_utilization", "pending_jobs"):
        assert (sweep / "plots" / f"{name}.png").stat().st_size > 1000
    assert not (sweep / "0" / "plots").exists()  # report.plots=auto: a sweep's runs write no PNGs of their own
    assert not (sweep / "sweep_replicas.csv").exists()  # no two runs differ only in seed: no replications
    (sweep / "sweep_summary.csv").unlink()
    rep = subprocess.run([sys.executable, "-m", "raysim", "report", str(sweep), "--no-plots"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr[-2000:]
    assert pd.read_csv(sweep / "sweep_summary.csv").equals(table)
    printed = rep.stdout.splitlines()  # the table of sweep_summary.md, rounded for people, with its units
    assert printed[0].startswith("| run | jobs | avg_jct | avg_queue | p50_queue |")
    assert [re.match(r"\| (policy=\w+) \| 6,412 \| [\d,]+\.\d \| [\d,]+\.\d \|", line)[1]
            for line in printed[2:4]] == ["policy=fifo", "policy=srtf"]
    assert printed[5].startswith("Units: avg_jct, avg_queue, p*_queue, p*_jct, makespan: seconds; gpu_utilization")
    assert not re.search(r"\d\.\d{4}", rep.stdout)  # no raw floats (26923.152838)
    assert "\n".join(printed[:6]) in md
    check_sweep_page(sweep, table)  # last: its browser part skips where Chromium is absent


def check_sweep_page(sweep: Path, table: pd.DataFrame) -> None:
    """The sweep's report.html: the run x metric table with the varied setting and links to each
    run's page; comparison charts; drawn in headless Chromium (where it is installed) without a
    request for anything but the page."""
    html = (sweep / "report.html").read_text()
    assert '<a href="0/report.html">policy=fifo</a>' in html and (sweep / "0" / "report.html").exists()
    overall = table[table.vc == "all"].set_index("run")
    assert f"{overall.loc['policy=srtf', 'avg_queue']:,.1f}" in html
    assert "<th>policy</th>" in html  # the varied setting as a column
    for chart in ("metric_avg_jct", "metric_avg_queue", "per_vc_avg_queue", "jct_cdf", "series_gpu_utilization"):
        assert f'id="{chart}"' in html
    from browser_check import chromium, render

    chromium()  # skips here, with its reason, where Chromium is absent
    seen = render(sweep / "report.html")
    assert seen.errors == [] and seen.requests == [(sweep / "report.html").resolve().as_uri()]
    assert seen.charts == html.count('class="chart"') and seen.drawn == str(seen.charts)
    assert f"{overall.loc['policy=fifo', 'avg_jct']:,.1f}" in seen.text
    check_bars(sweep)


def check_bars(sweep: Path) -> None:
    """Every bar of a sweep page's comparison charts as Chromium draws it: the value it holds is
    sweep_summary.csv's (relative difference under 1e-6); its end is drawn where that value lies on
    the axis, inside it (no bar cut); with the cursor over it the legend shows the table's text;
    an axis not from 0 says so; no two tick labels read alike."""
    from browser_check import read_bars

    from raysim.tables import cell

    overall = pd.read_csv(sweep / "sweep_summary.csv").query("vc == 'all'").set_index("run")
    specs = {c["id"]: c for c in charts_of((sweep / "report.html").read_text())}
    drawn = read_bars(sweep / "report.html")
    assert sorted(d.id for d in drawn) == sorted(i for i, c in specs.items() if c["kind"] == "bars") and drawn
    for bars in drawn:
        metric = bars.id.removeprefix("metric_")
        expected = overall[metric].to_numpy(dtype=float)
        assert specs[bars.id]["x"]["categories"] == [run.split("=", 1)[1] for run in overall.index]
        np.testing.assert_allclose(bars.values, expected, rtol=1e-6, atol=0, err_msg=bars.id)
        low, high = bars.y_range
        assert all(low <= v <= high for v in expected), (bars.id, bars.y_range)
        assert (low > 0) == ("(axis not from 0)" in specs[bars.id]["title"]), bars.id
        for value, top in zip(expected, bars.tops):  # (uPlot strokes a bar inside it: 1 to 2 px under its value)
            if top is None:  # no pixel of a bar: one of height 0 at the axis's foot
                assert value - low <= 3 * bars.pixel, (bars.id, value)
            else:
                assert abs(top - value) <= 3 * bars.pixel and high - top > 3 * bars.pixel, (bars.id, value, top)
        assert bars.legend == [cell(v, metric) for v in overall[metric]], bars.id
        ticks = [t for t in bars.ticks if t]
        assert len(set(ticks)) == len(ticks) > 1, (bars.id, ticks)


#: The cluster rows of the README's sweep (policy=fifo,srtf,tiresias on the shipped Venus-like week):
#: average JCTs a factor 2 apart, p99.9 JCTs 3.7 % apart, makespans 0.0026 % and utilisations 0.46 %
THREE_RUNS = pd.DataFrame({"policy": ["fifo", "srtf", "tiresias"], "jobs": 6412,
                           "avg_jct": [26923.152838, 12766.305053, 13385.471304],
                           "avg_queue": [14607.818777, 442.967249, 1063.243918], "p50_queue": [0.0, 0.0, 34.0],
                           "p99_queue": [211345.12, 13482.41, 37385.86],
                           "p99.9_queue": [274939.021, 56739.637, 72709.013],
                           "p99.9_jct": [809406.625, 840136.67, 811044.264], "makespan": [1879209, 1879209, 1879258],
                           "gpu_utilization": [0.2220936, 0.2224712, 0.2231194]})


def test_sweep_page_bars_carry_the_summary_exact(tmp_path):
    """A three-policy sweep's page (its runs' summaries as the README's sweep gives them): every bar
    holds sweep_summary.csv's value exact and its legend the table's text; each axis follows the
    rule of raysim.report.bar_axis, its caption saying how close values are; then drawn in Chromium
    (check_bars)."""
    from raysim.report.sweep import summarize_sweep
    from raysim.tables import cell

    sweep = tmp_path / "sweep"
    for i, row in THREE_RUNS.iterrows():
        run = sweep / str(i)
        (run / ".hydra").mkdir(parents=True)
        (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["+experiment=venus", f"policy={row.policy}"]))
        summary = pd.DataFrame([row.drop("policy")] * 3).assign(vc=["all", "vcA", "vcB"])
        summary[["vc", *THREE_RUNS.columns[1:]]].to_csv(run / "summary.csv", index=False)
    summarize_sweep(sweep, plots=False)
    overall = pd.read_csv(sweep / "sweep_summary.csv").query("vc == 'all'").set_index("run")
    html = (sweep / "report.html").read_text()
    specs = {c["id"]: c for c in charts_of(html)}
    for metric in THREE_RUNS.columns[2:]:
        bars = specs[f"metric_{metric}"]
        expected = overall[metric].to_numpy(dtype=float)
        assert np.all(np.abs(np.array(bars["data"][1]) - expected) <= 1e-6 * np.abs(expected)), metric
        assert bars["text"] == [[cell(v, metric) for v in overall[metric]]]
        low, high = bars["y"]["range"]
        assert low <= expected.min() and expected.max() < high
    zoomed = specs["metric_p99.9_jct"]
    assert zoomed["y"]["range"][0] > 800_000 and "(axis not from 0)" in zoomed["title"]
    assert "at most 3.7 % of the largest value (809,407 to 840,137)" in html
    for metric in ("makespan", "gpu_utilization", "avg_jct", "p50_queue"):
        from_zero = specs[f"metric_{metric}"]
        assert from_zero["y"]["range"][0] == 0 and "not from 0" not in from_zero["title"]
    assert "The values lie within 0.0026 % of each other (1,879,209 to 1,879,258)" in html
    assert "The values lie within 0.46 % of each other (0.222 to 0.223)" in html
    per_vc = specs["per_vc_avg_jct"]
    assert per_vc["data"][1] == [26923.152838] * 2 and per_vc["text"][0] == ["26,923.2"] * 2
    from browser_check import chromium

    chromium()  # skips here, with its reason, where Chromium is absent
    check_bars(sweep)


@pytest.mark.slow  # a 3-run multirun: test_sweep_page_bars_carry_the_summary_exact checks its figures in the main suite
def test_readme_sweep_page_bars_in_chromium(tmp_path):
    """The README's sweep (policy=fifo,srtf,tiresias), whose makespans lie 0.0026 % apart: every
    bar of its page as drawn in Chromium is sweep_summary.csv's (check_bars)."""
    from browser_check import chromium

    chromium()
    sweep = tmp_path / "sweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", "+experiment=venus", "policy=fifo,srtf,tiresias",
                          "runtime=local", "report.plots=none", f"hydra.sweep.dir={sweep}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    check_bars(sweep)


class FakeLoader:
    """Stands in for Hydra's config loader: a job's config is its overrides; counts compositions."""

    def __init__(self):
        self.calls = []

    def load_sweep_config(self, master, overrides):
        self.calls.append(tuple(overrides))
        if "policy=bogus" in overrides:
            raise ValueError("Could not find 'policy/bogus'")
        return {"job": tuple(overrides)}


def test_the_sweeper_composes_each_job_config_once():
    import pickle

    from hydra_plugins.raysim_launcher.sweeper import ComposedConfigs

    loader = ComposedConfigs(FakeLoader())
    batch = [["policy=fifo"], ["policy=srtf"]]
    loader.keep({}, batch, processes=1)  # the batch's check, before any job runs
    assert [loader.load_sweep_config({}, o) for o in batch] == [{"job": ("policy=fifo",)}, {"job": ("policy=srtf",)}]
    assert loader.calls == [("policy=fifo",), ("policy=srtf",)] and not loader.kept
    loader.keep({}, [["policy=sjf"]], processes=1)
    shipped = pickle.loads(pickle.dumps(loader))  # (raysim_ray ships the loader with each task: not the configs)
    assert shipped.kept == {} and loader.kept
    assert loader.load_sweep_config({}, ["policy=fifo"]) == {"job": ("policy=fifo",)} and len(loader.calls) == 4


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="configs are composed in forked processes on Linux")
def test_the_sweeper_composes_a_batch_in_forked_processes():
    """Each config composed in a forked process is kept here, at most KEPT of them; one that does
    not compose there is composed again here, raising Hydra's own error (in a new interpreter:
    this pytest process may hold Ray's threads, and must not fork)."""
    in_a_fresh_process("""
        import pytest
        from hydra_plugins.raysim_launcher import sweeper
        from test_sweep import FakeLoader

        batch = [["policy=fifo"], ["policy=srtf"], ["policy=sjf"]]
        loader = sweeper.ComposedConfigs(FakeLoader())
        loader.keep({}, batch, processes=2)
        assert loader.loader.calls == []  # (composed in the forked processes)
        assert loader.kept == {tuple(o): {"job": tuple(o)} for o in batch}
        loader = sweeper.ComposedConfigs(FakeLoader())
        with pytest.raises(ValueError, match="policy/bogus"):
            loader.keep({}, [["policy=fifo"], ["policy=bogus"], ["policy=srtf"]], processes=2)
        assert loader.loader.calls == [("policy=bogus",)]  # composed again here, to raise its error
        sweeper.KEPT = 2
        loader = sweeper.ComposedConfigs(FakeLoader())
        loader.keep({}, batch, processes=2)
        assert list(loader.kept) == [("policy=fifo",), ("policy=srtf",)]  # the third is checked, not kept
    """)


def test_a_sweep_stops_before_any_job_when_one_does_not_compose(tmp_path):
    sweep = tmp_path / "sweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", "+experiment=venus", "runtime=local",
                          "policy=fifo,bogus", f"hydra.sweep.dir={sweep}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "Could not find 'policy/bogus'" in res.stderr
    assert not (sweep / "0").exists()


def test_report_on_a_folder_without_runs_is_a_clear_error(tmp_path):
    rep = subprocess.run([sys.executable, "-m", "raysim", "report", str(tmp_path)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert rep.returncode == 2 and "no run folder with a summary.csv" in rep.stderr


@pytest.mark.slow  # 8 s multirun; test_multirun_summary_and_report stays in the main suite
def test_report_names_the_run_folders_without_results(tmp_path):
    """A multirun whose run left no summary.csv (failed, stopped, still running): `raysim report`
    summarises the others and names that folder, with its swept setting, on stderr and in
    sweep_summary.md."""
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                                    "1,vcA,u1,1,4,0,100,COMPLETED\n2,vcA,u2,2,4,10,200,COMPLETED\n")
    (trace / "vc_config.csv").write_text(",num\nvcA,1\n")
    sweep = tmp_path / "sweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", "runtime=local", f"trace.path={trace / 'jobs.csv'}",
                          "trace.cache=false", "report.plots=none", "report.html=false", "seed=0,1,2",
                          f"hydra.sweep.dir={sweep}"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    (sweep / "1" / "summary.csv").unlink()
    rep = subprocess.run([sys.executable, "-m", "raysim", "report", str(sweep), "--no-plots"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr[-2000:]
    assert sorted(pd.read_csv(sweep / "sweep_summary.csv")["run"].unique()) == ["seed=0", "seed=2"]
    lines = rep.stderr.strip().splitlines()
    assert lines == [f"raysim report: warning: run folder {sweep / '1'} (seed=1) left out of the sweep summary: no "
                     "summary.csv: the run failed, was stopped or is still running"]
    assert f"{sweep / '1'} (seed=1) left out" in (sweep / "sweep_summary.md").read_text()


@pytest.mark.slow
def test_multirun_jobs_as_parallel_ray_tasks(tmp_path):
    """hydra/launcher=raysim_ray runs each job of the sweep as a Ray task."""
    sweep = tmp_path / "sweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", "+experiment=venus", "runtime=local",
                          "policy=fifo,srtf", "hydra/launcher=raysim_ray", f"hydra.sweep.dir={sweep}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "as Ray tasks" in res.stderr + res.stdout
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert sorted(table["run"].unique()) == ["policy=fifo", "policy=srtf"]


@pytest.mark.slow
def test_harvest_sweep_as_ray_tasks(shared_dir, tmp_path):
    sweep = tmp_path / "hsweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", "+experiment=harvest_summit", "hydra/launcher=raysim_ray",
                          "harvest.allocator=exact,heuristic", f"harvest.data_dir={shared_dir / 'harvest'}",
                          f"hydra.sweep.dir={sweep}"], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    eff = [pd.read_csv(sweep / str(i) / "summary.csv").set_index("vc").efficiency["all"] for i in (0, 1)]
    assert eff[0] - eff[1] >= 0.04  # the optimiser beats the heuristic, as in the acceptance run
