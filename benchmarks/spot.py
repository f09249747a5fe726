"""Priority classes' cost: the same traces replayed without and with a priority_class column.

    python benchmarks/spot.py [--cases venus_synth synth50k] [--spot 0.25] [--squeeze 2] [--repeat 3] [--out DIR] [--json]

Each case is a raysim-schema trace written to a scratch folder twice, without the column and with
`--spot` of its jobs (seeded) spot and the others hp: `venus_synth` (the shipped Venus-like week,
6,412 jobs), `synth50k` (50,000 jobs drawn by raysim's generator from its Venus preset, seed 0: 15
VCs of 135 nodes in all) and `synth50k_one_vc` (those jobs in one VC of 1,080 nodes, arriving 8x as
fast: where an HP job that cannot start has many nodes and running jobs to look through).
Each is run through the config path of a trace replay (fifo, consolidate, runtime=local, no plots)
with its submit times divided by `--squeeze` (a busier cluster: more high-priority jobs that cannot
start, each a search for spot jobs to evict), `--repeat` times: the median wall and CPU time of the
simulation (simulate_to: the engine and the result files) are printed, with the evictions; on a
machine shared with other work the CPU time is the steadier figure. With `--out`, the jobs.parquet
of each run is kept there
(`<case>_<classes|plain>.parquet`), to compare two trees' results byte for byte.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR, TRACES_DIR
from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
from raysim.run.simulate import simulate_to

CASES = ("venus_synth", "synth50k", "synth50k_one_vc")


def case_trace(case: str) -> tuple[pa.Table, dict[str, int]]:
    """(the case's jobs, VC -> nodes)."""
    if case == "venus_synth":
        folder = TRACES_DIR / "venus_synth"
        lines = (folder / "vc_config.csv").read_text().splitlines()[1:]
        return pq.read_table(folder / "jobs.parquet"), {a: int(b) for a, b in (line.split(",")[:2] for line in lines)}
    from raysim.trace.presets import VENUS
    from raysim.trace.synth import generate

    table, vc_nodes = generate(VENUS, days=60, seed=0)
    table = table.slice(0, 50_000)
    if case == "synth50k_one_vc":  # the same jobs in one VC of 8x the nodes, arriving 8x as fast
        table = table.set_column(table.schema.get_field_index("vc"), "vc", pa.array(["big"] * table.num_rows))
        submit = table.schema.get_field_index("submit_time")
        table = table.set_column(submit, "submit_time", pa.array(table.column(submit).to_numpy() // 8))
        vc_nodes = {"big": 8 * sum(vc_nodes.values())}
    return table, vc_nodes


def write_case(folder: Path, table: pa.Table, vc_nodes: dict, classes: np.ndarray | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vc_config.csv").write_text(",num\n" + "".join(f"{vc},{n}\n" for vc, n in vc_nodes.items()))
    if classes is not None:
        table = table.append_column("priority_class", pa.array(classes))
    pq.write_table(table.replace_schema_metadata(None), folder / "jobs.parquet")
    return folder / "jobs.parquet"


def run_once(trace: Path, out: Path) -> tuple[float, float, int]:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"trace.path={trace}", "runtime=local", "trace.cache=false",
                                                        "report.plots=none", "policy=fifo", "placer=consolidate"])
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    t, cpu = time.perf_counter(), time.process_time()
    simulate_to(out, loaded, spec, None, runtime="local", job_extra=extra)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    names = pq.read_schema(out / "jobs.parquet").names
    evictions = int(pq.read_table(out / "jobs.parquet", columns=["evictions"]).column(0).to_numpy().sum()) \
        if "evictions" in names else 0
    return wall, cpu, evictions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--spot", type=float, default=0.25, help="share of jobs that are spot jobs")
    ap.add_argument("--squeeze", type=float, default=2.0, help="divide the submit times by this")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None, help="keep each run's jobs.parquet in this folder")
    ap.add_argument("--json", action="store_true", help="one JSON object per case")
    args = ap.parse_args()
    keep = Path(args.out) if args.out else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            table, vc_nodes = case_trace(case)
            submit = table.schema.get_field_index("submit_time")
            table = table.set_column(submit, "submit_time", pa.array(
                (table.column(submit).to_numpy() // args.squeeze).astype(np.int64)))
            spot = np.random.default_rng(0).random(table.num_rows) < args.spot
            row = {"case": case, "jobs": table.num_rows, "spot_jobs": int(spot.sum()), "squeeze": args.squeeze}
            for name, classes in (("plain", None), ("classes", np.where(spot, "spot", "hp"))):
                trace = write_case(Path(tmp) / case / name, table, vc_nodes, classes)
                walls, cpus = [], []
                for k in range(args.repeat):
                    out = Path(tmp) / case / f"{name}_out{k}"
                    wall, cpu, evictions = run_once(trace, out)
                    walls.append(wall)
                    cpus.append(cpu)
                if keep:
                    shutil.copy(out / "jobs.parquet", keep / f"{case}_{name}.parquet")
                row[f"{name}_wall_s"] = round(statistics.median(walls), 2)
                row[f"{name}_cpu_s"] = round(statistics.median(cpus), 2)
                row[f"{name}_evictions"] = evictions
            row["ratio"] = round(row["classes_cpu_s"] / row["plain_cpu_s"], 3)
            print(json.dumps(row) if args.json else
                  f"{case:12s} {row['jobs']:6d} jobs ({row['spot_jobs']} spot)  without classes "
                  f"{row['plain_wall_s']:7.2f} s wall {row['plain_cpu_s']:7.2f} s CPU  with {row['classes_wall_s']:7.2f} "
                  f"s wall {row['classes_cpu_s']:7.2f} s CPU  (CPU x{row['ratio']})  evictions {row['classes_evictions']:,}")


if __name__ == "__main__":
    main()
