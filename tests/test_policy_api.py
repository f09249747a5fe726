"""The narrow scheduler interface: policies use only the view's listed state and actions, and a new
policy is one class, one registry line and one set of constants from its conf."""

import ast
from dataclasses import dataclass
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from simutil import one_vc_trace

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.policy import POLICIES, policy_class, policy_constants, register_policy
from raysim.policy.base import JOB_ATTRIBUTES, VIEW, BlockingQueuePolicy
from raysim.run import run
from raysim.settings import setting

PACKAGE = Path(__file__).resolve().parent.parent / "raysim"
POLICY_FILES = sorted((PACKAGE / "policy").glob("*.py")) + [PACKAGE / "profiler" / "lgf.py"]


def view_uses(path):
    """(attribute, line) of every `view.X` and `view.jobs.X` in a module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "view":
            out.append((node.attr, node.lineno))
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "view"
                and node.value.attr == "jobs"):
            out.append(("jobs." + node.attr, node.lineno))
    return out


def test_policies_use_only_the_view():
    used = 0
    for path in POLICY_FILES:
        for attr, line in view_uses(path):
            used += 1
            if attr.startswith("jobs."):
                assert attr[5:] in JOB_ATTRIBUTES, f"{path.name}:{line} reads view.{attr}"
            else:
                assert attr in VIEW, f"{path.name}:{line} uses view.{attr}, which is not in policy.base.VIEW"
        names = {n.id for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Name)}
        assert not names & {"sim", "vc"}, f"{path.name} reaches into the simulator"
    assert used > 50


def test_policies_declare_what_they_need():
    assert {n for n, c in POLICIES.items() if c.needs_estimate} == {"qssf", "lucid"}
    assert {n for n, c in POLICIES.items() if c.countdown} == {"srtf", "tiresias", "lucid"}
    assert {n for n, c in POLICIES.items() if c.preemptive} == {"srtf", "tiresias"}
    assert policy_constants("tiresias") == {"threshold_gpu_s": 18000, "period_s": 60, "overhead_s": 40,
                                            "large_overhead_s": 60, "large_above_gpus": 8}


def test_a_constant_of_the_wrong_type_is_one_clear_line():
    import pytest

    from raysim.runtime.spec import RunSpec
    from raysim.sim import SimParams

    from raysim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^policy.period_s: must be an integer \(value 'abc'\)$"):
        RunSpec("tiresias", "consolidate", SimParams(), {}, policy_options={"period_s": "abc"})
    spec = RunSpec("tiresias", "consolidate", SimParams(), {}, policy_options={"period_s": 120})
    assert spec.policy_options["period_s"] == 120 and spec.policy_options["threshold_gpu_s"] == 18000


@dataclass(frozen=True)
class SmallestSettings:
    """The toy policy's one constant."""

    max_gpus: int = setting(64, "GPUs running at once at most", minimum=1)


class Smallest(BlockingQueuePolicy):
    """A toy policy: fewest GPUs first, and never more than `max_gpus` running at once."""

    name = "toy_smallest"
    Settings = SmallestSettings

    def __init__(self, params, *, max_gpus):
        super().__init__(params)
        self.max_gpus = max_gpus

    def key(self, view, j):
        return (view.jobs.gpu[j],)

    def schedule(self, view, now):
        if view.total_gpus - view.free_gpus < self.max_gpus:
            super().schedule(view, now)


