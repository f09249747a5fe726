"""Validation before simulation (issue 14): implausible values, integer overflow, mixed time formats,
wrong Parquet types, ragged rows and traces without jobs are one-line errors naming file, row and
column, or (trace.on_error=skip) skips counted by reason and column, with jobs + skipped = rows."""

import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from raysim.csvfile import RAGGED
from raysim.errors import TraceError
from raysim.trace.load import load_trace
from raysim.trace.readers import Bounds

HEADER = "job_id,user,vc,gpu_num,cpu_num,state,submit_time,duration,batchsize,amp"
COLUMNS = HEADER.split(",")
DATES = [  # job_id = data row
    "1,u1,vcA,1,2,COMPLETED,2020-09-01 00:00:03,97,64,1",
    "2,u1,vcA,8,8,FAILED,2020-09-01 00:01:40,92,128,0",
    "3,u2,vcB,16,16,CANCELLED,2020-09-01 00:02:12,261,32,1",
    "4,u2,vcB,2,4,COMPLETED,2020-09-02 10:00:00,3600,64,0",
    "5,u3,vcA,1,1,COMPLETED,2020-09-03 23:59:59,60,16,1",
]
SECONDS = [re.sub(r"2020-09-0(\d) (\d\d):(\d\d):(\d\d)",
                  lambda m: str(((int(m[1]) - 1) * 24 + int(m[2])) * 3600 + int(m[3]) * 60 + int(m[4])), r)
           for r in DATES]
VC_CONFIG = ",num\nvcA,1\nvcB,2\n"
YEAR = 365 * 86400


def changed(rows, row, column, value):
    """`rows` with the value of `column` in data row `row` (1-based) replaced."""
    out = [r.split(",") for r in rows]
    out[row - 1][COLUMNS.index(column)] = value
    return [",".join(r) for r in out]


def write_csv(folder, rows, ending="\n"):
    (folder / "vc_config.csv").write_text(VC_CONFIG)
    path = folder / "jobs.csv"
    path.write_text(HEADER + "\n" + "\n".join(rows) + ending)
    return path


def columns_of(rows):
    """The CSV rows as Parquet columns: integers where the text is one, else text."""
    cells = list(zip(*(r.split(",") for r in rows)))
    return {c: [int(v) if re.fullmatch(r"-?\d+", v) else v for v in values] for c, values in zip(COLUMNS, cells)}


def write_parquet(folder, rows=SECONDS, **replace):
    """jobs.parquet of `rows` (no raysim metadata), columns in `replace` given as Arrow arrays."""
    (folder / "vc_config.csv").write_text(VC_CONFIG)
    columns = {c: pa.array(v) for c, v in columns_of(rows).items()}
    columns.update(replace)
    path = folder / "jobs.parquet"
    pq.write_table(pa.table(columns), path)
    return path


@dataclass
class Case:
    """A malformed trace: its writer, and the row, column and reason an error must name."""

    name: str
    write: object  # folder -> path
    row: int
    column: str | None
    reason: str  # regex

    def __str__(self):
        return self.name


def csv(rows, ending="\n"):
    return lambda folder: write_csv(folder, rows, ending)


def parquet(**replace):
    return lambda folder: write_parquet(folder, **replace)


def submit_array(values, row, value, kind=pa.int64()):
    values = list(values)
    values[row - 1] = value
    return pa.array(values, kind)


