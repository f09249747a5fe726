"""Jobs of several equal workers (a trace's `workers` column, docs/spot.md): each worker's GPUs on
one node, several workers on a node, as GFS's simulator places spot jobs (raysim.placement.workers);
hand-built cases with hand-computed starts, the readers' bad lines, the refusals, Ray against local."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from simutil import assert_same_on_ray, batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.errors import ConfigError, TraceError
from raysim.paths import CONF_DIR
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.trace.load import load_trace

#: Three 8-GPU nodes: jobs of 4 GPUs fill them at 0, and one on each node ends at 100 (the others at
#: 1000): from 100 on each node has 4 GPUs free. A job of 3 workers x 4 GPUs arrives at 50 (500 s).
HALF_BUSY = [(0, 1000, 4), (0, 100, 4)] * 3 + [(50, 500, 12)]


def simulated(jobs, workers, placer="consolidate", nodes=3):
    """Results per job of one VC of `nodes` 8-GPU nodes under FIFO; `workers` per job (None: no column)."""
    params = SimParams.for_mode("clean")
    sim = VCSimulator("vc", pools(nodes), make_policy("fifo", params=params), make_placer(placer, params=params),
                      params)
    cols = batch(jobs)
    if workers is not None:
        cols["workers"] = np.array(workers, dtype=np.int64)
    sim.add_jobs(cols)
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}


def test_workers_start_at_once_one_per_node_where_the_job_whole_waits():
    # consolidate packs the 4-GPU jobs: 0 and 1 on node 0, 2 and 3 on node 1, 4 and 5 on node 2
    r = simulated(HALF_BUSY, [1] * 6 + [3])
    assert r["first_node"][:6] == [0, 0, 1, 1, 2, 2]
    # at 100 each node has 4 free GPUs: a worker on each, nodes 0, 1, 2
    assert r["start_time"][6] == 100 and r["end_time"][6] == 600 and r["num_nodes"][6] == 3 and r["first_node"][6] == 0
    # without the column the 12 GPUs need a whole free node and 4 more: none until 1000
    r = simulated(HALF_BUSY, None)
    assert r["start_time"][6] == 1000 and r["end_time"][6] == 1500 and r["num_nodes"][6] == 2


def test_workers_share_a_node_best_fit_first():
    # a 2-GPU job holds node 0 from 0 to 1000 (6 free there, 8 on node 1); a job of 2 workers x 3 GPUs at 10:
    # its first worker goes to node 0 (fewest free GPUs that fit), the second too (3 left there)
    r = simulated([(0, 1000, 2), (10, 100, 6)], [1, 2], nodes=2)
    assert r["start_time"] == [0, 10] and r["first_node"] == [0, 0] and r["num_nodes"] == [1, 1]
    # first_fit: the same nodes here; 3 workers x 3 GPUs: 2 on node 0 (6 free), the third on node 1
    r = simulated([(0, 1000, 2), (10, 100, 9)], [1, 3], placer="first_fit", nodes=2)
    assert r["start_time"] == [0, 10] and r["first_node"] == [0, 0] and r["num_nodes"] == [1, 2]


def test_a_job_whose_last_worker_does_not_fit_holds_nothing():
    # 4 workers x 4 GPUs on three half-busy nodes: 3 fit at 100, the fourth not; the job waits until
    # 1000 (all free: two workers on node 0, two on node 1) and a 4-GPU job behind it (FIFO) too
    r = simulated(HALF_BUSY[:6] + [(50, 500, 16), (60, 100, 4)], [1] * 6 + [4, 1])
    assert r["start_time"][6:] == [1000, 1000] and r["num_nodes"][6] == 2 and r["first_node"][6:] == [0, 2]


def test_the_random_placer_places_workers_reproducibly():
    a, b = simulated(HALF_BUSY, [1] * 6 + [3], placer="random"), simulated(HALF_BUSY, [1] * 6 + [3], placer="random")
    assert a == b and a["start_time"][6] == 100 and a["num_nodes"][6] == 3


def write_trace(tmp_path: Path, rows: list[str], header: str = "workers", nodes: int = 3) -> str:
    (tmp_path / "vc_config.csv").write_text(f",num\na,{nodes}\n")
    path = tmp_path / "jobs.csv"
    path.write_text(f"job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state,{header}\n" + "".join(
        f"{i},a,u,{row}\n" for i, row in enumerate(rows, 1)))
    return str(path)


def half_busy_rows(last_workers: str = "3") -> list[str]:
    return [f"{g},1,{s},{d},COMPLETED,1" for s, d, g in HALF_BUSY[:6]] + [f"12,1,50,500,COMPLETED,{last_workers}"]


def configured(trace: str, *overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=[f"trace.path={trace}", "runtime=local", "trace.cache=false",
                                                        "report.plots=none", "policy=fifo", *overrides])


def run_cli(tmp_path: Path, trace: str, *overrides) -> Path:
    from raysim.run import run

    out = tmp_path / "out"
    run(configured(trace, *overrides), out)
    return out


def test_a_trace_with_the_column_runs_worker_by_worker(tmp_path):
    jobs = pq.read_table(run_cli(tmp_path, write_trace(tmp_path, half_busy_rows())) / "jobs.parquet").to_pandas()
    assert jobs.start_time.tolist()[6] == 100 and jobs.num_nodes.tolist()[6] == 3


def test_a_column_of_single_workers_changes_nothing(tmp_path):
    with_column = tmp_path / "with"
    without = tmp_path / "without"
    with_column.mkdir(), without.mkdir()
    a = run_cli(with_column, write_trace(with_column, half_busy_rows("1")))
    rows = [r.rsplit(",", 1)[0] for r in half_busy_rows("1")]
    b = run_cli(without, write_trace(without, [r + ",x" for r in rows], header="note"))
    assert pq.read_table(a / "jobs.parquet").equals(pq.read_table(b / "jobs.parquet"))


@pytest.mark.parametrize("value, message", [
    ("0", "workers must be a positive integer"),
    ("-2", "workers must be a positive integer"),
    ("", "value is not a number"),
    ("two", "value is not a number"),
    ("1.5", "value is not an integer"),
    ("5", "gpu_num must divide by workers"),
])
def test_a_bad_workers_value_is_one_line_naming_file_row_and_column(tmp_path, value, message):
    trace = write_trace(tmp_path, ["12,1,0,10,COMPLETED,1", f"12,1,0,10,COMPLETED,{value}"])
    with pytest.raises(TraceError) as err:
        load_trace(trace, cache=False)
    text = str(err.value)
    assert "jobs.csv" in text and "row 2 (line 3)" in text and "column 'workers'" in text and message in text
    assert "\n" not in text


def test_the_spot_reader_keeps_workers_only_where_a_job_has_several(tmp_path):
    nodes = "node_name,gpu_model,gpu_capacity_num,cpu_num\n0,A100,8,64\n1,A100,8,64\n"
    header = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"
    for name, rows, workers in (("many", "1,a,A100,4,4,3,0,100,Spot\n2,a,A100,4,2,1,5,10,HP\n", [3, 1]),
                                ("one", "1,a,A100,4,4,1,0,100,Spot\n", None)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "node_info_df.csv").write_text(nodes)
        (folder / "job_info_df.csv").write_text(header + rows)
        table = load_trace(folder, cache=False).table
        assert (table.column("workers").to_pylist() if "workers" in table.column_names else None) == workers


def test_the_spot_reader_refuses_workers_its_vc_never_holds_at_once(tmp_path):
    # two 8-GPU nodes: 3 workers x 5 GPUs are 15 GPUs of 16, but each node holds one worker of 5
    (tmp_path / "node_info_df.csv").write_text("node_name,gpu_model,gpu_capacity_num,cpu_num\n0,H800,8,64\n1,H800,8,64\n")
    (tmp_path / "job_info_df.csv").write_text(
        "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"
        "1,a,H800,4,2,4,0,100,Spot\n2,a,H800,4,5,3,0,100,Spot\n")
    with pytest.raises(TraceError) as err:
        load_trace(tmp_path, cache=False)
    assert str(err.value).startswith(f"{tmp_path / 'job_info_df.csv'}, row 2 (line 3), column 'worker_num': its VC's "
                                     "nodes of its gpu_model never hold its workers at once")
    trace = load_trace(tmp_path, cache=False, on_error="skip")
    assert trace.table.column("workers").to_pylist() == [4] and trace.report.total == 1


def test_generated_workers_always_fit_their_models_nodes_at_once():
    import pandas as pd

    from raysim.trace.spot_synth import generate_spot

    # one 8-GPU node and 20 one-GPU nodes of one model: a job of 8-GPU workers has one worker
    nodes = pd.DataFrame({"node_name": [str(i) for i in range(21)], "gpu_model": "M", "gpu_capacity_num": [8] + [1] * 20,
                          "cpu_num": 64})
    jobs = generate_spot(nodes, jobs=2000, days=1, seed=0, spot_jobs=1.0)
    fits = {size: sum(c // size for c in nodes.gpu_capacity_num) for size in (1, 2, 4, 8)}
    assert (jobs.worker_num <= jobs.gpu_request.map(fits)).all() and (jobs.worker_num > 1).any()
    assert set(jobs.worker_num[jobs.gpu_request == 8]) == {1}


@pytest.mark.parametrize("override, key", [
    ("placer=fgd", "placer.name"),
    ("policy=max_min_fairness", "policy.name"),
])
def test_what_cannot_place_workers_refuses_in_one_line(tmp_path, override, key):
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, write_trace(tmp_path, half_busy_rows()), override)
    assert err.value.key == key and "workers" in str(err.value) and "\n" not in str(err.value)


def test_workers_of_jobs_asking_cpu_or_memory_are_refused(tmp_path):
    rows = [r + ",1000" for r in half_busy_rows()]
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, write_trace(tmp_path, rows, header="workers,cpu_milli"))
    assert err.value.key == "trace.path" and "\n" not in str(err.value)


@pytest.mark.slow
def test_ray_gives_the_local_results(ray_local, tmp_path):  # noqa: F811
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config

    rng = np.random.default_rng(7)
    rows = []
    for s in np.sort(rng.integers(0, 20_000, 150)):
        per, workers = int(rng.choice([1, 2, 4])), int(rng.choice([1, 2, 3, 4]))
        rows.append(f"{per * workers},1,{s},{int(rng.integers(100, 5000))},COMPLETED,{workers}")
    cfg = configured(write_trace(tmp_path, rows, nodes=4), "runtime.window_s=3600")
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    assert_same_on_ray(tmp_path, loaded, spec, extra, files=("jobs.parquet",))
    jobs = pq.read_table(tmp_path / "local" / "jobs.parquet").to_pandas()
    assert (jobs.num_nodes > 1).any()
