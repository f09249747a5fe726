"""Golden digests: today's exact results, pinned so that a refactor cannot change one unnoticed.

Each test runs a simulation and compares a sha256 digest of its result columns with a digest
taken on today's code (see GOLDEN_COMMIT). A mismatch means results changed: if the change is
intended, say so in the commit and update the digest (the assertion message shows the new one).

What is pinned:

1. The VC engine (:func:`raysim.run.simulate.simulate`, runtime local, placer consolidate) on the
   shipped trace ``traces/venus_synth``, compat clean and lucid, policies fifo, sjf, srtf, tiresias,
   qssf (oracle estimates) and lucid (profiler and packing, no forecast or profiles): fast.
2. The same engine on the real Venus trace (``../shared/traces/venus_sept``), compat lucid, as in
   tests/test_reference_venus.py (qssf and lucid with the reference's EBM estimates; lucid with its
   forecast and profiles): marked ``shared`` and ``slow``.
   For both, three digests per run: ``jobs`` (every per-job column but ``first_node``), ``nodes``
   (``first_node``: where a job went, which a renumbering of nodes may change) and ``series``
   (every column of the time series).
3. The FGD inflation experiment (:func:`raysim.sharing.run_inflation`, tune 1.3) on the Alibaba GPU
   2023 ``default`` pod list, six policies x seeds 42 and 1: the text of ``allo.csv`` and
   ``frag_ratio.csv`` as ``+experiment=fgd_openb`` writes them. Marked ``shared``; seed 1 also
   ``slow`` (the main suite keeps every policy at seed 42).
4. The timed FGD experiment (taken from the former ``raysim.sharing.timed.run_timed``; now
   ``+experiment=openb`` on the VC engine with policy fifo or fifo_backfill and the same scored
   placer) on the same list, seed 42: six policies x backfill off/on at speedup 1 and 100,000
   (where pods queue), and fgd x backfill off/on at speedup 20. Two digests per run: ``start_end`` (per-pod start and end times; must stay) and
   ``placement`` (start, end, node, rejected; node numbers may legitimately change with a
   renumbering). Marked ``shared``; each run takes 3-8 s, so all but FAST_TIMED are also ``slow``:
   the main suite keeps the random placer at speedup 1 and, with and without backfill, at
   100,000 (where the queue itself is pinned), and bestfit at 100,000; every placer's own
   choices stay pinned in the main suite by section 3.

The digest (:func:`digest`) hashes named columns in a fixed byte form (int64, float64, bool, str):
it depends neither on Parquet encoding nor on pyarrow/numpy versions nor on integer/float widths.
"""

from __future__ import annotations

import functools
import hashlib
import types

import numpy as np
import pyarrow as pa
import pytest

from raysim.cluster.layout import layout_from_vc_nodes
from raysim.paths import CONF_DIR, TRACES_DIR
from raysim.run.simulate import simulate
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import load_trace

#: The commit whose results the digests below were taken on.
GOLDEN_COMMIT = "111c10411391bfc642e6d639c5e734e58c9676f3"


def digest(columns: dict) -> str:
    """sha256 hex of named columns, in the dict's order. A column is a numpy array, a list or a
    pyarrow (chunked) array, hashed by kind in a fixed byte form: integers as little-endian int64,
    floats as float64 (one NaN), bools as bytes, anything else (strings, dictionary arrays) as its
    strings joined by \\x1f; pyarrow nulls as a mask beside the other values."""
    h = hashlib.sha256()
    for name, values in columns.items():
        h.update(f"{name}:{len(values)}:".encode())
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            if pa.types.is_dictionary(values.type):
                values = values.cast(values.type.value_type)
            if values.null_count:
                h.update(b"nulls:" + values.is_null().to_numpy(zero_copy_only=False).astype(np.uint8).tobytes())
                values = values.drop_null()
            values = values.to_numpy(zero_copy_only=False)
        a = np.asarray(values)
        if a.dtype.kind == "b":
            h.update(b"b:" + a.astype(np.uint8).tobytes())
        elif a.dtype.kind in "iu":
            h.update(b"i:" + a.astype("<i8").tobytes())
        elif a.dtype.kind == "f":
            h.update(b"f:" + np.where(np.isnan(a), np.nan, a).astype("<f8").tobytes())
        else:
            h.update(b"s:" + "\x1f".join(map(str, a.tolist())).encode())
        h.update(b"\n")
    return h.hexdigest()


