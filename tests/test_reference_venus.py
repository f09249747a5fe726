"""compat=lucid reproduces the reference simulator's figures on the real Venus trace (needs ../shared).

The whole trace's runs (a few seconds each) are in the slow step. The main suite keeps a fast check
of each baseline policy on four of its VCs (tests/simutil.py's VENUS_VCS, 1,780 jobs): their VCs are
simulated independently, so a run of those four alone must give their jobs the very results of the
whole run that matches the reference's averages. SUBSET pins a digest of those jobs' results (every
per-job column but first_node, as tests/test_golden.py hashes them), taken from the whole runs; the
slow test checks that each whole run still gives them, the main suite that the four VCs' run does.
"""

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from simutil import VENUS_VCS, vc_subset
from test_golden import JOB_COLUMNS, digest

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.run.simulate import simulate
from raysim.models.estimates import estimates_for
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import load_trace

# The Lucid simulator's published reference figures (avg over all 23,859 jobs, seconds, truncated)
REFERENCE = {"fifo": (65720, 53951), "sjf": (21095, 9325), "srtf": (12609, 829),
             "qssf": (15548, 3779), "tiresias": (14700, 2915)}

#: digest of the results of the jobs of VENUS_VCS (by job_id) in the whole runs above
SUBSET = {
    "fifo": "e821fd6b12cf04a171c65b8cb0bedb815b025df6591064d46596d16612c828cc",
    "qssf": "8cce84453bc2d653f25a675c45dc7003f87b145654b17ddb1e0a2d9e9f7c7bf8",
    "sjf": "2f853f0720a51ac7cb48d936ebda7a937a6d9ba8116aafd620e293d6acc10310",
    "srtf": "abf8a42953d3ef0d48a852daf111d8deaaa835aa62844295d919c036d83eccdc",
    "tiresias": "f7c74e89a715e9ed0aaad15fe5619488d7dee686103677fb05d2dcd855893e16",
}


@pytest.fixture(scope="module")
def venus(venus_dir, tmp_path_factory):
    return load_trace(venus_dir, cache_dir=tmp_path_factory.mktemp("cache"))


def run(trace, policy, venus_dir):
    est = None
    if policy == "qssf":
        est = estimates_for(trace.table, source="file",
                            path=venus_dir / "lucid_artifacts" / "duration_estimates_ebm.csv")
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("lucid"), layout_from_vc_nodes(trace.vc_nodes, 8))
    jobs, _ = simulate(trace, spec, est)
    return jobs


def subset_digest(jobs) -> str:
    """Digest of the results of the jobs of VENUS_VCS, in job_id order."""
    jobs = jobs.filter(pc.is_in(jobs.column("vc"), value_set=pa.array(list(VENUS_VCS)))).sort_by("job_id")
    return digest({c: jobs.column(c) for c in JOB_COLUMNS})


@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.parametrize("policy", sorted(REFERENCE))
def test_lucid_compat_matches_reference_averages(policy, venus, venus_dir):
    assert venus.table.num_rows == 23859
    jobs = run(venus, policy, venus_dir)
    jct = jobs.column("jct").to_numpy()
    queue = jobs.column("queue").to_numpy()
    assert (int(jct.mean()), int(queue.mean())) == REFERENCE[policy]
    assert subset_digest(jobs) == SUBSET[policy]


@pytest.mark.shared
@pytest.mark.parametrize("policy", sorted(REFERENCE))
def test_lucid_compat_matches_reference_on_four_vcs(policy, venus, venus_dir):
    """The fast stand-in of the test above: VENUS_VCS alone give their jobs the whole run's results."""
    jobs = run(vc_subset(venus), policy, venus_dir)
    assert jobs.num_rows == 1780
    assert subset_digest(jobs) == SUBSET[policy]


@pytest.mark.shared
def test_lucid_compat_matches_reference(venus, venus_dir, shared_dir, tmp_path):
    """Lucid (profiler + packing) with the reference's estimates, forecast and profiles."""
    from raysim.policy import policy_settings
    from raysim.policy.lucid_inputs import lucid_inputs

    art = venus_dir / "lucid_artifacts"
    settings = policy_settings("lucid", {
        "profiler": {"take_from": ["vc8Gr", "vcefl"], "lender": "vcYVn"},
        "forecast": {"source": "file", "path": str(art / "throughput_forecast.csv")},
        "profiles": {"colocation": str(shared_dir / "profiles" / "colocate_info.csv"),
                     "single": str(shared_dir / "profiles" / "single_data.csv")},
    })
    est = estimates_for(venus.table, source="file", path=art / "duration_estimates_ebm.csv")
    spec, extra = lucid_inputs(settings, venus, RunSpec("lucid", "consolidate", SimParams.for_mode("lucid"),
                                                   layout_from_vc_nodes(venus.vc_nodes, 8)))
    jobs, _ = simulate(venus, spec, est, job_extra=extra)
    jct = jobs.column("jct").to_numpy()
    queue = jobs.column("queue").to_numpy()
    assert (int(jct.mean()), int(queue.mean())) == (12886, 915)
    assert jobs.column("profiled").to_numpy().sum() > 0 and jobs.column("shared").to_numpy().sum() > 0
