"""Helpers for building tiny traces and running one VC in tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from raysim.cluster.layout import Pool
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator


def pickled_midway_and_whole(fresh, until: int) -> tuple[dict, dict]:
    """Results per job of two simulators `fresh()` builds: one run to `until`, pickled, unpickled and
    run on; one run whole (equal where a VC's state survives a checkpoint)."""
    import pickle

    whole = fresh()
    whole.run()
    half = fresh()
    half.run(until=until)
    half = pickle.loads(pickle.dumps(half))
    half.run()
    return ({k: v.tolist() for k, v in half.results().items()}, {k: v.tolist() for k, v in whole.results().items()})


def assert_same_on_ray(out: Path, trace, spec, extra: dict | None = None, *, est=None, runs=({},),
                       files=("jobs.parquet", "timeseries.parquet")) -> Path:
    """Simulate (trace, spec) in process into `out`/local, then once per entry of `runs` (keyword
    options of raysim.run.simulate.simulate_to: window_s, vcs_per_actor; runtime "ray" unless it says
    otherwise) into `out`/run<k>, and assert that each of `files` is byte-identical to the in-process
    one. Returns `out`/local."""
    from raysim.run.simulate import simulate_to

    local = out / "local"
    simulate_to(local, trace, spec, est, runtime="local", job_extra=extra)
    for k, options in enumerate(runs):
        there = out / f"run{k}"
        simulate_to(there, trace, spec, est, **{"runtime": "ray", **options}, job_extra=extra)
        for name in files:
            assert (there / name).read_bytes() == (local / name).read_bytes(), (name, options)
    return local


def pools(nodes, gpus_per_node=8, gpu_type="gpu"):
    """One pool of `nodes` identical nodes (Lucid's 8-GPU nodes by default)."""
    return (Pool(gpu_type, gpus_per_node, nodes),)


def batch(jobs, start_id=1):
    """jobs: list of (submit, duration, gpu[, estimate]) in trace order -> numpy column batch."""
    n = len(jobs)
    est = [j[3] if len(j) > 3 else np.nan for j in jobs]
    return {
        "job_id": np.arange(start_id, start_id + n, dtype=np.int64),
        "seq": np.arange(n, dtype=np.int64),
        "submit_time": np.array([j[0] for j in jobs], dtype=np.int64),
        "duration": np.array([j[1] for j in jobs], dtype=np.int64),
        "gpu_num": np.array([j[2] for j in jobs], dtype=np.int64),
        "gpu_util": np.full(n, 50.0),
        "gmem": np.full(n, 1000.0),
        "estimate": np.array(est, dtype=np.float64),
        "workload": np.full(n, -1, dtype=np.int64),
        "share_score": np.zeros(n, dtype=np.int64),
    }


def run_vc(jobs, policy, *, nodes=1, compat="lucid", placer="consolidate", seed=0):
    """Simulate one VC to completion; return (simulator, results dict)."""
    params = SimParams.for_mode(compat, seed=seed)
    sim = VCSimulator("vc", pools(nodes), make_policy(policy, params=params),
                      make_placer(placer, params=params), params)
    sim.add_jobs(batch(jobs))
    sim.run()
    return sim, sim.jobs.results()


def random_jobs(rng, n, horizon, max_gpu=16, long_tail=False):
    """Random small trace (sorted by submit), with GPU counts drawn from a Venus-like mix."""
    submit = np.sort(rng.integers(0, horizon, n))
    sizes = np.array([1, 1, 1, 2, 4, 8, 8, 12, 16, 24])
    gpu = rng.choice(sizes[sizes <= max_gpu], n)
    hi = 20000 if long_tail else 400
    duration = rng.integers(1, hi, n)
    est = rng.integers(-50, 500, n)
    est = np.where(est < 0, 1000, est)
    return [(int(s), int(d), int(g), float(e)) for s, d, g, e in zip(submit, duration, gpu, est)]


#: Four VCs of the real Venus trace (1,780 of its 23,859 jobs) with queues, preemptions and multi-node
#: jobs under every baseline policy. VCs without quotas are simulated independently, so a run of
#: these VCs alone gives their jobs exactly the results of the whole trace's run (every per-job column
#: but first_node; checked by tests/test_reference_venus.py): the main suite's stand-in for runs of
#: the whole trace.
VENUS_VCS = ("vchbv", "vcvlY", "vcLTP", "vchA3")


def vc_subset(trace, vcs=VENUS_VCS):
    """`trace` restricted to the VCs `vcs` (their jobs, in trace order, and their nodes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from raysim.trace.load import Trace

    table = trace.table.filter(pc.is_in(trace.table.column("vc"), value_set=pa.array(list(vcs))))
    return Trace(table, {vc: trace.vc_nodes[vc] for vc in vcs}, trace.report, trace.source)


#: Overrides for a run whose plots and report.html no test reads: drawing them is most of a small
#: run's time. Runs that check them (tests/test_plots.py, test_report_page.py, test_sweep.py, the
#: plot checks of test_capacity.py and test_quota.py, ...) and the experiments of
#: tests/test_results_schema.py keep them.
NO_PAGES = ("report.plots=none", "report.html=false")


def one_vc_trace(tmp_path: Path, seed: int, jobs: int, span_s: int) -> str:
    """The path of a raysim-schema trace of `jobs` random jobs (seeded) in one VC of 4 nodes."""
    rows = random_jobs(np.random.default_rng(seed), jobs, span_s, max_gpu=8)
    trace_dir = tmp_path / "trace"
    trace_dir.mkdir()
    (trace_dir / "vc_config.csv").write_text(",num\na,4\n")
    (trace_dir / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n" + "".join(
        f"{i},a,u,{g},1,{s},{d},COMPLETED\n" for i, (s, d, g, _) in enumerate(rows)))
    return str(trace_dir / "jobs.csv")
