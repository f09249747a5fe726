"""Results stream to Parquet row groups while a run goes on: layout, resume and equality with tables."""

import numpy as np
import pyarrow as pa
import pytest
import pyarrow.parquet as pq
from test_invariants import synthetic_trace

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.run.simulate import simulate, simulate_to
from raysim.report import timeseries
from raysim.report.results import jobs_table, merge_series, write_jobs
from raysim.runtime.codec import RESULT_SCHEMA, SAMPLE_INTERVAL
from raysim.runtime.sink import ResultSink, read_records
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.sim.recorder import COLUMNS, FLOAT_COLUMNS


def samples(vc, times, busy=0):
    """Change rows of VC `vc` at `times` (8 GPUs, `busy` of them busy: one value or one per time)."""
    n = len(times)
    busy = np.broadcast_to(np.asarray(busy, np.int32), (n,))
    cols = {"vc": pa.array([vc] * n), "time": pa.array(np.asarray(times, np.int64))}
    for c in COLUMNS:
        value = {"total_gpu_num": np.full(n, 8), "idle_gpu_num": 8 - busy}.get(c, np.zeros(n))
        cols[c] = pa.array(np.asarray(value, np.float32 if c in FLOAT_COLUMNS else np.int32))
    return pa.table(cols, metadata={SAMPLE_INTERVAL: "60"})


def records(seqs):
    seqs = np.asarray(seqs, np.int64)
    cols = {"seq": seqs, **{c: seqs * 10 for c in RESULT_SCHEMA.names[1:]}}
    return pa.table(cols, schema=RESULT_SCHEMA)


def test_samples_are_held_until_every_vc_has_passed_them_and_cut_at_the_end(tmp_path):
    sink = ResultSink(tmp_path, ["a", "b"], row_group_rows=4)
    sink.MERGE_ROWS = 1  # merge every window, to see what is held
    sink.add_samples([samples("a", [0, 120], busy=[0, 2]), samples("b", [0], busy=4)], final_up_to=60)
    assert sink.pos.held.column("time").to_pylist() == [120]  # a's change at 120
    sink.add_samples([samples("a", [180], busy=8), samples("b", [], busy=4)], final_up_to=150)
    files = sink.close(end=150)
    ts = pq.read_table(files["series"][0])
    # expanded to the grid up to the last event: time-major, VCs in layout order then the cluster
    # row; a's change at 180, after the last event, is dropped
    assert ts.column("time").to_pylist() == [0, 0, 0, 60, 60, 60, 120, 120, 120]
    assert ts.column("vc").to_pylist() == ["a", "b", "all"] * 3
    assert ts.column("gpu_utilization").to_pylist() == [0.0, 0.5, 0.25] * 2 + [0.25, 0.5, 0.375]
    assert [pq.ParquetFile(files["series"][0]).metadata.row_group(i).num_rows for i in range(3)] == [4, 4, 1]
    assert [p.name for p in files["series"]] == ["timeseries.parquet"]
    assert not list(tmp_path.glob("series-*.parquet"))  # the segments became the time series


def test_resume_drops_segments_written_after_the_checkpoint(tmp_path):
    sink = ResultSink(tmp_path, ["a"], row_group_rows=2)
    sink.add_records(records([0, 1, 2]))
    pos = sink.seal()  # checkpoint here
    sink.add_records(records([3, 4]))
    sink.seal()  # a later checkpoint that the resumed run does not use
    sink.add_records(records([5]))  # in flight when the run died
    again = ResultSink(tmp_path, ["a"], row_group_rows=2)
    again.reopen(pos)
    again.add_records(records([3, 4, 5]))
    files = again.close(end=0)
    assert read_records(files["records"]).column("seq").to_pylist() == [0, 1, 2, 3, 4, 5]
    assert [p.name for p in files["records"]] == ["records-0000.parquet", "records-0001.parquet"]


@pytest.mark.parametrize("grid_max", [timeseries.GRID_MAX_SAMPLES, 2])
def test_series_have_one_layout_however_segments_were_cut(tmp_path, monkeypatch, grid_max):
    monkeypatch.setattr(timeseries, "GRID_MAX_SAMPLES", grid_max)  # 2: written as change-points
    busy = [0, 0, 3, 3, 3, 1, 8, 8, 0, 0]

    def run(cuts, name):
        folder = tmp_path / name
        sink = ResultSink(folder, ["a", "b"], row_group_rows=3)
        t = 0
        for n in cuts:
            times = np.arange(t, t + n)
            sink.add_samples([samples("a", 60 * times, busy=[busy[i] for i in times]),
                              samples("b", 60 * times[::2], busy=[8 - busy[i] for i in times[::2]])],
                             final_up_to=60 * (t + n))
            sink.seal()
            t += n
        files = sink.close(end=60 * t)
        merge_series(files["series"], folder / "ts.parquet")
        return (folder / "ts.parquet").read_bytes()

    assert run([10], "one") == run([2, 6, 2], "three") == run([4, 4, 2], "other")


def test_jobs_file_written_in_chunks_equals_the_table(tmp_path):
    trace, est = synthetic_trace(seed=8)
    n = trace.table.num_rows
    recs = records(np.random.default_rng(0).permutation(n))
    write_jobs(trace.table, recs, tmp_path / "jobs.parquet", chunk_rows=7)
    assert pq.ParquetFile(tmp_path / "jobs.parquet").metadata.num_row_groups == -(-n // 7)
    assert pq.read_table(tmp_path / "jobs.parquet").equals(jobs_table(trace.table, recs))


def test_run_files_are_byte_identical_across_window_sizes(tmp_path):
    trace, est = synthetic_trace(seed=9)
    spec = RunSpec("tiresias", "consolidate", SimParams.for_mode("clean", seed=1), layout_from_vc_nodes(trace.vc_nodes, 8))
    for w in (3_600, 7 * 86_400):
        simulate_to(tmp_path / str(w), trace, spec, est, window_s=w)
        assert not (tmp_path / str(w) / ".partial").exists()
    for name in ("jobs.parquet", "timeseries.parquet"):
        assert (tmp_path / "3600" / name).read_bytes() == (tmp_path / str(7 * 86_400) / name).read_bytes()
    jobs, _ = simulate(trace, spec, est)
    assert jobs.equals(pq.read_table(tmp_path / "3600" / "jobs.parquet"))


def test_a_fresh_run_ignores_result_files_left_in_its_checkpoint_folder(tmp_path):
    trace, est = synthetic_trace(seed=10)
    spec = RunSpec("fifo", "consolidate", SimParams.for_mode("clean", seed=1), layout_from_vc_nodes(trace.vc_nodes, 8))
    ckpt = tmp_path / "ckpt"
    simulate_to(tmp_path / "a", trace, spec, est, checkpoint_dir=ckpt, window_s=86_400)
    assert list((ckpt / "results").glob("records-*.parquet"))  # kept beside the checkpoint
    other, _ = synthetic_trace(seed=11)
    simulate_to(tmp_path / "b", other, spec, est, checkpoint_dir=ckpt, window_s=86_400)  # same folder, no resume
    jobs, _ = simulate(other, spec, est)
    assert pq.read_table(tmp_path / "b" / "jobs.parquet").equals(jobs)
