"""raysim's round-based policies against Gavel's own simulator on the trace Gavel generated
(../shared/references/gavel: seed 0, 300 jobs, 8 V100 + 8 P100 + 8 K80)."""

import numpy as np
import pandas as pd
import pytest

from raysim.cluster.layout import Pool
from raysim.cluster.throughput import read_gavel_throughputs
from raysim.rounds.generate import generate_jobs
from raysim.run.rounds import run_gavel_jobs
from raysim.trace.gavel import read_gavel_trace

#: Gavel's names -> raysim's (Gavel's FIFO is gavel_fifo: raysim's fifo is event-driven)
NAMES = {"fifo": "gavel_fifo"}
GAVEL_CONSTANTS = {"fifo": {"type_choice": "gavel"}}
#: the simulator's clock counts microseconds: a completion differs from Gavel's float by < 0.5 us
CLOCK_S = 1e-6


@pytest.fixture(scope="module")
def gavel(shared_dir):
    folder = shared_dir / "references" / "gavel"
    table = read_gavel_throughputs(folder / "simulation_throughputs.json")
    jobs = read_gavel_trace(folder / "gavel_seed0_lam8000_n300.trace")
    layout = {"cluster": [Pool(t, 4, 2) for t in ("V100", "P100", "K80")]}
    return folder, table, jobs, layout


def simulate(gavel, name, **options):
    """A Gavel policy (Gavel's name) on the VC engine: (JCT per job in id order, Gavel's per-job
    results, Gavel's summary row)."""
    folder, table, jobs, layout = gavel
    result = run_gavel_jobs(jobs, layout, table, NAMES.get(name, name), reference_type="V100",
                            type_order=["V100", "P100", "K80"], **GAVEL_CONSTANTS.get(name, {}), **options)
    jct = result.column("jct").to_numpy(zero_copy_only=False).astype(float)
    reference = pd.read_csv(folder / "per_job" / f"{name}_seed0.csv")
    summary = pd.read_csv(folder / "results_seed0.csv").set_index("policy").loc[name]
    return jct, reference, summary


@pytest.mark.parametrize("name", ["fifo", "fifo_perf", "isolated", "gandiva"])
def test_solver_free_policies_match_gavel_per_job(gavel, name):
    """No LP involved: every job's completion time is Gavel's, to the simulator's clock."""
    jct, reference, summary = simulate(gavel, name)
    assert np.abs(jct - reference["jct"].to_numpy()).max() <= CLOCK_S
    assert jct[100:200].mean() == pytest.approx(summary.avg_jct_window, rel=1e-6)


def test_min_total_duration_matches_gavel_per_job(gavel):
    """An LP policy, but its LP has no objective: raysim stops where ECOS stops (the same
    interior-point method, lp.ecos_feasible_point), so every job completes when it did in Gavel."""
    jct, reference, summary = simulate(gavel, "min_total_duration_perf")
    assert np.abs(jct - reference["jct"].to_numpy()).max() < 1e-3
    assert jct[100:200].mean() == pytest.approx(summary.avg_jct_window, rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["max_min_fairness", "max_min_fairness_perf", "finish_time_fairness",
                                  "finish_time_fairness_perf", "max_sum_throughput_perf", "min_total_duration_perf"])
def test_lp_policies_match_gavel_averages(gavel, name):
    """Policies that solve LPs: Gavel's ECOS and HiGHS may pick different points among equal
    optima, so the check is on averages: within 5 % over the window (ids 100-199) and all jobs."""
    jct, _, summary = simulate(gavel, name)
    assert jct[100:200].mean() == pytest.approx(summary.avg_jct_window, rel=0.05)
    assert jct.mean() == pytest.approx(summary.avg_jct_all, rel=0.05)


def test_generator_reproduces_gavels_trace(gavel, shared_dir):
    """Gavel's continuous generator, seed 0, lam 8000 s, 300 jobs: the same jobs, bit for bit."""
    from omegaconf import OmegaConf

    from raysim.paths import CONF_DIR

    folder, table, _, _ = gavel
    conf = OmegaConf.load(CONF_DIR / "experiment" / "gavel_continuous.yaml")
    templates = [(t["model"], t["distributed"]) for t in conf.rounds.generate.templates]
    generated = generate_jobs(table, templates, jobs=300, lam_s=8000, seed=0, reference_type="v100").to_pandas()
    expected = pd.read_csv(folder / "gavel_seed0_lam8000_n300.jobs.csv")
    assert (generated.job_type == expected.job_type).all()
    assert (generated.scale_factor == expected.scale_factor).all()
    assert (generated.total_steps == expected.total_steps_float).all()
    assert (generated.arrival_time == expected.arrival_time_float).all()