def test_a_toy_policy_plugs_in_from_a_test_module(tmp_path):
    import pytest

    from raysim.errors import ConfigError
    from raysim.plugins import help_text
    from raysim.policy import policy_settings

    register_policy(Smallest)  # the registry line
    try:
        assert policy_class("toy_smallest") is Smallest
        # its typed setting: listed by `raysim --help`, checked, and refused under another policy
        assert "toy_smallest" in help_text()
        assert "policy.max_gpus (int, >= 1; default 64): GPUs running at once at most" in help_text()
        with pytest.raises(ConfigError, match=r"^policy.max_gpus: must be at least 1 \(value 0\)$"):
            policy_settings("toy_smallest", {"max_gpus": 0})
        with pytest.raises(ConfigError, match=r"^policy.max_gpus: not a setting of policy fifo "):
            policy_settings("fifo", {"max_gpus": 64})
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=["+experiment=venus", "runtime=local"])
        # the conf file's content: its name and its constant, routed into the constructor
        cfg.policy = OmegaConf.create({"name": "toy_smallest", "max_gpus": 64})
        cfg.trace.path = one_vc_trace(tmp_path, 0, 200, 20_000)
        overall = run(cfg, tmp_path / "out")
        assert overall["finished"] == 200
        import pyarrow.parquet as pq

        ts = pq.read_table(tmp_path / "out" / "timeseries.parquet", filters=[("vc", "==", "a")]).to_pandas()
        assert (ts["total_gpu_num"] - ts["idle_gpu_num"]).max() <= 64 + 7  # the cap, plus the last job started
    finally:
        POLICIES.pop("toy_smallest", None)


def test_the_shipped_kinds_are_the_classes_kinds():
    """raysim.policy.SHIPPED_KINDS (a policy's kind without importing it) says what each class says."""
    from raysim.policy import POLICIES, SHIPPED_KINDS, policy_class, policy_kind

    assert set(SHIPPED_KINDS) == set(POLICIES)
    assert {name: policy_class(name).kind for name in POLICIES} == SHIPPED_KINDS
    assert all(policy_kind(name) == SHIPPED_KINDS[name] for name in POLICIES)


def test_checking_a_round_policy_table_imports_no_other_kind_of_policy():
    """+experiment=gavel_trace prepares policies.round: checking it imports the round-based policies
    only (importing every policy to learn its kind took 0.7 s, the elastic ones' solvers)."""
    import subprocess
    import sys

    code = ("import sys\nfrom raysim.run.policy_table import of_kind\nassert of_kind('round')\n"
            "print(sorted(m for m in ('raysim.policy.sia', 'raysim.policy.lucid', 'scipy.optimize') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]"


def test_the_run_pipeline_names_no_policy():
    """raysim/run asks the policy what it is and supports (its class's declarations: `kind`,
    `times_jobs`, `refuses`, `outside_vcs`, ...), never its name: no module compares a value with
    a registered policy's name."""
    names = set(POLICIES)
    compared = []
    for path in sorted((PACKAGE / "run").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    for c in ast.walk(side):
                        if isinstance(c, ast.Constant) and c.value in names:
                            compared.append(f"{path.name}:{node.lineno} {c.value!r}")
    assert compared == []
    assert {"lucid", "bftrainer", "fifo", "max_min_fairness", "sia"} <= names


LUCID_REFUSALS = [  # (overrides, the one line): what cannot run with Lucid's profiler (outside_vcs)
    (["quota=borrow"], "quota: Lucid's profiler takes a VC's idle nodes into its own pool at its own times, and quota "
     "lending lends them to other VCs at its epochs: which claim on an idle node comes first is part of neither "
     "model: run policy=lucid with policy.profiler.nodes=0 (value 'borrow')"),
    (["checkpoint.interval_s=3600"], "checkpoint.interval_s: Lucid's profiler runs jobs outside their VCs, where no "
     "checkpoint is modelled: run policy=lucid with policy.profiler.nodes=0 (value 3600)"),
    (["trace.failed=replay"], "trace.failed: Lucid's profiler runs jobs outside their VCs, where no failed run is "
     "replayed: run policy=lucid with policy.profiler.nodes=0 (value 'replay')"),
    (["cluster.capacity=log.csv"], "cluster.capacity: Lucid's profiler runs the start of jobs on a pool of its own, "
     "whose nodes no node log or failure model describes: run policy=lucid with policy.profiler.nodes=0 "
     "(value 'log.csv')"),
]


def test_what_a_policy_declares_it_cannot_run_with_is_refused_in_its_words():
    import pytest

    from raysim.errors import ConfigError
    from raysim.run.config import check_cluster_config

    for overrides, line in LUCID_REFUSALS:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=lucid",
                                                           "estimator.source=oracle", *overrides])
        with pytest.raises(ConfigError) as refused:
            check_cluster_config(cfg)
        assert str(refused.value) == line
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):  # without its profiling stage it runs
        cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=lucid", "estimator.source=oracle",
                                                       "policy.profiler.nodes=0", "checkpoint.interval_s=3600",
                                                       "quota=borrow"])
    check_cluster_config(cfg)