def check(key: str, got: str) -> None:
    assert got == GOLDEN[key], (f"{key}: results changed since {GOLDEN_COMMIT[:10]} (digest now {got!r}); "
                                "if intended, update GOLDEN in tests/test_golden.py")


# ----------------------------------------------------------------------- VC engine (1, 2)

#: Per-job result columns, in digest order (first_node apart: the `nodes` digest).
JOB_COLUMNS = ("job_id", "vc", "user", "gpu_num", "submit_time", "duration", "start_time", "end_time", "queue",
               "jct", "preemptions", "num_nodes", "shared", "profiled", "finished")
SERIES_COLUMNS = ("vc", "time", "total_gpu_num", "idle_gpu_num", "pending_gpu_num", "running_gpujob_num",
                  "pending_gpujob_num", "pending_job_num_less_8", "total_node_num", "consolidate_node_num",
                  "shared_node_num", "sm_util", "gmem_mb", "gpu_utilization")
VC_DIGESTS = ("jobs", "nodes", "series")


def vc_digests(jobs: pa.Table, series: pa.Table) -> dict[str, str]:
    return {"jobs": digest({c: jobs.column(c) for c in JOB_COLUMNS}),
            "nodes": digest({"first_node": jobs.column("first_node")}),
            "series": digest({c: series.column(c) for c in SERIES_COLUMNS})}


def lucid_settings(forecast: str | None = None, profiles: tuple | None = None):
    """The Lucid settings of tests/test_lucid.py (shipped trace) and tests/test_reference_venus.py."""
    from raysim.policy import policy_settings

    return policy_settings("lucid", {
        "profiler": {"take_from": ["vc8Gr", "vcefl"], "lender": "vcYVn"},
        "forecast": {"source": "file" if forecast else "none", "path": forecast},
        "profiles": {"colocation": profiles[0] if profiles else None, "single": profiles[1] if profiles else None},
    })


def run_vc(trace, policy: str, compat: str, estimates=None, settings=None) -> dict[str, str]:
    from raysim.policy.lucid_inputs import lucid_inputs

    spec = RunSpec(policy, "consolidate", SimParams.for_mode(compat), layout_from_vc_nodes(trace.vc_nodes, 8))
    extra = None
    if policy == "lucid":
        spec, extra = lucid_inputs(settings, trace, spec)
    jobs, series = simulate(trace, spec, estimates, job_extra=extra)
    return vc_digests(jobs, series)


SYNTH_POLICIES = ("fifo", "sjf", "srtf", "tiresias", "qssf", "lucid")


@functools.cache
def synth_run(compat: str, policy: str) -> dict[str, str]:
    trace = load_trace(TRACES_DIR / "venus_synth", cache=False)
    oracle = trace.table.column("duration").to_numpy().astype(np.float64)
    return run_vc(trace, policy, compat, oracle if policy in ("qssf", "lucid") else None, lucid_settings())


@pytest.mark.parametrize("which", VC_DIGESTS)
@pytest.mark.parametrize("policy", SYNTH_POLICIES)
@pytest.mark.parametrize("compat", ["clean", "lucid"])
def test_shipped_trace(compat, policy, which):
    check(f"synth/{compat}/{policy}/{which}", synth_run(compat, policy)[which])


VENUS_POLICIES = ("fifo", "sjf", "srtf", "qssf", "tiresias", "lucid")


