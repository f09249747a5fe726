"""What people read of a run: the plots' titles, axes and marks (read back from the matplotlib
figures), and the tables' units."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from raysim.report import describe, plots
from raysim.tables import to_markdown, units_caption
from raysim.report.sweep import metric_bars


def one_run(vcs=("vcA", "vcB"), queues=(10.0, 20.0), days=1, columns=None):
    """{label: (jobs, series, summary)} of a made-up run: a cluster series every 60 s over `days`."""
    time = np.arange(0, days * 86400, 60, dtype=float)
    series = pd.DataFrame({"vc": "all", "time": time, "gpu_utilization": 0.5, "pending_gpujob_num": 3,
                           **(columns or {})})
    summary = pd.DataFrame({"vc": [*vcs, "all"], "avg_queue": [*queues, float(np.mean(queues))]})
    return {"fifo": (pd.DataFrame({"jct": [100.0, 200.0]}), series, summary)}


def test_a_round_based_month_is_drawn_as_hourly_means_not_a_block_of_flips():
    time = np.arange(0, 30 * 86400, 60)
    flips = ((time // 360) % 2).astype(float)  # a round of 6 minutes on, one off: the raw series is a solid block
    runs = one_run(days=30, columns={"gpu_utilization_V100": flips, "gpu_utilization_K80": 1 - flips})
    fig = plots.over_time(runs, ["gpu_utilization_V100", "gpu_utilization_K80"], "fraction of the type's GPUs busy",
                          "GPU utilisation per GPU type (cluster)", "demo")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "fraction of the type's GPUs busy (hourly means)"
    for line in ax.get_lines():
        assert len(line.get_xdata()) == 30 * 24 and np.allclose(line.get_ydata(), 0.5)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["V100", "K80"]
    short = plots.over_time(one_run(days=0.5), ["gpu_utilization"], "fraction of GPUs busy", "x", "demo")
    assert short.axes[0].get_ylabel() == "fraction of GPUs busy" and len(short.axes[0].get_lines()[0].get_xdata()) == 720


def test_queue_per_vc_names_its_scale_and_marks_a_vc_that_never_waited():
    fig = plots.queue_per_vc(one_run(vcs=("vcA", "vcB", "vcC"), queues=(0.0, 5.0, 50_000.0)), "demo")
    ax = fig.axes[0]
    assert ax.get_xscale() == "symlog"
    assert ax.get_xlabel() == "average queueing delay (s, symlog scale: linear below 1 s)"
    assert [t.get_text() for t in ax.texts] == ["0"] and ax.texts[0].xy[1] == 0  # on vcA's row
    linear = plots.queue_per_vc(one_run(queues=(10.0, 20.0)), "demo").axes[0]
    assert linear.get_xscale() == "linear" and linear.get_xlabel() == "average queueing delay (s)"


def test_a_one_vc_run_gets_no_queue_per_vc_plot(tmp_path):
    names = lambda paths: sorted(p.name for p in paths)  # noqa: E731
    one = plots.compare_plots(one_run(vcs=("vcA",), queues=(5.0,)), tmp_path / "one")
    assert names(one) == ["gpu_utilization.png", "jct_cdf.png", "pending_jobs.png"]
    assert not (tmp_path / "one" / "queue_per_vc.png").exists()
    assert "queue_per_vc.png" in names(plots.compare_plots(one_run(), tmp_path / "two"))


def test_titles_say_the_semantics_mode_and_the_overrides(tmp_path):
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(
        ["+experiment=venus", "policy=srtf", "sim.compat=lucid", "hydra.run.dir=/tmp/x"]))
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"sim": {"compat": "lucid"}}))
    assert describe.run_overrides(run) == ["+experiment=venus", "policy=srtf", "sim.compat=lucid"]
    assert describe.run_compat(run) == "lucid" and describe.run_compat(tmp_path) is None
    title = describe.run_description("venus_synth: srtf / consolidate", describe.run_compat(run), describe.run_overrides(run))
    assert title == "venus_synth: srtf / consolidate, compat=lucid\n+experiment=venus policy=srtf sim.compat=lucid"
    fig = plots.over_time(one_run(), ["gpu_utilization"], "fraction of GPUs busy", "GPU utilisation (cluster)", title)
    assert fig.axes[0].get_title() == "GPU utilisation (cluster)\n" + title
    long = describe.run_description("x", "clean", [f"+trace.reader_options.k{i}=value{i}" for i in range(20)])
    assert len(long.splitlines()[1]) <= describe.OVERRIDES_WIDTH and long.endswith(" ...")
    assert describe.run_description("x") == "x"


def test_fgd_bars_span_their_values_are_labelled_and_leave_wall_time_out():
    table = pd.DataFrame({"run": ["fgd.policy=bestfit", "fgd.policy=fgd"], "allo_100": [86.7, 95.1],
                          "allo_130": [88.0, 96.0], "frag_ratio_100": [0.2, 3.0], "frag_ratio_130": [9.0, 4.0],
                          "wall_s": [12.0, 30.0]})
    fig = metric_bars(table, "FGD inflation", "2 runs")
    assert [ax.get_ylabel().split("\n")[0] for ax in fig.axes] == ["allo_100", "allo_130", "frag_ratio_100",
                                                                   "frag_ratio_130"]
    allo = fig.axes[0]
    low, high = allo.get_ylim()
    assert 80 < low < 86.7 and 95.1 < high < 100 and "axis not from 0" in allo.get_ylabel()
    assert [t.get_text() for t in allo.texts] == ["86.7", "95.1"]
    assert fig.axes[2].get_ylim()[0] == 0 and "axis not from 0" not in fig.axes[2].get_ylabel()
    assert fig.axes[0].get_title() == "FGD inflation sweep: results per run\n2 runs"


def test_tables_name_their_units():
    summary = pd.DataFrame({"vc": ["all"], "jobs": [3], "avg_jct": [26923.152838], "p50_queue": [0.0],
                            "p99_queue": [5.0], "makespan": [10.0], "gpu_utilization": [0.2221],
                            "gpu_utilization_V100": [0.3], "down_gpu_h": [1.5]})
    text = to_markdown(summary)
    assert "| all | 3 | 26,923.2 | 0 | 5 | 10 | 0.222 | 0.300 | 1.5 |" in text
    assert text.splitlines()[-1] == ("Units: avg_jct, p*_queue, makespan: seconds; gpu_utilization, "
                                     "gpu_utilization_<type>: fraction of GPU time allocated, 0-1; "
                                     "down_gpu_h: GPU-hours.")
    assert units_caption(["run", "jobs"]) == ""