def test_every_declared_refusal_names_a_setting_or_trait_the_run_knows(monkeypatch):
    """A refusal keyed by a misspelt setting would never fire: every key the engine's extensions and
    the policies declare (`settings`, `refuses`, `requires`) is a setting the run reads
    (raysim.run.config.switches) or a trait it finds (the policy's `outside_vcs`, the trace's
    `resources` and `requests`, and those of priority classes: raysim.run.spot.TRAITS); and a
    declaration changed is what the run refuses."""
    import pytest

    from raysim.errors import ConfigError
    from raysim.run.config import DECLARED, check_cluster_config, refuse_together, switches
    from raysim.run.spot import TRAITS
    from raysim.sim.extensions import Replays

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus"])
    known = {*switches(cfg, check_cluster_config(cfg), "none"), "outside_vcs", "resources", "requests", *TRAITS}
    declared = [c for e in DECLARED for c in (*e.settings, *e.refuses, *e.requires)]
    declared += [c for name in POLICIES for c in policy_class(name).refuses]
    assert {c.partition("=")[0] for c in declared} <= known and len(declared) > 20
    replay = {"trace.failed": ("trace.failed", "replay"), "sim.network": ("sim.network", "on"),
              "sim.compat": ("sim.compat", "clean")}
    refuse_together("fifo", replay, {})
    monkeypatch.setattr(Replays, "refuses", {**Replays.refuses, "sim.network": "replays and {policy} cannot share"})
    with pytest.raises(ConfigError, match=r"^trace\.failed: replays and fifo cannot share \(value 'replay'\)$"):
        refuse_together("fifo", replay, {})


def test_lucid_without_its_profiler_lends_and_borrows_quota(tmp_path):
    """Lucid's node loans and quota lending no longer refuse each other for their mechanisms: without
    the profiling stage, Lucid runs under quota=borrow, its jobs on lent nodes and reclaimed."""
    import pyarrow.parquet as pq

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=lucid", "estimator.source=oracle",
                                                       "policy.profiler.nodes=0", "quota=borrow", "runtime=local",
                                                       "report.plots=none", "report.html=false"])
    overall = run(cfg, tmp_path / "out")
    jobs = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pandas()
    assert overall["finished"] == len(jobs) and jobs.end_time.notna().all()
    assert (jobs.ran_on_vc != jobs.vc).sum() > 0 and jobs.reclaims.sum() > 0


def test_a_runs_settings_are_parsed_and_checked_once(tmp_path, monkeypatch):
    """A trace replay's settings are parsed (cluster_mode) and checked (check_cluster_config) once
    per run: raysim.run.check_settings' result is passed down to the run and its spec."""
    import raysim.run.cluster
    import raysim.run.config

    calls = {"cluster_mode": 0, "check_cluster_config": 0}

    def counted(name):
        original = getattr(raysim.run.config, name)

        def call(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)
        return call

    monkeypatch.setattr(raysim.run.config, "cluster_mode", counted("cluster_mode"))
    check = counted("check_cluster_config")
    monkeypatch.setattr(raysim.run.config, "check_cluster_config", check)
    monkeypatch.setattr(raysim.run.cluster, "check_cluster_config", check)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "runtime=local", "report.html=false"])
    cfg.trace.path = one_vc_trace(tmp_path, 1, 50, 5_000)
    assert run(cfg, tmp_path / "out")["finished"] == 50
    assert calls == {"cluster_mode": 1, "check_cluster_config": 1}
