"""Long simulated spans: one job running three years beside the shipped week, next to the week alone.

    python benchmarks/long_span.py [--years 3] [--policy fifo] [--runtimes local ray]
                                   [--vcs-per-actor 8] [--json]

The trace is the shipped Venus-like week (traces/venus_synth, 6,412 jobs) plus one 8-GPU job of
VC vcJsw submitted with the week's first job and running `--years` years, written to a temporary
folder and loaded with the readers' duration bound raised to match (on the command line:
`trace.max_duration_s=1e8`; by default a duration over one year is a bad row). Each case runs in
a fresh process, so peak memory is its own: loading (`load_s`, not in `total_s`), the simulation
and its result files (`sim_s`), then the summary and plots as a run writes them (`report_s`), in
a temporary folder. Ray starts before the clock (`ray_startup_s`); windows as in conf/runtime
(one week in-process, one day on Ray). `peak_rss_mib` is the process's peak RSS; `peak_all_mib` that of the process
and every process it started, summed (Ray's own processes and actors included; see scale.py).
`samples` is the number of 60-s grid times the run spans, `rows` and `layout` those of its
timeseries.parquet (raysim.report.timeseries).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale import TreeMemory

YEAR_S = 365 * 86_400
WINDOW_S = {"local": 604_800, "ray": 86_400}


def week_with_long_job(years: float, folder: Path):
    """The shipped week, plus (years > 0) one job of `years` years submitted with its first job,
    written to `folder` as a trace and loaded from there (durations up to `years` allowed)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from raysim.paths import TRACES_DIR
    from raysim.trace.load import load_trace
    from raysim.trace.synth import write_trace

    week = load_trace(TRACES_DIR / "venus_synth", cache=False)
    if not years:
        return week
    t = week.table
    job = t.slice(0, 1)
    values = {"job_id": int(pc.max(t.column("job_id")).as_py()) + 1, "duration": int(years * YEAR_S), "gpu_num": 8}
    for name, value in values.items():
        job = job.set_column(t.schema.get_field_index(name), name, pa.array([value], t.schema.field(name).type))
    job = job.set_column(t.schema.get_field_index("vc"), "vc",
                         pa.array(["vcJsw"]).dictionary_encode().cast(t.schema.field("vc").type))
    table = pa.concat_tables([job, t]).unify_dictionaries().combine_chunks()
    write_trace(folder, table.replace_schema_metadata(t.schema.metadata), week.vc_nodes)
    return load_trace(folder, cache=False, max_duration_s=max(years, 1) * YEAR_S)


def one(years: float, policy: str, runtime: str, vcs_per_actor: int) -> dict:
    import pyarrow.parquet as pq

    from raysim.cluster.layout import layout_from_vc_nodes
    from raysim.report.summary import summarize
    from raysim.report.timeseries import series_layout
    from raysim.run.outputs import write_plots
    from raysim.run.simulate import simulate_to
    from raysim.runtime.spec import RunSpec
    from raysim.sim import SimParams

    t = time.perf_counter()
    trace = week_with_long_job(years, Path(tempfile.mkdtemp(prefix="raysim-long-trace-")))
    load_s = time.perf_counter() - t
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("clean"), layout_from_vc_nodes(trace.vc_nodes, 8))
    memory = TreeMemory()
    startup_s = 0.0
    if runtime == "ray":
        from raysim.runtime.ray_backend import ensure_ray

        t = time.perf_counter()
        ensure_ray()
        startup_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory(prefix="raysim-long-") as tmp:
        out = Path(tmp)
        t = time.perf_counter()
        stats = simulate_to(out, trace, spec, None, runtime=runtime, window_s=WINDOW_S[runtime],
                            vcs_per_actor=vcs_per_actor)
        sim_s = time.perf_counter() - t
        jobs = pq.read_table(out / "jobs.parquet",
                             columns=["vc", "submit_time", "end_time", "queue", "jct", "preemptions"])
        summary = summarize(jobs, out / "timeseries.parquet")
        write_plots(jobs, out, summary, label=policy)
        report_s = time.perf_counter() - t - sim_s
        series = out / "timeseries.parquet"
        layout = series_layout(series)
        rows = pq.ParquetFile(series).metadata.num_rows
        first, last = (layout.first, layout.last) if layout.changes else _grid_span(series)
    overall = summary[summary.vc == "all"].iloc[0]
    return {"years": years, "jobs": trace.table.num_rows, "policy": policy, "runtime": runtime,
            "sim_s": round(sim_s, 2), "report_s": round(report_s, 2), "total_s": round(sim_s + report_s, 2),
            "load_s": round(load_s, 2), "ray_startup_s": round(startup_s, 2), "events": stats["events"], "windows": stats["windows"],
            "samples": (last - first) // 60 + 1, "layout": "change-points" if layout.changes else "grid",
            "rows": rows, "avg_jct": round(float(overall["avg_jct"]), 1),
            "gpu_utilization": round(float(overall["gpu_utilization"]), 6),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "peak_all_mib": memory.stop()}


def _grid_span(path) -> tuple[int, int]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    span = pc.min_max(pq.read_table(path, columns=["time"]).column("time")).as_py()
    return span["min"], span["max"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--years", type=float, default=3.0, help="how long the extra job runs")
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--runtimes", nargs="+", default=["local", "ray"])
    ap.add_argument("--vcs-per-actor", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=2, metavar=("YEARS", "RUNTIME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(float(args.one[0]), args.policy, args.one[1], args.vcs_per_actor)))
        return
    for runtime in args.runtimes:
        for years in (0.0, args.years):
            res = subprocess.run([sys.executable, __file__, "--policy", args.policy, "--vcs-per-actor",
                                  str(args.vcs_per_actor), "--one", str(years), runtime],
                                 capture_output=True, text=True)
            if res.returncode != 0:
                print(json.dumps({"years": years, "runtime": runtime, "error": res.stderr.strip().splitlines()[-1:]}))
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
            label = f"week + {years:g}-year job" if years else "week alone"
            print(json.dumps(row) if args.json else
                  f"{runtime:5s} {label:22s} {row['total_s']:6.2f} s (simulation {row['sim_s']:.2f} s, summary and "
                  f"plots {row['report_s']:.2f} s)  peak {row['peak_rss_mib']:,} MiB (all processes "
                  f"{row['peak_all_mib']:,} MiB)  {row['samples']:,} grid times, "
                  f"{row['rows']:,} rows ({row['layout']})")


if __name__ == "__main__":
    main()