@pytest.fixture(scope="module")
def venus_run(venus_dir, shared_dir, tmp_path_factory):
    """policy -> digests of its run on the real Venus trace, compat lucid (each run once)."""
    from raysim.models.estimates import estimates_for

    trace = load_trace(venus_dir, cache_dir=tmp_path_factory.mktemp("cache"))
    art = venus_dir / "lucid_artifacts"
    profiles = shared_dir / "profiles"
    settings = lucid_settings(str(art / "throughput_forecast.csv"),
                              (str(profiles / "colocate_info.csv"), str(profiles / "single_data.csv")))

    @functools.cache
    def run(policy):
        est = None
        if policy in ("qssf", "lucid"):
            est = estimates_for(trace.table, source="file", path=art / "duration_estimates_ebm.csv")
        return run_vc(trace, policy, "lucid", est, settings)

    return run


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("which", VC_DIGESTS)
@pytest.mark.parametrize("policy", VENUS_POLICIES)
def test_venus(venus_run, policy, which):
    check(f"venus/lucid/{policy}/{which}", venus_run(policy)[which])


# ----------------------------------------------------------------------- FGD experiments (3, 4)

FGD_POLICIES = ("random", "dotprod", "gpu_clustering", "gpu_packing", "bestfit", "fgd")


@pytest.fixture(scope="module")
def alibaba(shared_dir):
    folder = shared_dir / "traces" / "alibaba_gpu_2023"
    if not (folder / "openb_pod_list_default.csv").exists():
        pytest.skip(f"Alibaba GPU 2023 trace not in {folder}")
    return folder


@pytest.fixture(scope="module")
def inflation_csv(alibaba):
    """(policy, seed) -> the text of allo.csv + frag_ratio.csv, as `run_fgd` writes them."""
    from raysim.sharing import load_openb, run_inflation

    nodes, pods = load_openb(alibaba, "default")

    def run(policy, seed):
        allo, frag = run_inflation(nodes, pods, policy, seed, 1.3, workload="openb_pod_list_default",
                                   check=True).rows()
        return allo.to_csv(index=False) + frag.to_csv(index=False)

    return run


@pytest.mark.shared
@pytest.mark.parametrize("seed", [42, pytest.param(1, marks=pytest.mark.slow)])
@pytest.mark.parametrize("policy", FGD_POLICIES)
def test_fgd_inflation(inflation_csv, policy, seed):
    check(f"inflation/{policy}/{seed}", hashlib.sha256(inflation_csv(policy, seed).encode()).hexdigest())


def timed_id(run) -> str:
    policy, backfill, speedup = run
    return f"{policy}-{'backfill' if backfill else 'fifo'}-x{speedup}"


#: The timed runs of the main suite (the others are slow; see the module docstring).
FAST_TIMED = {("random", False, 1), ("random", False, 100_000), ("random", True, 100_000), ("bestfit", False, 100_000)}


def timed_runs():
    """(policy, backfill, speedup), seed 42. At the trace's own times (and at x20) no pod ever waits
    (docs/sharing.md): start = submit and end = submit + duration whatever the policy, so only the
    nodes tell those runs apart. At x100000 the cluster fills and pods queue: those runs pin the
    queueing itself. Each run takes 3-8 s: all but FAST_TIMED are slow."""
    runs = ([(p, b, 1) for p in FGD_POLICIES for b in (False, True)] + [("fgd", b, 20) for b in (False, True)]
            + [(p, b, 100_000) for p in FGD_POLICIES for b in (False, True)])
    return [pytest.param(r, id=timed_id(r), marks=[] if r in FAST_TIMED else [pytest.mark.slow]) for r in runs]


