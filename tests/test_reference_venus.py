"""compat=lucid reproduces the reference simulator's figures on the real Venus trace (needs ../shared)."""

import pytest

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.run.simulate import simulate
from raysim.models.estimates import estimates_for
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import load_trace

# The Lucid simulator's published reference figures (avg over all 23,859 jobs, seconds, truncated)
REFERENCE = {"fifo": (65720, 53951), "sjf": (21095, 9325), "srtf": (12609, 829),
             "qssf": (15548, 3779), "tiresias": (14700, 2915)}


@pytest.fixture(scope="module")
def venus(venus_dir, tmp_path_factory):
    return load_trace(venus_dir, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.mark.shared
@pytest.mark.parametrize("policy", sorted(REFERENCE))
def test_lucid_compat_matches_reference_averages(policy, venus, venus_dir):
    assert venus.table.num_rows == 23859
    est = None
    if policy == "qssf":
        est = estimates_for(venus.table, source="file",
                            path=venus_dir / "lucid_artifacts" / "duration_estimates_ebm.csv")
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("lucid"), layout_from_vc_nodes(venus.vc_nodes, 8))
    jobs, _ = simulate(venus, spec, est)
    jct = jobs.column("jct").to_numpy()
    queue = jobs.column("queue").to_numpy()
    assert (int(jct.mean()), int(queue.mean())) == REFERENCE[policy]


@pytest.mark.shared
def test_lucid_compat_matches_reference(venus, venus_dir, shared_dir, tmp_path):
    """Lucid (profiler + packing) with the reference's estimates, forecast and profiles."""
    from omegaconf import OmegaConf
    from raysim.paths import CONF_DIR

    from raysim.run.lucid_inputs import lucid_inputs

    art = venus_dir / "lucid_artifacts"
    cfg = OmegaConf.create({
        "sim": {"compat": "lucid"},
        "profiler": {"nodes": 2, "time_limit": 200, "factor": 4, "take_from": ["vc8Gr", "vcefl"], "lender": "vcYVn",
                     "scaling": OmegaConf.load(CONF_DIR / "config.yaml").profiler.scaling},
        "forecast": {"source": "file", "path": str(art / "throughput_forecast.csv")},
        "profiles": {"colocation": str(shared_dir / "profiles" / "colocate_info.csv"),
                     "single": str(shared_dir / "profiles" / "single_data.csv")},
    })
    est = estimates_for(venus.table, source="file", path=art / "duration_estimates_ebm.csv")
    spec, extra = lucid_inputs(cfg, venus, RunSpec("lucid", "consolidate", SimParams.for_mode("lucid"),
                                                   layout_from_vc_nodes(venus.vc_nodes, 8)))
    jobs, _ = simulate(venus, spec, est, job_extra=extra)
    jct = jobs.column("jct").to_numpy()
    queue = jobs.column("queue").to_numpy()
    assert (int(jct.mean()), int(queue.mean())) == (12886, 915)
    assert jobs.column("profiled").to_numpy().sum() > 0 and jobs.column("shared").to_numpy().sum() > 0
