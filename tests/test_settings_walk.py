"""Every setting is used or refused (issue 26, item 3): each mode walked with every config group and
setting it does not use, composed as a run would be and checked before any data is read (no data
here: dataset names are left unresolved). A refusal is one line naming the key.

Two paths per setting: given on the command line (raysim.run.unused reads Hydra's overrides; here
passed explicitly), and set anywhere else, e.g. in an experiment file (`check_settings` compares the
composed config with the root defaults)."""

from __future__ import annotations

import pytest

from test_cli import raysim

#: Runs, by label: their experiment and overrides.
MODES = {
    "cluster-event": ["+experiment=venus", "policy=tiresias"],
    "cluster-round": ["+experiment=venus", "policy=max_min_fairness"],
    "cluster-harvest": ["+experiment=harvest_summit"],
    "fgd": ["+experiment=fgd_openb"],
}

#: One override per config group or key of the other modes (a value that differs from the root default).
TRACE_REPLAY = ["policy=srtf", "placer=fgd", "quota=borrow", "runtime=local", "cluster=gavel_24",
                "trace.path=jobs.csv", "trace.format=helios", "sim.compat=lucid", "sim.network=on",
                "network.duty=0.5", "estimator.source=oracle", "ray.num_cpus=2", "+policies.lucid.profiler.nodes=3",
                "rounds.reference_type=V100", "+policies.round.window=[1,5]", "policy.name=sjf",
                "placer.type_order=fastest",
                "report.out_jobs=false", "report.timeline=true"]
UNUSED = {
    "cluster-harvest": ["+fgd.policy=fgd"],
    "fgd": TRACE_REPLAY + ["+harvest.nodes=4"],
    "cluster-event": ["+fgd.policy=fgd"],
    "cluster-round": ["+fgd.policy=fgd"],
}
#: Settings only some cluster runs use (refused when given on the command line).
BY_RUN = {
    "cluster-event": ["+policies.lucid.profiler.nodes=3", "+policies.lucid.forecast.path=f.csv",
                      "estimator.source=oracle", "estimator.path=e.csv",
                      "network.duty=0.5", "network.nic_gbps=10",
                      *(f"+policies.round.{key}={value}" for key, value in (
                          ("round_s", 100), ("reset_min_s", 0), ("type_order", "[gpu]"), ("lp_method", "simplex"),
                          ("window", "[1,5]"), ("job_type_column", "model"), ("job_type_map", "{a: b}"))),
                      "+harvest.nodes=4", "report.timeline_max_jobs=5", "report.timeline_range=[0,10]"],
    "cluster-round": ["+policies.lucid.profiler.nodes=3", "network.duty=0.5", "estimator.path=e.csv", "+harvest.nodes=4"],
    "cluster-harvest": ["trace.path=jobs.csv", "trace.format=helios", "cluster=gavel_24", "cluster.capacity=log.csv",
                        "placer=fgd", "estimator.source=oracle", "+policies.lucid.profiler.nodes=3",
                        "+policies.round.round_s=100", "+policies.elastic.profiles=p"],
}
#: Settings round-based policies refuse wherever they are set (raysim.policy.selftimed.SelfTimed.refuses).
ROUND_REFUSES = ["quota=borrow", "estimator.source=oracle", "sim.network=on", "sim.compat=lucid"]


def compose(overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    import raysim.cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name="config", overrides=list(overrides))


@pytest.fixture(autouse=True)
def no_data(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path / "data"))  # nothing may be read: no dataset is cached


def key_of(override: str) -> str:
    return override.lstrip("+~").split("=", 1)[0]


def refused(call, *args):
    """The ConfigError `call(*args)` raises, checked to be one line."""
    from raysim.errors import ConfigError, user_error_message

    with pytest.raises(ConfigError) as err:
        call(*args)
    message = user_error_message(err.value)
    assert message is not None and "\n" not in message
    return err.value


def walk(table):
    return [pytest.param(mode, o, id=f"{mode}:{o}") for mode, overrides in table.items() for o in overrides]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_runs_its_own_settings(mode):
    from raysim.run import check_settings
    from raysim.run.unused import refuse_unused, refuse_unused_by_run

    cfg = compose(MODES[mode])
    check_settings(cfg)
    refuse_unused(cfg, MODES[mode])
    if cfg.mode == "cluster":
        refuse_unused_by_run(cfg, MODES[mode])


@pytest.mark.parametrize("mode,override", walk(UNUSED))
def test_a_mode_refuses_every_group_it_does_not_use(mode, override):
    """On the command line: the override's own key. Anywhere else (what check_settings sees when no
    command line names it): the first setting that differs from the root defaults, in that group."""
    from raysim.run import check_settings
    from raysim.run.unused import refuse_unused

    cfg = compose([*MODES[mode], override])
    key = key_of(override)
    assert refused(refuse_unused, cfg, [*MODES[mode], override]).key == key
    err = refused(check_settings, cfg)
    top = key.split(".", 1)[0]
    assert err.key == top or err.key.startswith(top + "."), (override, str(err))
    assert ("does not use it" in str(err) or "only" in str(err) or "deterministic" in str(err)), str(err)


@pytest.mark.parametrize("override", ["runtime=ray", "placer=consolidate", "policy=fifo"])
def test_a_mode_refuses_a_group_named_at_its_default(override):
    """`runtime=ray` is the root default, yet the FGD experiment has no runtime: naming it is refused."""
    from raysim.run.unused import refuse_unused

    cfg = compose([*MODES["fgd"], override])
    assert refused(refuse_unused, cfg, [*MODES["fgd"], override]).key == key_of(override)