@pytest.fixture(scope="module")
def timed_run(alibaba):
    """The former timed FGD experiment's runs, now the openb replay on the VC engine: policy fifo
    (head-of-line blocking) or fifo_backfill, the scored placer of the same policy, arrivals
    compressed by the reader's speedup. Per pod (list order): start, end, node and rejected (none
    is: every pod of the list fits an empty node)."""
    from hydra import compose, initialize_config_dir

    import raysim.cli  # noqa: F401  (registers the config resolvers)
    from raysim.run.config import spec_from_config

    @functools.cache
    def run(policy, backfill, speedup):
        trace = load_trace(alibaba, fmt="alibaba2023", cache=False,
                           reader_options={"workload": "default", "speedup": speedup})
        placer = "fgd_random" if policy == "random" else policy
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose("config", overrides=["+experiment=openb", f"trace.path={alibaba}", "runtime=local",
                                               f"placer={placer}", f"policy={'fifo_backfill' if backfill else 'fifo'}"])
        spec, extra = spec_from_config(cfg, trace)
        jobs, _ = simulate(trace, spec, None, job_extra=extra)
        order = np.argsort(jobs.column("job_id").to_numpy())  # job_id = the pod's row in the list
        n = jobs.num_rows
        return types.SimpleNamespace(start=jobs.column("start_time").to_numpy()[order],
                                     end=jobs.column("end_time").to_numpy()[order],
                                     node=jobs.column("first_node").to_numpy()[order].astype(np.int64),
                                     rejected=np.zeros(n, dtype=bool))

    return run


@pytest.mark.shared
@pytest.mark.parametrize("run", timed_runs())
def test_timed_start_end(timed_run, run):
    """Per-pod start and end times: must not change."""
    r = timed_run(*run)
    check(f"timed/{timed_id(run)}/start_end", digest({"start": r.start, "end": r.end}))


@pytest.mark.shared
@pytest.mark.parametrize("run", timed_runs())
def test_timed_placement(timed_run, run):
    """Start, end, node and rejected: node numbers may change if nodes are renumbered (then compare
    test_timed_start_end, which must still pass)."""
    r = timed_run(*run)
    check(f"timed/{timed_id(run)}/placement",
          digest({"start": r.start, "end": r.end, "node": r.node, "rejected": r.rejected}))


# ----------------------------------------------------------------------- the digests