SUBMIT_S = columns_of(SECONDS)["submit_time"]
LONGER = r"duration longer than trace\.max_duration_s \(31,536,000 s\)"
FAR = r"submit_time more than 10 years from the trace's median submit time .* \(trace\.max_submit_span_years\)"
CASES = [
    Case("csv duration 1e12 s", csv(changed(DATES, 2, "duration", "1000000000000")), 2, "duration", LONGER),
    Case("csv three-year job", csv(changed(DATES, 3, "duration", str(3 * YEAR))), 3, "duration", LONGER),
    Case("csv submit in 9999", csv(changed(DATES, 2, "submit_time", "9999-01-01 00:00:00")), 2, "submit_time", FAR),
    Case("csv submit in 1600", csv(changed(DATES, 4, "submit_time", "1600-06-01 12:00:00")), 4, "submit_time", FAR),
    Case("csv 1234 among datetimes", csv(changed(DATES, 3, "submit_time", "1234")), 3, "submit_time",
         r"submit_time mixes formats: integer seconds among datetimes"),
    Case("csv datetime among seconds", csv(changed(SECONDS, 4, "submit_time", "2020-09-02 10:00:00")), 4,
         "submit_time", r"submit_time mixes formats: a datetime among integer seconds"),
    Case("csv job_id beyond int64", csv(changed(DATES, 2, "job_id", "99999999999999999999")), 2, "job_id",
         r"integer overflow: the value does not fit a 64-bit integer"),
    Case("csv gpu_num beyond int32", csv(changed(DATES, 5, "gpu_num", "3000000000")), 5, "gpu_num",
         r"integer overflow: the value does not fit a 32-bit integer"),
    Case("csv duration 1e30", csv(changed(SECONDS, 1, "duration", "1e30")), 1, "duration",
         r"integer overflow: the value does not fit a 64-bit integer"),
    Case("csv amp beyond int8", csv(changed(DATES, 3, "amp", "300")), 3, "amp",
         r"integer overflow: the value does not fit a 8-bit integer"),
    Case("csv fractional batchsize", csv(changed(DATES, 4, "batchsize", "1.5")), 4, "batchsize",
         r"value is not an integer"),
    Case("csv negative submit seconds", csv(changed(SECONDS, 2, "submit_time", "-5")), 2, "submit_time",
         r"submit_time is negative \(before the trace origin\)"),
    Case("csv submit 1e12 s", csv(changed(SECONDS, 3, "submit_time", "1000000000000")), 3, "submit_time", FAR),
    Case("csv truncated last line", csv(DATES[:4] + ["5,u3,vcA,1,1,COMPLETED,2020-09-03 23:5"], ending=""),
         5, None, re.escape(RAGGED)),
    Case("csv row with an extra value", csv(changed(DATES, 2, "amp", "0,7")), 2, None, re.escape(RAGGED)),
    Case("parquet negative submit", parquet(submit_time=submit_array(SUBMIT_S, 3, -60)), 3, "submit_time",
         r"submit_time is negative"),
    Case("parquet timestamp in 9999", parquet(submit_time=pa.array(
        ["2020-09-01T00:00:03", "9999-12-31T00:00:00", "2020-09-01T00:02:12", "2020-09-02T10:00:00",
         "2020-09-03T23:59:59"]).cast(pa.timestamp("s"))), 2, "submit_time", FAR),
    Case("parquet job_id beyond int64", parquet(job_id=pa.array([1, 2, 3, 2 ** 64 - 1, 5], pa.uint64())), 4,
         "job_id", r"integer overflow: the value does not fit a 64-bit integer"),
    Case("parquet null vc", parquet(vc=pa.array(["vcA", "vcA", None, "vcB", "vcA"]).dictionary_encode()), 3,
         "vc", r"missing value"),
    Case("parquet 1234 among datetime text", parquet(submit_time=pa.array(
        ["2020-09-01 00:00:03", "2020-09-01 00:01:40", "2020-09-01 00:02:12", "1234", "2020-09-03 23:59:59"])),
        4, "submit_time", r"submit_time mixes formats: integer seconds among datetimes"),
    Case("parquet fractional duration", parquet(duration=pa.array([97.0, 92.5, 261.0, 3600.0, 60.0])), 2,
         "duration", r"value is not an integer"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_malformed_trace_is_one_line_naming_file_row_and_column(tmp_path, case):
    path = case.write(tmp_path)
    with pytest.raises(TraceError) as err:
        load_trace(path, cache=False)
    text = str(err.value)
    where = f"{path}, row {case.row} (line {case.row + 1})" + (f", column '{case.column}'" if case.column else "")
    assert "\n" not in text and text.startswith(where + ": "), text
    assert re.search(case.reason, text), text
    assert (err.value.row, err.value.column) == (case.row, case.column)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_skip_mode_counts_by_reason_and_column_and_conserves_rows(tmp_path, case):
    trace = load_trace(case.write(tmp_path), on_error="skip", cache=False)
    assert trace.table.num_rows + trace.report.total == len(DATES)
    (reason, n), = trace.report.counts.items()
    assert n == 1 and re.search(case.reason, reason)
    assert trace.report.by_column == ({(reason, case.column): 1} if case.column else {})
    assert case.row not in trace.table.column("job_id").to_pylist()


def test_many_problems_at_once_are_each_counted_once(tmp_path):
    rows = DATES + [
        "6,u1,vcA,1,1,COMPLETED,2020-09-01 00:00:09,40000000,8,0",  # longer than a year
        "7,u1,vcA,1,1,COMPLETED,7777-01-01 00:00:00,60,8,0",  # far from the median
        "8,u1,vcA,1,1,COMPLETED,99,60,8,0",  # integer among datetimes
        "9,u1,vcA,1,1,COMPLETED,2020-09-01 00:00:09,60,8,0,extra",  # ragged
        "10,u1,vcA,1,1,COMPLETED,2020-09-01 00:00:09,60,8,0",
        "11,u1,vcA,1,1,COMPLETED,2020-09-01 00:00:09,60,8,0",
        "12,u1,vcA,1,1,COMPLETED,2020-09-01 00:00:09,60,8,0",
        "13,u1,vcA,0,1,COMPLETED,2020-09-01 00:00:09,60,8,0",  # CPU-only: filtered
        "14,u1,vcA,1,1,COMPLETED,2020-09-01 00:00:09,60,99999999999,0",  # batchsize beyond int32
    ]
    trace = load_trace(write_csv(tmp_path, rows), on_error="skip", cache=False)
    report = trace.report
    assert trace.table.num_rows + report.total == len(rows)
    assert trace.table.num_rows == 8 and report.total == 6
    starts = ("duration longer than", "submit_time more than 10 years", "submit_time mixes formats",
              "integer overflow")
    found = {(next(p for p in starts if r.startswith(p)), c): n for (r, c), n in report.by_column.items()}
    assert found == {("duration longer than", "duration"): 1, ("submit_time more than 10 years", "submit_time"): 1,
                     ("submit_time mixes formats", "submit_time"): 1, ("integer overflow", "batchsize"): 1}
    assert report.counts[RAGGED] == 1 and report.counts["filtered: CPU-only job (gpu_num = 0)"] == 1
    assert any("[by column: duration: 1]" in line for line in report.lines())


@pytest.mark.parametrize("column,array,kind", [
    ("gpu_num", pa.array([True, True, False, True, True]), "bool"),
    ("gpu_num", pa.array([[1], [2], [1], [1], [1]]), "list<element: int64>"),
    ("duration", pa.array([97, 92, 261, 3600, 60], pa.duration("s")), "duration[s]"),
    ("vc", pa.array([1.0, 1.0, 2.0, 2.0, 1.0]), "double"),
    ("submit_time", pa.array([b"0", b"1", b"2", b"3", b"4"]), "binary"),
])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_parquet_columns_of_a_wrong_type_are_named(tmp_path, column, array, kind, on_error):
    path = write_parquet(tmp_path, **{column: array})
    with pytest.raises(TraceError, match=rf"^{re.escape(str(path))}, column '{column}': wrong type "
                                         rf"{re.escape(kind)} \(expected "):
        load_trace(path, on_error=on_error, cache=False)


@pytest.mark.parametrize("kind", [pa.timestamp("s"), pa.timestamp("ms", tz="UTC"), pa.timestamp("us"),
                                  pa.timestamp("ns", tz="Asia/Shanghai")])
def test_parquet_timestamp_submit_times_of_any_unit_and_zone_load(tmp_path, kind):
    stamps = pa.array(["2020-09-01T00:00:03", "2020-09-01T00:01:40", "2020-09-01T00:02:12",
                       "2020-09-02T10:00:00", "2020-09-03T23:59:59"]).cast(pa.timestamp("s")).cast(kind)
    trace = load_trace(write_parquet(tmp_path, submit_time=stamps), cache=False)
    assert trace.table.column("submit_time").to_pylist() == [3, 100, 132, 122400, 259199]
    assert trace.origin == "2020-09-01T00:00:00"


def test_parquet_datetime_text_without_metadata_loads(tmp_path):
    trace = load_trace(write_parquet(tmp_path, rows=DATES), cache=False)
    assert trace.table.column("submit_time").to_pylist() == [3, 100, 132, 122400, 259199]
    assert trace.origin == "2020-09-01T00:00:00"


def test_mixed_formats_flag_the_rows_of_the_rarer_format(tmp_path):
    first_odd = changed(SECONDS, 1, "submit_time", "2020-09-01 00:00:03")
    with pytest.raises(TraceError, match=r"row 1 \(line 2\), column 'submit_time': submit_time mixes formats: "
                                         r"a datetime among integer seconds"):
        load_trace(write_csv(tmp_path, first_odd), cache=False)
    tie = [DATES[0], SECONDS[1], DATES[2], SECONDS[3]]  # two of each: the first row's format wins
    trace = load_trace(write_csv(tmp_path, tie), on_error="skip", cache=False)
    assert trace.table.column("job_id").to_pylist() == [1, 3]
    assert trace.report.by_column == {("submit_time mixes formats: integer seconds among datetimes",
                                       "submit_time"): 2}


def test_implausible_rows_do_not_move_the_automatic_origin(tmp_path):
    path = write_csv(tmp_path, changed(DATES, 1, "submit_time", "1600-01-01 00:00:00"))
    trace = load_trace(path, on_error="skip", cache=False)
    assert trace.origin == "2020-09-01T00:00:00"
    assert trace.table.column("submit_time").to_pylist() == [100, 132, 122400, 259199]


def test_datetime_before_the_given_origin_is_named(tmp_path):
    path = write_csv(tmp_path, DATES)
    with pytest.raises(TraceError, match=r"row 1 \(line 2\), column 'submit_time': submit_time before "
                                         r"trace.origin"):
        load_trace(path, origin="2020-09-01T00:01:00", cache=False)
    with pytest.raises(ValueError, match=r"trace.origin must be an ISO datetime or auto"):
        load_trace(path, origin="0", cache=False)


def test_bounds_are_configurable(tmp_path):
    path = write_csv(tmp_path, changed(DATES, 2, "submit_time", "2050-01-01 00:00:00"))
    assert load_trace(path, cache=False, max_submit_span_years=50).table.num_rows == 5
    trace = load_trace(path, cache=False, max_duration_s=100, on_error="skip")
    reason = "duration longer than trace.max_duration_s (100 s)"
    assert trace.report.by_column == {(reason, "duration"): 2, (re.sub(r"\s+", " ", next(
        r for r in trace.report.counts if r.startswith("submit_time"))), "submit_time"): 1}
    for key, value in (("max_duration_s", 0), ("max_submit_span_years", -1), ("max_duration_s", "1y")):
        with pytest.raises(ValueError, match=rf"trace.{key} must be a positive number"):
            Bounds(**{key: value})


def test_a_trace_without_jobs_is_an_error(tmp_path):
    with pytest.raises(TraceError, match=r"jobs.csv: no jobs: the trace has no data rows"):
        load_trace(write_csv(tmp_path, []), cache=False)
    cpu_only = [changed(DATES, i, "gpu_num", "0")[i - 1] for i in range(1, 6)]
    with pytest.raises(TraceError, match=r"no jobs left to simulate: all 5 rows were skipped or filtered "
                                         r"\(5 filtered: CPU-only job"):
        load_trace(write_csv(tmp_path, cpu_only), cache=False)
    bad = [changed(DATES, i, "duration", "0")[i - 1] for i in range(1, 6)]
    with pytest.raises(TraceError, match=r"all 5 rows .* \(5 duration must be positive\)"):
        load_trace(write_csv(tmp_path, bad), on_error="skip", cache=False)


def test_mapped_readers_check_ragged_rows_and_bounds(tmp_path):
    """Helios and PAI read their CSVs through the same checks; errors name the source's rows."""
    from reader_samples import HELIOS_ROWS as ROWS, write_helios

    folder = write_helios(tmp_path / "Venus", rows=ROWS[:2] + ["103,uB,vcB,j3,16"] + ROWS[3:])
    with pytest.raises(TraceError, match=r"cluster_log.csv, row 3 \(line 4\): " + re.escape(RAGGED)):
        load_trace(folder, cache=False)
    trace = load_trace(folder, on_error="skip", cache=False)
    assert trace.table.num_rows + trace.report.total == len(ROWS) and trace.report.counts[RAGGED] == 1

    folder = write_helios(tmp_path / "Earth", rows=[r.replace(",7200,", ",40000000,") for r in ROWS])
    with pytest.raises(TraceError, match=r"row 3 \(line 4\), column 'duration': " + LONGER):
        load_trace(folder, cache=False)
    assert load_trace(folder, max_duration_s=10 * YEAR, cache=False).table.num_rows == 3

    from reader_samples import PAI_JOBS as JOBS, write_pai

    folder = write_pai(tmp_path / "pai", jobs=JOBS[:1] + [JOBS[1] + ",extra"] + JOBS[2:])
    with pytest.raises(TraceError, match=r"pai_job_table.csv, line 2: " + re.escape(RAGGED)):
        load_trace(folder, cache=False)


def test_philly_submit_times_far_from_the_rest_are_named_by_job(tmp_path):
    from reader_samples import PHILLY_JOBS as JOBS, write_philly

    jobs = [dict(job) for job in JOBS]
    jobs[1]["submitted_time"] = "2057-10-07 01:30:00"
    folder = write_philly(tmp_path, jobs)
    with pytest.raises(TraceError, match=r"cluster_job_log, job 2, column 'submitted_time': " + FAR):
        load_trace(folder, cache=False)
    trace = load_trace(folder, on_error="skip", cache=False)
    assert trace.table.num_rows + trace.report.total == len(jobs)
    assert [c for (_, c) in trace.report.by_column] == ["submitted_time"]


def test_bounds_reach_the_alibaba2023_reader(shared_dir):
    folder = shared_dir / "traces" / "alibaba_gpu_2023"
    trace = load_trace(folder, fmt="alibaba2023", cache=False, max_duration_s=86400, on_error="skip")
    assert trace.table.num_rows + trace.report.total == 8152  # the default pod list's data rows
    assert trace.report.by_column[("duration longer than trace.max_duration_s (86,400 s)", "deletion_time")] > 0
    assert load_trace(folder, fmt="alibaba2023", cache=False).table.num_rows == 8152
