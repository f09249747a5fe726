"""Hydra multirun writes a comparison table and plots; `raysim report` rebuilds them."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from test_forking import in_a_fresh_process

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