#: Taken at commit 111c10411391bfc642e6d639c5e734e58c9676f3 (GOLDEN_COMMIT); each was the same in two
#: runs with different hash seeds. A mismatch means results changed. Equal digests are not a typo:
#: on the shipped trace fifo, sjf and qssf (jobs) do not depend on compat; at speedups 1 and 20 no
#: pod waits, so start_end is the same for every policy and queue, and backfill changes nothing.
GOLDEN: dict[str, str] = {
    # 1. VC engine, shipped trace traces/venus_synth (compat/policy/digest)
    "synth/clean/fifo/jobs": "a0e8faa62643b5df72339199070e7a41f3856607d11bcb3b6dcb7d1dab9134ad",
    "synth/clean/fifo/nodes": "8894769963936eb98d11d57cd58c06bb5ed26919c745fcb1866e566e45454951",
    "synth/clean/fifo/series": "0d09e70981eb4c1b80f61c13f589709638c45d122c5e89c842fdba0d6bdc13fd",
    "synth/clean/sjf/jobs": "47050748f592006dbc6eb16029be1160c18615a3e538982fa323f3478a4252ce",
    "synth/clean/sjf/nodes": "7bcfd44ceee582e1a9d8dfe2447eaa150f8d963a513a66a63f71495bba892fae",
    "synth/clean/sjf/series": "da0973e64e402af9e8c43c65d9d034765ea7ce5b75d93ac8b0cbefe6aa7dd72d",
    "synth/clean/srtf/jobs": "a52efc67085af5286082141794c04129bab617bdee437ffeabd05693a1b92b13",
    "synth/clean/srtf/nodes": "78b1aaf2f9464ee350c12cf861f5fa86721ebf28cbecc8e411988cbf201e1aa0",
    "synth/clean/srtf/series": "d85c7fcf14ea0783ed38cb937397d52b7023695d11a9971ab4f23ecae7b5e8bf",
    "synth/clean/tiresias/jobs": "5421e7d5f0545cef0043482e18489e164f822d4b109cbb446325b5cd961dd4b7",
    "synth/clean/tiresias/nodes": "aeaa2f1ba622aaf50f219786250751fc7a08f5ef1af925ad5a7f281e13454bce",
    "synth/clean/tiresias/series": "cdf64142770687d3f10bb171b11ef463af6acb3f8ba8b83fd9e91292ca3ba0d8",
    "synth/clean/qssf/jobs": "ef4a78d579df9b3cd0eda513f08d922899938722baadaa310d68db2df67a78fe",
    "synth/clean/qssf/nodes": "344bce075e05aaaec465e36dfe494c5761b04c7b95dbbab33c25e7175a782d67",
    "synth/clean/qssf/series": "3cb6760a0cd1326026cfdcf1fb91cf392641f15a594adb51c4017cf7bc03316b",
    "synth/clean/lucid/jobs": "eaa6f449e5cead2cbd63ea84f1568621437e54f7160048c64d8b1fcbea07523c",
    "synth/clean/lucid/nodes": "d615434fd0232d85a44f63f716c70b3bf222c2aba828dd203c367ad15da49083",
    "synth/clean/lucid/series": "02526e22dc7121065e94daa9ec2195eecb7110e9cd790d20695e783a9ad4f9be",
    "synth/lucid/fifo/jobs": "a0e8faa62643b5df72339199070e7a41f3856607d11bcb3b6dcb7d1dab9134ad",
    "synth/lucid/fifo/nodes": "8894769963936eb98d11d57cd58c06bb5ed26919c745fcb1866e566e45454951",
    "synth/lucid/fifo/series": "0d09e70981eb4c1b80f61c13f589709638c45d122c5e89c842fdba0d6bdc13fd",
    "synth/lucid/sjf/jobs": "47050748f592006dbc6eb16029be1160c18615a3e538982fa323f3478a4252ce",
    "synth/lucid/sjf/nodes": "7bcfd44ceee582e1a9d8dfe2447eaa150f8d963a513a66a63f71495bba892fae",
    "synth/lucid/sjf/series": "da0973e64e402af9e8c43c65d9d034765ea7ce5b75d93ac8b0cbefe6aa7dd72d",
    "synth/lucid/srtf/jobs": "580dbc7bc3cb8e4080a096877839950842ed0352a7b04778422671459451be3c",
    "synth/lucid/srtf/nodes": "2e8bc102938f928757cb7af7f8581f6aaa29b45cf662bdd1c169f550a7036113",
    "synth/lucid/srtf/series": "75bf45a75aeea35ab09c12025c09c3fc5dab622bd9ee0628458fbd6be6f884f0",
    "synth/lucid/tiresias/jobs": "4495aecd770969b866e7f2ec47f09cf56fb1ba0c5f6182b9b2d11f4938a6f8a8",
    "synth/lucid/tiresias/nodes": "4b4ce2ac835c183494fb5a6b5c05610ea5ec8b96231d548ce7106501d9ca84ef",
    "synth/lucid/tiresias/series": "8102d460d07364368ba934a79ccc7caa178b02a17ef3c298796ee382e3dd0fb5",
    "synth/lucid/qssf/jobs": "ef4a78d579df9b3cd0eda513f08d922899938722baadaa310d68db2df67a78fe",
    "synth/lucid/qssf/nodes": "03123a10fb94e5e6ed6dbe5f13561e1dcd9221d3344200fbbdc14b73f8b2525a",
    "synth/lucid/qssf/series": "1bba26628ba48a9bad523de52f4ececdaebfe0c6b41fdf0484fe714dce20dcd2",
    "synth/lucid/lucid/jobs": "c26bfe9d085a41f8d1d6b388d2683c42152e702c193f71298492bca402dfc1d5",
    "synth/lucid/lucid/nodes": "bfbf80e5879f4ab531898122d25c0e6c94c8da8e492814a7e554d571f5a34bc8",
    "synth/lucid/lucid/series": "eed2f806cf85874910d744f087566f227ee42731499fd3f1afee852172134688",
    # 2. VC engine, real Venus trace, compat lucid (slow, shared)
    "venus/lucid/fifo/jobs": "cf2ea50514b793dc499b644c670855714d5a4ce223fc80bccb6559aa7c218fed",
    "venus/lucid/fifo/nodes": "ca7aa5f3c843dc52c6f154659db879edb79cd36d5fa5a5dec9bfe401f72a5aaf",
    "venus/lucid/fifo/series": "722dd64bbca75e676c0073fe288f35fba89c224863f1766b2f45bbc32f16ec69",
    "venus/lucid/sjf/jobs": "29897f538bb57d16f93d4d825e9b57f6f566db84134c6e987e5da07807d30522",
    "venus/lucid/sjf/nodes": "fed1468fe452e79e50f37076aa2cfb9ee2c9e915042b0cc666865104fa7819cf",
    "venus/lucid/sjf/series": "c074157f0177ec697f35f2d34ddbafdb7a0046422d4235ccbfed47c62d141bee",
    "venus/lucid/srtf/jobs": "83762e2d13a9b4128f8c232f30f23ff1f2120f04e64ff5e4b8452bd568a5b48f",
    "venus/lucid/srtf/nodes": "4ccd5807b50f113c9b36730f309895b1469328347593517d9d5d8db35caf7819",
    "venus/lucid/srtf/series": "b076cde14c72c70b3f6f9b01ae9dc4d876d65a9c41f8dc11bc4fa21140a72ddf",
    "venus/lucid/qssf/jobs": "cba52171e7c44d0e3ef4d5b3a3587b05815c395c8a9fee0832866ee25527bbf3",
    "venus/lucid/qssf/nodes": "82adab5596348085026b72c80e027b7e503622c51d48c893d8be5d4c05444ed8",
    "venus/lucid/qssf/series": "d1b1a905153b636f7faaf08320d2a54a5cdc6da79cc78587003cd10f6c396ad1",
    "venus/lucid/tiresias/jobs": "559c8abed0b621ac7ccbac7a0bd39efd780dbec9b1823d4e5641d45361f2771d",
    "venus/lucid/tiresias/nodes": "0b54a244bdde19759df64c78ed2522440981afc9cf97069f3f133101dd7e3ea4",
    "venus/lucid/tiresias/series": "9c45f7eff70b7f931bad2938aaff2ef806691951c7659f099b974c962a168a97",
    "venus/lucid/lucid/jobs": "2cae719cadce890bc546008ccb8d6033b0c5412f3dfa1578f6c22b4be4600a8d",
    "venus/lucid/lucid/nodes": "5e6d345bff3de0913360ea308c9a0b81a458edd13b83fa66f1f16126a2036dfc",
    "venus/lucid/lucid/series": "bbcdbfac43b861c25b20d55ff9b8537f8087612fecfe05a31468558c6680005d",
    # 3. FGD inflation, default pod list, tune 1.3 (policy/seed): allo.csv + frag_ratio.csv text
    "inflation/random/42": "c6ffaa675c83910be4b96414ae1a016837dd564058f92a7db0e64074e8f7efd5",
    "inflation/random/1": "3f55fb97c29842725a66102c89247ef3e2c8b3b466ffa7ffc420a14c1d8884bd",
    "inflation/dotprod/42": "117579947ddea671a64497dcfa041ca3c69d989340c3dc0896d9d69628cc7bc7",
    "inflation/dotprod/1": "fb284b58b3ab6bc39172a7596a758a1eb73bde71d1b44e35175d187cd3df267c",
    "inflation/gpu_clustering/42": "532237957a099a4fc920e7ed81a835da3f28d308bd4beca4287ea06417118eba",
    "inflation/gpu_clustering/1": "7b3c3eaf5d74e904c21a79ef2893e867fa15fdb9353e9ce6b71d67402a5c5740",
    "inflation/gpu_packing/42": "ce36b1bb5d88eb214dbba4c2767a80a4f7752826a2d9de4b0f5e790249961ba7",
    "inflation/gpu_packing/1": "35a2b90d132eb9a5cfeaab7e46a79be3eba696563b9d0c9c822431c7163f4788",
    "inflation/bestfit/42": "11b2858857dfdf02316858d1078f1a01de4154e3475286b446b2911d156ef97a",
    "inflation/bestfit/1": "6b325105778190f2b660f4b55827521f14c11be5964896a19c9aece766166fba",
    "inflation/fgd/42": "cef20fe74dee31e341b1732046cdc4aad1d3a19f5ecc5ecb7e56b905caa56401",
    "inflation/fgd/1": "0fa10195005c97f098aa3c2ab5607c3e9637f7250b65a62a658fb74f737ab505",
    # 4. Timed FGD, default pod list, seed 42 (policy-queue-speedup/digest)
    "timed/random-fifo-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/random-backfill-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/dotprod-fifo-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/dotprod-backfill-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/gpu_clustering-fifo-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/gpu_clustering-backfill-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/gpu_packing-fifo-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/gpu_packing-backfill-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/bestfit-fifo-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/bestfit-backfill-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/fgd-fifo-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/fgd-backfill-x1/start_end": "9334b8c5f9aa298d8cc868de0e747d4b6f91c91c506333fea44de61cc4cd94f9",
    "timed/fgd-fifo-x20/start_end": "4c2357bcd0fc07bae132ab4de6c4a1405883c0dcafd6f97f0134c07b270fa550",
    "timed/fgd-backfill-x20/start_end": "4c2357bcd0fc07bae132ab4de6c4a1405883c0dcafd6f97f0134c07b270fa550",
    "timed/random-fifo-x100000/start_end": "4d148a0bd8c585e8ac1aa458d2bb0a1d55e314b7a216a64082683652c02b3839",
    "timed/random-backfill-x100000/start_end": "6fed1b151312fa83723ff781a096c943149fc483c233e856aec9cc59cdde0c1b",
    "timed/dotprod-fifo-x100000/start_end": "583867434277e98a1e7c1f5b1960321767facb49df38950a784c8cdd58352ba2",
    "timed/dotprod-backfill-x100000/start_end": "47161e94b9481f5184db066c5499336f322b70627de11f1fdcc4e3cee7a6c0c6",
    "timed/gpu_clustering-fifo-x100000/start_end": "fd8712a80a93a9e381aac1cc540d2c120751d9d51db2ebf9df18393b9bf5f0a7",
    "timed/gpu_clustering-backfill-x100000/start_end": "b158127a0ba93d1c854f8732b98779ffa31394842549626dbc3178320c0fd0fb",
    "timed/gpu_packing-fifo-x100000/start_end": "94fa1d23ae12097826671434c6a8161d8333515331dd915c6c15fb306f1d3622",
    "timed/gpu_packing-backfill-x100000/start_end": "3542a97d08d95eaa7a5dd596d24f8ba685c38087bf11dac29ad67973514e1c49",
    "timed/bestfit-fifo-x100000/start_end": "779613f6352cd39e926d997b58dea0b0935a64c45cd81475e8f1553abac4eaa1",
    "timed/bestfit-backfill-x100000/start_end": "740bda1c3920cf0c3cf5441faa56311de3d39dfce4ecd95964ac92ef8d902e21",
    "timed/fgd-fifo-x100000/start_end": "b6067126f60c5f627932ae7308117160b05a45045466497bdcc18f84bb7090b5",
    "timed/fgd-backfill-x100000/start_end": "6ff68faab0dde273099d1cbfae25b65fdf9a4dfe122015d13d91f0b890f89f47",
    "timed/random-fifo-x1/placement": "6eb990e44d73ec3b1460c515383063fec3ced27c0f9dceb991ca9fb5dd561955",
    "timed/random-backfill-x1/placement": "6eb990e44d73ec3b1460c515383063fec3ced27c0f9dceb991ca9fb5dd561955",
    "timed/dotprod-fifo-x1/placement": "f2d7e0d3fe8802fe94f05713e37128358d06cdc601132ff7c655e699b6a3a48c",
    "timed/dotprod-backfill-x1/placement": "f2d7e0d3fe8802fe94f05713e37128358d06cdc601132ff7c655e699b6a3a48c",
    "timed/gpu_clustering-fifo-x1/placement": "30bc03587535fe4746b2aaa0bc36ce7dc1bb515347ec2e5115153688f997412d",
    "timed/gpu_clustering-backfill-x1/placement": "30bc03587535fe4746b2aaa0bc36ce7dc1bb515347ec2e5115153688f997412d",
    "timed/gpu_packing-fifo-x1/placement": "cec8ce41a85e87956d769c21cab8bd62152fc6234f145743599878f652c7d2e6",
    "timed/gpu_packing-backfill-x1/placement": "cec8ce41a85e87956d769c21cab8bd62152fc6234f145743599878f652c7d2e6",
    "timed/bestfit-fifo-x1/placement": "de3434dd47c91ef0e1fdf42fe56aaa75f3ffdd38d4a13bfa1f77bd3599f8eb52",
    "timed/bestfit-backfill-x1/placement": "de3434dd47c91ef0e1fdf42fe56aaa75f3ffdd38d4a13bfa1f77bd3599f8eb52",
    "timed/fgd-fifo-x1/placement": "7c584682dfbb2dfcc22798ba6ad64b6a00df4dad60efcb3660bf36c618795b1d",
    "timed/fgd-backfill-x1/placement": "7c584682dfbb2dfcc22798ba6ad64b6a00df4dad60efcb3660bf36c618795b1d",
    "timed/fgd-fifo-x20/placement": "08b9d8f8622357077a125feb88971eb436865d5a30967995a9400cf5f4efbfa5",
    "timed/fgd-backfill-x20/placement": "08b9d8f8622357077a125feb88971eb436865d5a30967995a9400cf5f4efbfa5",
    "timed/random-fifo-x100000/placement": "09186e3e1903410b4ccd4933fa1c3ffd5bb2299a771f3a0543a10884e3ee0083",
    "timed/random-backfill-x100000/placement": "14652f392789a13a6ef0e195440c8a98a5acde3f21750606744a0cbdf3930b52",
    "timed/dotprod-fifo-x100000/placement": "36a6bd5a5b2d6dd3cc6d60dfebad8ea33f7ea85552444dbe43350ae537ec2b2b",
    "timed/dotprod-backfill-x100000/placement": "743cd94414651952f7893c74fc69b1883ed70a64dcb1f3e89c7aebe79ce5f8f2",
    "timed/gpu_clustering-fifo-x100000/placement": "cff7f1162c2ec409eb1aa0dc5a66e993b7504c06d4c2755dd2eab78199001bcf",
    "timed/gpu_clustering-backfill-x100000/placement": "fdaf20ff6ecc46b19c22cb51ec5aec22d76d5ae8cea302e7bcc621333bb11975",
    "timed/gpu_packing-fifo-x100000/placement": "56ce417cb26618672cfb53e43eb3574f40f5423078f84e57f7b31523d37d92c3",
    "timed/gpu_packing-backfill-x100000/placement": "a3966615850c01cc3ec3dd8aa0c5b0061b40d662443745aef60bbf7c815ea5c8",
    "timed/bestfit-fifo-x100000/placement": "a3eecb6a3ded20d9ca17d392b2db8a434a093478910dc64672068e7bc76c14dc",
    "timed/bestfit-backfill-x100000/placement": "d90be5eaca4b56e9cc83dace2f95a3d8bc533eaaede7865e02f26669ad57177c",
    "timed/fgd-fifo-x100000/placement": "6644fecfee93abc743d919d23afe3d98ba2409ceb81b585422d4e36e8009b05e",
    "timed/fgd-backfill-x100000/placement": "c81d07a522d219619f2a2dd2d3d510c035265d5fc133eea0cdb5e978dbcf6fb0",
}