def test_harvesting_under_another_policy_is_refused():
    """The harvest section is policy=bftrainer's input: with any other policy it is one line."""
    from raysim.run import check_settings

    err = refused(check_settings, compose([*MODES["cluster-harvest"], "policy=fifo"]))
    assert err.key == "harvest" and "policy=bftrainer only" in str(err)


@pytest.mark.parametrize("mode,override", walk(BY_RUN))
def test_a_cluster_run_refuses_settings_its_policy_does_not_use(mode, override):
    from raysim.run.unused import refuse_unused_by_run

    overrides = [*MODES[mode], "runtime=local", override]
    err = refused(refuse_unused_by_run, compose(overrides), overrides)
    assert err.key == key_of(override)


@pytest.mark.parametrize("override", ROUND_REFUSES)
def test_a_round_based_run_refuses_what_its_rounds_cannot_do(override):
    from raysim.run import check_settings

    err = refused(check_settings, compose([*MODES["cluster-round"], override]))
    assert err.key == key_of(override).split(".")[0] or err.key == key_of(override)
    assert "round-based" in str(err)


@pytest.mark.parametrize("overrides,key", [
    (["runtime=local", "ray.num_cpus=2"], "ray.num_cpus"),
    (["policy=lucid", "estimator.source=oracle", "policy.packing=false", "policy.packing_threshold=5"],
     "policy.packing_threshold"),
    (["policy=lucid", "estimator.source=oracle", "policy.profiler.nodes=0", "policy.profiler.take_from=[vc8Gr]"],
     "policy.profiler.take_from"),
    (["policy=lucid", "estimator.source=oracle", "policy.profiler.nodes=0", "policy.profiler.time_limit=100"],
     "policy.profiler.time_limit"),
])
def test_settings_a_run_switched_off_are_refused(overrides, key):
    from raysim.run.unused import refuse_unused_by_run

    overrides = ["+experiment=venus", *overrides]
    assert refused(refuse_unused_by_run, compose(overrides), overrides).key == key


def test_policy_settings_are_not_refused_in_a_multirun(monkeypatch):
    """A multirun gives its overrides to every run (`-m policy=qssf,srtf estimator.source=oracle`):
    the runs that do not use one of them run anyway."""
    from raysim.run import unused

    monkeypatch.setattr(unused, "in_multirun", lambda: True)
    monkeypatch.setattr(unused, "command_line_overrides", lambda: ["policy=srtf", "estimator.source=oracle"])
    unused.refuse_unused_by_run(compose(["+experiment=venus", "policy=srtf", "estimator.source=oracle"]))


@pytest.mark.parametrize("experiment", sorted(p.stem for p in
                                              (__import__("raysim.paths").paths.CONF_DIR / "experiment").glob("*.yaml")))
def test_shipped_experiments_use_every_setting_they_make(experiment):
    from raysim.run import check_settings

    check_settings(compose([f"+experiment={experiment}"]))


@pytest.mark.parametrize("policy", ["fifo", "fifo_backfill", "sjf", "srtf", "tiresias", "max_min_fairness",
                                    "gandiva", "finish_time_fairness_perf"])
def test_every_policy_on_venus_passes(policy):
    """+experiment=venus names Lucid's profiling pool (policies.lucid); other policies run with it
    (raysim.run.policy_table)."""
    from raysim.run import check_settings

    check_settings(compose(["+experiment=venus", f"policy={policy}"]))


def test_the_fgd_experiment_with_a_policy_quotas_and_a_runtime_is_one_line(tmp_path):
    """The issue's example: exit 2, one line naming the first setting the experiment does not use."""
    out = raysim("+experiment=fgd_openb", "policy=tiresias", "quota=borrow", "runtime=ray",
                 f"hydra.run.dir={tmp_path / 'run'}", env={"RAYSIM_DATA": str(tmp_path / "data")}, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("raysim: error: policy: the FGD inflation experiment"), out.stderr
    assert "Traceback" not in out.stdout + out.stderr and not (tmp_path / "data").exists()


def test_the_former_harvest_mode_says_what_to_run_instead(tmp_path):
    """mode=harvest is gone: harvesting is a cluster run under policy=bftrainer."""
    out = raysim("+experiment=harvest_summit", "mode=harvest", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("raysim: error: mode: harvesting is a cluster run now"), out.stderr


@pytest.mark.parametrize("overrides,key,value", [
    (["+experiment=venus"], "network.duty", 0.5),                     # sim.network is off
    (["+experiment=venus", "runtime=local"], "ray.num_cpus", 2),      # no Ray
    (["+experiment=venus"], "report.timeline_max_jobs", 5),           # no timeline
])
def test_a_setting_whose_switch_is_off_is_refused_wherever_it_is_set(overrides, key, value):
    """As an experiment file would set it (in the composed config, not on the command line): a
    setting no run reads while its switch is off is refused in a single run."""
    from omegaconf import OmegaConf, open_dict

    from raysim.run import check_settings

    cfg = compose(overrides)
    check_settings(cfg)
    with open_dict(cfg):
        OmegaConf.update(cfg, key, value, merge=False)
    err = refused(check_settings, cfg)
    assert err.key == key and "only" in str(err), str(err)
