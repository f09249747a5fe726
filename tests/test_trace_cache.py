"""The trace caches (issue 14): keyed by content, written atomically under unique temporary names,
and rebuilt with one warning when they cannot be read."""

import logging
import os
import threading

import pyarrow.parquet as pq

from raysim.trace import load
from raysim.trace.load import load_trace
from raysim.trace.synth import load_synth

HEADER = "job_id,user,vc,gpu_num,cpu_num,state,submit_time,duration\n"
ROWS = "1,u1,vcA,1,2,COMPLETED,0,97\n2,u1,vcA,8,8,FAILED,100,92\n3,u2,vcB,16,16,CANCELLED,132,261\n"


def write(folder, rows=ROWS):
    (folder / "vc_config.csv").write_text(",num\nvcA,1\nvcB,2\n")
    path = folder / "jobs.csv"
    path.write_text(HEADER + rows)
    return path


def cache_file(path):
    return path.parent / (path.name + ".raysim-cache.parquet")


def test_an_edit_keeping_size_and_mtime_is_not_served_from_the_cache(tmp_path):
    path = write(tmp_path)
    assert not load_trace(path).from_cache and load_trace(path).from_cache
    stat = path.stat()
    path.write_text(HEADER + ROWS.replace(",97\n", ",98\n"))  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    trace = load_trace(path)
    assert not trace.from_cache and trace.table.column("duration").to_pylist() == [98, 92, 261]
    assert load_trace(path).from_cache


def test_an_edited_vc_config_of_the_same_size_misses_the_cache(tmp_path):
    path = write(tmp_path)
    load_trace(path)
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,3\nvcB,2\n")
    trace = load_trace(path)
    assert not trace.from_cache and trace.vc_nodes == {"vcA": 3, "vcB": 2}


def test_the_bounds_are_part_of_the_key_and_the_report_is_cached(tmp_path):
    path = write(tmp_path)
    first = load_trace(path, max_duration_s=100, on_error="skip")
    assert first.table.num_rows == 2
    again = load_trace(path, max_duration_s=100, on_error="skip")
    assert again.from_cache and again.report.to_dict() == first.report.to_dict()
    assert again.report.by_column == {("duration longer than trace.max_duration_s (100 s)", "duration"): 1}
    other = load_trace(path, max_duration_s=1000, on_error="skip")
    assert not other.from_cache and other.table.num_rows == 3


def test_a_corrupt_cache_warns_once_and_is_replaced(tmp_path, caplog):
    path = write(tmp_path)
    first = load_trace(path)
    cache_file(path).write_bytes(b"PAR1 this is not a parquet file")
    with caplog.at_level(logging.WARNING, logger="raysim"):
        rebuilt = load_trace(path)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "is unreadable" in warnings[0].getMessage()
    assert str(cache_file(path)) in warnings[0].getMessage()
    assert not rebuilt.from_cache and rebuilt.table.equals(first.table)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="raysim"):
        assert load_trace(path).from_cache
    assert not caplog.records


def test_a_truncated_cache_is_rebuilt(tmp_path):
    path = write(tmp_path)
    load_trace(path)
    data = cache_file(path).read_bytes()
    cache_file(path).write_bytes(data[: len(data) // 2])
    assert not load_trace(path).from_cache
    assert load_trace(path).from_cache


def test_writers_use_unique_temporary_names_and_rename_atomically(tmp_path, monkeypatch):
    path = write(tmp_path)
    table = load_trace(path, cache=False).table
    written, real_write = [], pq.write_table

    def recording_write(data, where, **kwargs):
        written.append(str(where))
        real_write(data, where, **kwargs)

    monkeypatch.setattr(load.pq, "write_table", recording_write)
    target = cache_file(path)
    threads = [threading.Thread(target=load.write_cache, args=(table, target)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(written)) == 8 and str(target) not in written
    assert all(w.startswith(str(target) + ".") and w.endswith(".tmp") for w in written)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.csv", target.name, "vc_config.csv"]
    assert pq.read_table(target).equals(table)


def test_concurrent_loads_share_one_valid_cache(tmp_path):
    path = write(tmp_path)
    results, errors = [], []

    def run():
        try:
            results.append(load_trace(path).table)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 6
    assert not list(tmp_path.glob("*.tmp"))
    assert load_trace(path).from_cache


def test_a_cache_that_cannot_be_written_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = write(tmp_path)

    def failing_write(data, where, **kwargs):
        open(where, "wb").close()
        raise OSError("disk full")

    monkeypatch.setattr(load.pq, "write_table", failing_write)
    assert load_trace(path).table.num_rows == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.csv", "vc_config.csv"]


def test_a_corrupt_synth_cache_warns_and_is_regenerated(tmp_path, caplog):
    spec = {"preset": "venus", "days": 1, "seed": 3}
    first = load_synth(spec, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("*.parquet")
    cached.write_bytes(b"garbage")
    with caplog.at_level(logging.WARNING, logger="raysim"):
        again = load_synth(spec, cache_dir=tmp_path)
    assert len(caplog.records) == 1 and "is unreadable" in caplog.records[0].getMessage()
    assert not again.from_cache and again.table.equals(first.table)
    assert load_synth(spec, cache_dir=tmp_path).from_cache
