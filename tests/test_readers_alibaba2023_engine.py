"""trace.format=alibaba2023: openb pod lists as jobs of the VC engine with their GPU shares, CPU and
memory, the node list's nodes in file order, counted skips and conversions, gpu_spec as a GPU-type
constraint, the speedup option, and `raysim trace convert`."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from simutil import NO_PAGES
from hydra import compose, initialize_config_dir
from test_readers_alibaba2023 import POD_HEADER, replace

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.cluster.layout import Pool, read_layout_csv
from raysim.paths import CONF_DIR
from raysim.run import run
from raysim.trace import alibaba2023_jobs as jobs
from raysim.trace.alibaba2023 import pod_durations, read_openb_pods
from raysim.trace.cli import main as trace_main
from raysim.errors import TraceError
from raysim.trace.load import load_trace

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
NODES = [
    "n0,32000,131072,0,",  # CPU-only: not a pool
    "n1,96000,786432,8,G2",
    "n2,64000,262144,2,T4",
    "n3,96000,786432,8,G2",
    "n4,64000,262144,2,T4",
    "n5,64000,262144,4,T4",
    "n6,96000,393216,1,V100M16",
]
#: the GPU nodes in file order (runs of alike consecutive nodes; here every run is one node), so node
#: i of the VC is the (i+1)-th GPU node of the list: n1 0, n2 1, ..., n6 5
G2, T4 = (96000, 786432), (64000, 262144)
POOLS = (Pool("G2", 8, 1, *G2), Pool("T4", 2, 1, *T4), Pool("G2", 8, 1, *G2), Pool("T4", 2, 1, *T4),
         Pool("T4", 4, 1, *T4), Pool("V100M16", 1, 1, 96000, 393216))
PODS = [
    "p1,4000,8192,1,1000,,LS,Succeeded,0,100,10",  # observed 90
    "p2,2000,4096,1,500,,BE,Running,5,2000,5",  # a share; Running at the cut-off (2000): 1995, a lower bound
    "p3,1000,2048,0,0,,LS,Running,6,56,6",  # CPU-only: holds CPU and memory, observed 50
    "p4,8000,16384,8,1000,,LS,Failed,3,303,3",  # 8 GPUs, observed 300
    "p5,2500,4096,1,1000,V100M16,Guaranteed,Succeeded,8,68,8",  # constrained, observed 60
    "p6,2000,4096,1,250,,Burstable,Pending,9,900,",  # Pending share: median of the observed shares (p9: 52)
    "p7,2000,4096,2,1000,T4,LS,Succeeded,10,10,10",  # duration 0: filtered
    "p8,3000,4096,1,1000,T4|G2|T4,LS,Succeeded,12,42,12",  # spec de-duplicated to T4|G2, observed 30
    "p9,1000,1024,1,300,,BE,Succeeded,12,72,20",  # a share, observed 52
]
#: the jobs, by submit time then row: (job_id, gpu_num, cpu_num, submit, duration, state, constraint, milli)
JOBS = [
    (1, 1, 4, 0, 90, "Succeeded", None, 1000),
    (4, 8, 8, 3, 300, "Failed", None, 1000),
    (2, 1, 2, 5, 1995, "Running", None, 500),
    (3, 0, 1, 6, 50, "Running", None, 0),
    (5, 1, 3, 8, 60, "Succeeded", "V100M16", 1000),
    (6, 1, 2, 9, 52, "Pending", None, 250),
    (8, 1, 3, 12, 30, "Succeeded", "T4|G2", 1000),
    (9, 1, 1, 12, 52, "Succeeded", None, 300),
]


def write(folder, pods=PODS, nodes=NODES, name="openb_pod_list_default.csv"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "openb_node_list_gpu_node.csv").write_text(NODE_HEADER + "\n" + "\n".join(nodes) + "\n")
    path = folder / name
    path.write_text(POD_HEADER + "\n" + "\n".join(pods) + "\n")
    return path


def load(folder, **kw):
    return load_trace(folder, fmt="alibaba2023", cache=False, **kw)


def composed(*overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=["runtime=local", "trace.cache=false", *overrides])


def run_jobs(run_dir, *overrides):
    """Run the VC engine as configured; its jobs.parquet and trace report."""
    run(composed(*NO_PAGES, *overrides), run_dir)
    return pq.read_table(run_dir / "jobs.parquet"), json.loads((run_dir / "trace_report.json").read_text())


# ------------------------------------------------------------------------------- the job table

def test_pools_by_model_and_gpu_count_from_the_node_list(tmp_path):
    write(tmp_path)
    trace = load(tmp_path)
    assert trace.layout == {"openb": POOLS}
    assert trace.vc_nodes == {"openb": 6} and trace.vc_gpus() == {"openb": 25}


def test_pods_become_jobs(tmp_path):
    write(tmp_path)
    table = load(tmp_path).table
    got = list(zip(*(table.column(c).to_pylist() for c in (
        "job_id", "gpu_num", "cpu_num", "submit_time", "duration", "state", "gpu_constraint", "gpu_milli"))))
    assert got == JOBS
    assert set(table.column("vc").to_pylist()) == {"openb"} and set(table.column("user").to_pylist()) == {""}
    assert table.column("pod_name").to_pylist() == [f"p{j[0]}" for j in JOBS]
    assert table.column("scheduled_time").to_pylist() == [10, 3, 5, 6, 8, None, 12, 20]
    assert table.column("duration_source").to_pylist() == ["observed", "observed", "cutoff", "observed", "observed",
                                                           "median", "observed", "observed"]
    assert table.column("qos").to_pylist()[4] == "Guaranteed" and table.column("memory_mib").to_pylist()[0] == 8192
    assert table.column("cpu_milli").to_pylist() == [4000, 8000, 2000, 1000, 2500, 2000, 3000, 1000]


def test_speedup_divides_arrival_times_and_orders_a_second_by_row(tmp_path):
    write(tmp_path)
    table = load(tmp_path, reader_options={"speedup": 4}).table
    # creation times 0 3 5 6 8 9 12 12 (rows 1 4 2 3 5 6 8 9) -> 0 0 1 1 2 2 3 3, durations kept
    assert table.column("submit_time").to_pylist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert table.column("job_id").to_pylist() == [1, 4, 2, 3, 5, 6, 8, 9]
    assert table.column("duration").to_pylist() == [j[4] for j in JOBS]
    with pytest.raises(ValueError, match="trace.reader_options.speedup: must be greater than 0"):
        load(tmp_path, reader_options={"speedup": 0})


def test_durations_are_the_timed_fgd_model(tmp_path):
    path = write(tmp_path)
    table = load(tmp_path).table
    pods, _ = read_openb_pods(path)
    duration, _ = pod_durations(pods)
    by_row = dict(zip(pods.column("row").to_pylist(), duration.tolist()))
    assert table.column("duration").to_pylist() == [by_row[j] for j in table.column("job_id").to_pylist()]


def test_every_pod_is_a_job_a_counted_skip_or_a_counted_conversion(tmp_path):
    write(tmp_path)
    trace = load(tmp_path)
    report = trace.report
    assert trace.table.num_rows + report.total == len(PODS)
    assert report.counts == {jobs.NO_DURATION: 1}
    assert report.converted == {jobs.CUTOFF: 1, jobs.MEDIAN: 1}
    text = "\n".join(report.lines())
    assert "row 7 (line 8), column 'deletion_time'" in text


def test_state_filter_on_pod_phase_keeps_the_accounting(tmp_path):
    write(tmp_path)
    trace = load(tmp_path, state_filter=["Succeeded"])
    assert trace.table.column("job_id").to_pylist() == [1, 5, 8, 9]
    assert trace.table.num_rows + trace.report.total == len(PODS)
    assert not trace.report.converted  # neither the cut-off p2 nor the Pending p6 is left


# -------------------------------------------------------------------------- where the trace is

def test_folder_workload_option_and_auto_format(tmp_path):
    write(tmp_path)
    write(tmp_path, pods=PODS[:2], name="openb_pod_list_gpushare40.csv")
    assert load(tmp_path).table.num_rows == 8
    assert load_trace(tmp_path, cache=False).table.num_rows == 8  # auto: the folder's default list
    for fmt in ("alibaba2023", "auto"):
        trace = load_trace(tmp_path, fmt=fmt, cache=False, reader_options={"workload": "gpushare40"})
        assert trace.table.num_rows == 2 and trace.source.endswith("openb_pod_list_gpushare40.csv")
    trace = load_trace(tmp_path / "openb_pod_list_gpushare40.csv", cache=False)  # auto by the name's prefix
    assert trace.layout == {"openb": POOLS}
    with pytest.raises(TraceError, match="workload='gpushare40' names another pod list than trace.path"):
        load_trace(tmp_path / "openb_pod_list_default.csv", cache=False, reader_options={"workload": "gpushare40"})
    with pytest.raises(ValueError, match="trace.reader_options.workload: must be one of default, gpuspec05, "):
        load(tmp_path, reader_options={"workload": "nope"})


def test_node_list_option(tmp_path):
    write(tmp_path)
    (tmp_path / "openb_node_list_all_node.csv").write_text("\n".join([NODE_HEADER, *NODES[:3], NODES[6]]) + "\n")
    trace = load(tmp_path, reader_options={"node_list": "all_node"})
    assert trace.layout == {"openb": (Pool("G2", 8, 1, *G2), Pool("T4", 2, 1, *T4), Pool("V100M16", 1, 1, 96000, 393216))}


def test_cache_keeps_pools_and_conversions(tmp_path):
    write(tmp_path / "data")
    first = load_trace(tmp_path / "data", fmt="alibaba2023", cache_dir=tmp_path / "cache")
    again = load_trace(tmp_path / "data", fmt="alibaba2023", cache_dir=tmp_path / "cache")
    assert again.from_cache and not first.from_cache
    assert again.layout == first.layout == {"openb": POOLS}
    assert again.report.converted == first.report.converted and again.report.counts == first.report.counts
    assert again.table.equals(first.table)


def test_a_configured_layout_needs_no_node_list(tmp_path):
    write(tmp_path)
    (tmp_path / "openb_node_list_gpu_node.csv").unlink()
    trace = load(tmp_path, layout={"openb": (Pool("G2", 8, 1), Pool("V100M16", 1, 2), Pool("T4", 4, 1))})
    assert trace.layout is None and trace.vc_nodes == {"openb": 4} and trace.table.num_rows == 8
    with pytest.raises(TraceError, match="node list not found"):
        load(tmp_path)
    with pytest.raises(TraceError, match="the VC layout has no VC 'openb'"):
        load(tmp_path, layout={"other": (Pool("G2", 8, 1),)})


# --------------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("index,cells,column,words", [
    (0, {"gpu_spec": "A100"}, "gpu_spec", "gpu_spec names a GPU model the node list does not have"),
    (0, {"gpu_spec": "V100M16|A100"}, "gpu_spec", "gpu_spec names a GPU model the node list does not have"),
    (4, {"num_gpu": "2"}, "num_gpu", "the pod fits no empty node of its GPU models"),
    (3, {"gpu_spec": "T4"}, "num_gpu", "the pod fits no empty node"),  # 8 GPUs; T4 nodes hold 4
    (0, {"cpu_milli": "100000"}, "num_gpu", "the pod fits no empty node"),  # nodes have 96000 at most
    (2, {"memory_mib": "900000"}, "num_gpu", "the pod fits no empty node"),  # a CPU-only pod too
    (8, {"deletion_time": "15"}, "deletion_time", "deletion_time before scheduled_time"),
    (1, {"cpu_milli": "lots"}, "cpu_milli", "cpu_milli is not an integer"),
])
def test_bad_rows_name_file_row_and_column_or_are_counted(tmp_path, index, cells, column, words):
    path = write(tmp_path, pods=replace(PODS, index, **cells))
    with pytest.raises(TraceError) as err:
        load(tmp_path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(path))
    assert f"row {index + 1} (line {index + 2}), column {column!r}: {words}" in text
    trace = load(tmp_path, on_error="skip")
    assert trace.table.num_rows + trace.report.total == len(PODS)
    assert index + 1 not in trace.table.column("job_id").to_pylist()
    assert sum(n for reason, n in trace.report.counts.items() if reason.startswith(words)) == 1


def test_bad_node_list_and_lists_without_times(tmp_path):
    write(tmp_path, nodes=NODES[:2] + ["n2,64000,262144,2,"])
    with pytest.raises(TraceError, match=r"openb_node_list_gpu_node.csv, row 3 \(line 4\), column 'model'"):
        load(tmp_path)
    write(tmp_path / "cpu", nodes=[NODES[0]])
    with pytest.raises(TraceError, match="no node with GPUs"):
        load(tmp_path / "cpu")
    multi = tmp_path / "m" / "openb_pod_list_multigpu20.csv"
    write(tmp_path / "m")
    multi.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,1000\n")
    with pytest.raises(TraceError, match="multigpu.*no times.*fgd_openb"):
        load_trace(multi, cache=False)


# ------------------------------------------------------------------------------ runs, convert

def test_gpu_spec_constrains_where_jobs_run(tmp_path):
    """Four 100 s pods constrained to the one V100M16 GPU queue for it while T4 and G2 GPUs are idle;
    T4|G2 pods never land on it (under FIFO they wait behind the queued V100M16 pods)."""
    pods = [f"v{i},1000,1024,1,1000,V100M16,LS,Succeeded,{i},{i + 100},{i}" for i in range(4)]
    pods += [f"t{i},1000,1024,1,1000,T4|G2,LS,Succeeded,{i},{i + 100},{i}" for i in range(4)]
    write(tmp_path / "data", pods=pods)
    table, _ = run_jobs(tmp_path / "run", "trace.format=alibaba2023", f"trace.path={tmp_path / 'data'}")
    rows = {job: (node, queue) for job, node, queue in zip(*(table.column(c).to_pylist()
                                                              for c in ("job_id", "first_node", "queue")))}
    assert [rows[j] for j in (1, 2, 3, 4)] == [(5, 0), (5, 99), (5, 198), (5, 297)]
    assert all(rows[j][0] < 5 for j in (5, 6, 7, 8))


def test_the_run_gets_the_typed_pools(tmp_path):
    write(tmp_path / "data")
    table, report = run_jobs(tmp_path / "run", "trace.format=alibaba2023", f"trace.path={tmp_path / 'data'}")
    assert table.column("job_id").to_pylist() == [j[0] for j in JOBS] and all(table.column("finished").to_pylist())
    assert report["layout"] == {"openb": [{"gpu_type": p.gpu_type, "gpus_per_node": p.gpus_per_node, "nodes": p.nodes,
                                           "cpu_milli": p.cpu_milli, "memory_mib": p.memory_mib} for p in POOLS]}
    assert report["converted"] == {jobs.CUTOFF: 1, jobs.MEDIAN: 1}
    assert table.column("gpu_milli").to_pylist() == [j[7] for j in JOBS]
    assert table.column("first_gpu").to_pylist()[3] is None  # the CPU-only pod holds no GPU
    assert sum(report["counts"].values()) + report["jobs"] == len(PODS)


def test_convert_round_trip_gives_the_same_run(tmp_path, capsys):
    src = write(tmp_path / "data")
    out = tmp_path / "out"
    assert trace_main(["convert", str(tmp_path / "data"), "--format", "alibaba2023", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("wrote 8 jobs, 1 VC (25 GPUs in 6 node pools) to " + str(out) +
            ": jobs.parquet, layout.csv, pods.parquet (skipped 1 row)") in printed
    assert "skipped 1 row(s): filtered: duration 0" in printed
    assert not (out / "vc_config.csv").exists()
    assert read_layout_csv(out / "layout.csv") == {"openb": POOLS}
    pods = pq.read_table(out / "pods.parquet")
    assert pods.num_rows == len(PODS) and pods.equals(read_openb_pods(src)[0])
    converted = load_trace(out, cache=False, layout=read_layout_csv(out / "layout.csv"))
    assert converted.table.equals(load(tmp_path / "data").table)
    with pytest.raises(TraceError, match="the folder has layout.csv .*: set cluster.layout="):
        load_trace(out, cache=False)

    direct, _ = run_jobs(tmp_path / "a", "trace.format=alibaba2023", f"trace.path={src}")
    again, _ = run_jobs(tmp_path / "b", f"trace.path={out}", f"cluster.layout={out / 'layout.csv'}")
    assert again.equals(direct)


def test_stats_count_the_typed_pools(tmp_path, capsys):
    write(tmp_path)
    assert trace_main(["stats", str(tmp_path / "openb_pod_list_default.csv"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "1.000 of jobs, 25 GPUs" in out  # the pools' GPUs, not 6 nodes x 8


# ----------------------------------------------------------------------------- the real files

@pytest.mark.shared
def test_default_pod_list_end_to_end(shared_dir, tmp_path):
    folder = shared_dir / "traces" / "alibaba_gpu_2023"
    if not folder.is_dir():
        pytest.skip(f"no openb trace at {folder}")
    table, report = run_jobs(tmp_path / "run", "trace.format=alibaba2023", f"trace.path={folder}", "policy=fifo")
    assert report["jobs"] == table.num_rows == 8152 and all(table.column("finished").to_pylist())
    assert report["counts"] == {}
    assert report["converted"] == {jobs.CUTOFF: 34, jobs.MEDIAN: 897}
    pools = report["layout"]["openb"]
    assert len(pools) == 405 and sum(p["gpus_per_node"] * p["nodes"] for p in pools) == 6212
    milli = table.column("gpu_milli").to_numpy()
    gpu = table.column("gpu_num").to_numpy()
    assert ((milli < 1000) & (gpu > 0)).sum() == 3078 and (gpu == 0).sum() == 1088
    assert not list(folder.glob("*.raysim-cache.parquet"))  # nothing written beside the shared data
    assert np.all(table.column("queue").to_numpy() >= 0)


def test_what_vcs_counting_gpu_shares_cannot_do_yet_is_refused_in_one_line(tmp_path):
    from raysim.errors import ConfigError

    write(tmp_path / "data")
    with pytest.raises(ConfigError, match="policy: lucid packs pairs of jobs on GPUs"):
        run(composed("trace.format=alibaba2023", f"trace.path={tmp_path / 'data'}", "policy=lucid",
                     "estimator.source=oracle"), tmp_path / "run")
    with pytest.raises(ConfigError) as refused:  # what round-based policies declare (SelfTimed.refuses)
        run(composed("trace.format=alibaba2023", f"trace.path={tmp_path / 'data'}", "policy=max_min_fairness"),
            tmp_path / "round")
    assert str(refused.value) == ("policy: max_min_fairness is round-based: its rounds allocate whole GPUs by type, "
                                  "and this trace's jobs ask for gpu_milli, cpu_milli, memory_mib "
                                  "(value 'max_min_fairness')")


def test_vcs_option_deals_nodes_and_pods_to_vcs(tmp_path):
    write(tmp_path)
    trace = load(tmp_path, reader_options={"vcs": 2})
    # GPU nodes n1..n6 in file order: odd ones to openb-0, even ones to openb-1
    assert trace.layout == {"openb-0": (Pool("G2", 8, 2, *G2), Pool("T4", 4, 1, *T4)),
                            "openb-1": (Pool("T4", 2, 2, *T4), Pool("V100M16", 1, 1, 96000, 393216))}
    vc = dict(zip(trace.table.column("job_id").to_pylist(), trace.table.column("vc").to_pylist()))
    # row r to VC (r - 1) mod 2, unless it fits no node there: p4 (8 GPUs) and p5 (V100M16) move
    assert vc == {1: "openb-0", 2: "openb-1", 3: "openb-0", 4: "openb-0", 5: "openb-1", 6: "openb-1",
                  8: "openb-1", 9: "openb-0"}
    with pytest.raises(ValueError, match="trace.reader_options.vcs: must be at least 1"):
        load(tmp_path, reader_options={"vcs": 0})
    with pytest.raises(ValueError, match="more VCs than the node list has GPU nodes"):
        load(tmp_path, reader_options={"vcs": 7})
    with pytest.raises(TraceError, match="vcs=2 splits the node list into VCs, but a layout is configured"):
        load(tmp_path, reader_options={"vcs": 2}, layout={"openb": (Pool("G2", 8, 1),)})
    table, report = run_jobs(tmp_path / "run", "trace.format=alibaba2023", f"trace.path={tmp_path}",
                             "+trace.reader_options.vcs=2", "policy=fifo_backfill", "placer=fgd")
    assert all(table.column("finished").to_pylist()) and set(report["layout"]) == {"openb-0", "openb-1"}


@pytest.mark.parametrize("options,words", [
    ({"speedup": "fast"}, "trace.reader_options.speedup: must be a number (value 'fast')"),
    ({"vcs": "two"}, "trace.reader_options.vcs: must be an integer (value 'two')"),
    ({"speed": 2}, "trace.reader_options.speed: not a setting of the alibaba2023 reader; did you mean "
                   "trace.reader_options.speedup? (its settings: workload, node_list, speedup, vcs; raysim --help lists them)"),
])
def test_bad_reader_options_are_one_line_naming_the_option(tmp_path, options, words):
    from raysim.errors import ConfigError, user_error_message

    write(tmp_path)
    with pytest.raises(ConfigError) as err:
        load(tmp_path, reader_options=options)
    assert user_error_message(err.value) == words


def test_a_reader_option_another_format_does_not_take_is_refused(tmp_path):
    from raysim.errors import ConfigError

    (tmp_path / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                                       "1,a,u,1,1,0,10,COMPLETED\n")
    (tmp_path / "vc_config.csv").write_text(",num\na,1\n")
    with pytest.raises(ConfigError, match="trace.reader_options.speedup: not a setting of the csv reader"):
        load_trace(tmp_path / "jobs.csv", cache=False, reader_options={"speedup": 2})
