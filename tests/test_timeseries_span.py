"""The time series costs per event, not per simulated second: change rows, the grid and
change-points layouts of timeseries.parquet, the reader helper and time-weighted utilisation."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from test_invariants import synthetic_trace

from raysim.cluster.layout import layout_from_vc_nodes
from raysim.report import timeseries
from raysim.report.summary import summarize
from raysim.report.timeseries import cluster_series, read_timeseries, series_layout
from raysim.run.simulate import simulate_to
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.sim.recorder import COLUMNS, Recorder
from raysim.trace.load import Trace

THREE_YEARS = 3 * 365 * 86_400


def grid_samples(times, rows, first, last, interval):
    """The reference: the last snapshot at or before every grid time from `first` to `last`."""
    grid = np.arange(first, last + 1, interval)
    idx = np.searchsorted(times, grid, side="right") - 1
    return grid, np.asarray(rows, dtype=np.float64)[idx]


def test_recorder_rows_are_the_grid_samples_that_change():
    rng = np.random.default_rng(0)
    times = np.cumsum(rng.choice([0, 1, 7, 60, 61, 3_600, 10**6], size=400, p=[.1, .2, .2, .2, .1, .15, .05]))
    times = np.unique(times)
    rows = [tuple(rng.integers(0, 3, size=len(COLUMNS)).astype(float)) for _ in times]
    rec = Recorder(60, int(times[0]))
    out = []
    for t, row, nxt in zip(times, rows, np.append(times[1:], times[-1] + 1)):
        rec.snapshot(int(t), row)
        if rng.random() < 0.2:  # a window ends at some time before the next snapshot
            out.append(rec.emit(int(rng.integers(t, nxt))))
    end = int(times[-1])
    out.append(rec.emit(end))
    got = {c: np.concatenate([o[c] for o in out]) for c in out[0]}
    first = -(-int(times[0]) // 60) * 60
    grid, want = grid_samples(times, rows, first, end - (end - first) % 60, 60)
    changed = np.append(True, (want[1:] != want[:-1]).any(axis=1))
    assert got["time"].tolist() == grid[changed].tolist()
    for i, c in enumerate(COLUMNS):
        assert got[c].tolist() == want[changed, i].astype(got[c].dtype).tolist()


def test_a_job_alone_for_three_years_adds_two_rows():
    rec = Recorder(60, 0)
    rec.snapshot(0, (8, 0) + (0,) * 9)
    rec.snapshot(THREE_YEARS, (8, 8) + (0,) * 9)
    rows = rec.emit(THREE_YEARS + 10**6)
    assert rows["time"].tolist() == [0, THREE_YEARS]


def with_long_job(trace, est, duration):
    """`trace` with one more job, submitted first, running `duration` seconds on 8 GPUs of VC a."""
    t = trace.table
    first = t.slice(0, 1)
    for name, value in (("job_id", t.num_rows), ("duration", duration), ("gpu_num", 8)):
        i = t.schema.get_field_index(name)
        first = first.set_column(i, name, pa.array([value], t.schema.field(name).type))
    first = first.set_column(t.schema.get_field_index("vc"), "vc",
                             pa.array(["a"]).dictionary_encode().cast(t.schema.field("vc").type))
    table = pa.concat_tables([first, t]).unify_dictionaries().combine_chunks()
    table = table.replace_schema_metadata(t.schema.metadata)
    return Trace(table, trace.vc_nodes, trace.report, trace.source), np.append(float(duration), est)


def spec_for(trace, policy):
    return RunSpec(policy, "consolidate", SimParams.for_mode("clean", seed=1), layout_from_vc_nodes(trace.vc_nodes, 8))


def test_a_three_year_job_costs_rows_not_seconds(tmp_path):
    trace, est = synthetic_trace(seed=12)
    long_trace, long_est = with_long_job(trace, est, THREE_YEARS)
    stats = simulate_to(tmp_path, long_trace, spec_for(long_trace, "fifo"), long_est, window_s=86_400)
    path = tmp_path / "timeseries.parquet"
    layout = series_layout(path)
    assert layout.changes and layout.samples > THREE_YEARS // 60  # 1.6 million grid times...
    rows = pq.ParquetFile(path).metadata.num_rows
    assert rows <= 2 * (stats["events"] + len(trace.vc_nodes) + 1)  # ...but rows per event
    jobs = pq.read_table(tmp_path / "jobs.parquet")
    assert jobs.column("end_time")[0].as_py() >= THREE_YEARS
    # expanded on request, here one sample a day of one VC: the long job runs until its end
    a = read_timeseries(path, vcs=["a"], columns=["running_gpujob_num"], every=86_400)
    assert a.num_rows == (layout.last - layout.first) // 86_400 + 1
    assert pc.min(a.column("running_gpujob_num").slice(10, a.num_rows - 20)).as_py() == 1
    summary = summarize(jobs, path)
    util_a = summary.set_index("vc").loc["a", "gpu_utilization"]
    assert 8 / 16 <= util_a < 0.51  # the long job's 8 of VC a's 16 GPUs, nearly all the time


@pytest.fixture
def both_layouts(tmp_path, monkeypatch):
    """One run written as the grid and as change-points: (grid path, change-points path, jobs)."""
    trace, est = synthetic_trace(seed=13)
    spec = spec_for(trace, "tiresias")
    simulate_to(tmp_path / "grid", trace, spec, est, window_s=3_600)
    monkeypatch.setattr(timeseries, "GRID_MAX_SAMPLES", 10)
    simulate_to(tmp_path / "changes", trace, spec, est, window_s=7 * 86_400)
    jobs = pq.read_table(tmp_path / "grid" / "jobs.parquet")
    assert jobs.equals(pq.read_table(tmp_path / "changes" / "jobs.parquet"))
    return tmp_path / "grid" / "timeseries.parquet", tmp_path / "changes" / "timeseries.parquet", jobs


def test_change_points_expand_to_the_grid_exactly(both_layouts):
    grid_path, changes_path, _ = both_layouts
    assert not series_layout(grid_path).changes and series_layout(changes_path).changes
    grid = pq.read_table(grid_path)
    assert pq.ParquetFile(changes_path).metadata.num_rows < grid.num_rows / 3
    expanded = read_timeseries(changes_path)
    assert expanded.column_names == grid.column_names
    for name in grid.column_names:
        assert expanded.column(name).to_pylist() == grid.column(name).to_pylist(), name
    # one VC, some columns, a coarser step: the grid's rows at those times
    hourly = read_timeseries(changes_path, vcs=["all"], columns=["idle_gpu_num"], every=3_600)
    vc, time = np.asarray(grid.column("vc").to_pylist()), grid.column("time").to_numpy()
    want = (vc == "all") & ((time - time[0]) % 3_600 == 0)
    assert hourly.column_names == ["vc", "time", "idle_gpu_num"] and set(hourly.column("vc").to_pylist()) == {"all"}
    assert hourly.column("time").to_pylist() == time[want].tolist()
    assert hourly.column("idle_gpu_num").to_pylist() == grid.column("idle_gpu_num").to_numpy()[want].tolist()
    with pytest.raises(ValueError, match="multiple"):
        read_timeseries(changes_path, every=90)


def test_utilisation_from_change_points_equals_the_grid_figure(both_layouts):
    grid_path, changes_path, jobs = both_layouts
    a, b = summarize(jobs, grid_path), summarize(jobs, changes_path)
    assert a.drop(columns="gpu_utilization").equals(b.drop(columns="gpu_utilization"))
    assert b["gpu_utilization"].to_numpy() == pytest.approx(a["gpu_utilization"].to_numpy(), rel=1e-12)


def test_plots_of_a_change_points_file_show_span_means(both_layouts, monkeypatch):
    grid_path, changes_path, _ = both_layouts
    monkeypatch.setattr(timeseries, "PLOT_POINTS", 50)
    ts, grid = cluster_series(changes_path), cluster_series(grid_path)
    assert 25 <= len(ts) <= 50 and set(ts["vc"]) == {"all"} and list(ts.columns) == list(grid.columns)
    per = -(-len(grid) // 50)  # grid times a span
    means = grid.drop(columns="vc").groupby(np.arange(len(grid)) // per).agg(
        {"time": "first", "pending_gpujob_num": "mean", "gpu_utilization": "mean"})
    assert ts["time"].tolist() == means["time"].tolist()
    for name in ("pending_gpujob_num", "gpu_utilization"):
        assert ts[name].to_numpy() == pytest.approx(means[name].to_numpy(), rel=1e-9, abs=1e-9)
