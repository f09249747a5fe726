"""The run pipeline, read top-down.

`run(cfg, run_dir)` (below) turns a composed Hydra config into a run and owns its folder:
- `cluster.run_cluster`: a trace replay. It loads the trace and the cluster (`config`: trace,
  layout, GPU-type inputs, estimates, the RunSpec, and the policy's own `prepare` step, e.g.
  raysim.policy.lucid_inputs, or for harvesting, policy=bftrainer, the node log and task set,
  raysim.harvest.inputs), simulates every VC (`simulate`: VC groups, coordinator, result files)
  and writes the summary, plots and reports (`outputs`).
- `fgd.run_fgd`: the FGD placement ("inflation") experiment under GPU sharing.

Before any of them reads an input, `check_settings` checks the whole config: every setting the run
uses has a valid value, and every setting it does not use is refused (raysim.run.unused), each in one
line naming the key. Then every ``data:NAME[/FILE]`` value of the config is resolved to the
cached dataset (`data_names.resolve_config`); what was resolved is recorded under ``datasets`` in the
run's trace_report.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.quota.settings import refuse_old_name

#: Former modes that are cluster runs now -> what to do instead.
MOVED = {"rounds": "round-based policies run in cluster mode now: drop mode=rounds (+experiment=gavel_trace, "
                   "docs/gavel.md)",
         "harvest": "harvesting is a cluster run now (policy=bftrainer): drop mode=harvest "
                    "(+experiment=harvest_summit, docs/harvest.md)"}


def run(cfg: DictConfig, run_dir: Path) -> dict:
    """Run the experiment described by `cfg`, writing every result into `run_dir`; return its summary."""
    refuse_old_name(cfg.keys())  # e.g. a `sharing:` key in an experiment file
    checked = check_settings(cfg)  # before any input is resolved or read
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    from raysim.run.data_names import resolve_config

    used = resolve_config(cfg, skip=unread_inputs(cfg))  # data:NAME -> the cached files, before anything reads them
    result = _run_mode(cfg, run_dir, checked)
    if used:
        record_datasets(run_dir, used)
    if cfg.mode == "cluster":
        write_page(cfg, run_dir)
    else:  # an FGD inflation run always gets its page: it reads no report.* setting
        from raysim.report.run_page import write_fgd_page

        print(f"page: {write_fgd_page(run_dir)}")
    print(f"results: {run_dir}")
    return result


def write_page(cfg: DictConfig, run_dir: Path) -> None:
    """report.html of a trace replay, last (it shows the datasets recorded above), unless report.html=false."""
    from raysim.report.settings import report_settings
    from raysim.run.values import plain

    if report_settings(plain(cfg, "report")).html:
        from raysim.report.run_page import write_run_page

        print(f"page: {write_run_page(run_dir)}")


def unread_inputs(cfg: DictConfig) -> tuple[str, ...]:
    """Settings of a cluster run that its policy does not read (their data: names are not fetched):
    an experiment may name inputs for the policies one may pick, e.g. +experiment=venus_elastic
    names the elastic policies' profiles, which policy=tiresias never reads."""
    if cfg.get("mode", "cluster") != "cluster":
        return ()
    from raysim.run.policy_table import unread_entries
    from raysim.run.unused import policy_unused

    return (*policy_unused(cfg), *unread_entries(cfg))


def record_datasets(run_dir: Path, used: list[dict]) -> None:
    """Add the datasets a run read (key, dataset, path, files and their sha256) to its
    trace_report.json (written by cluster runs; created for the other modes)."""
    report = run_dir / "trace_report.json"
    data = json.loads(report.read_text()) if report.exists() else {}
    data["datasets"] = used
    report.write_text(json.dumps(data, indent=2))


def check_settings(cfg: DictConfig):
    """The whole config of a run checked before anything is read: a ConfigError naming the first
    setting the mode (or, in cluster mode, the policy, runtime, ...) does not use, or the first
    bad value of one it uses. Returns a trace replay's checked settings (raysim.run.config.
    check_cluster_config's, parsed once for the run: its numbers and choices; file settings are read
    from the config once their data: names are resolved), None in fgd mode."""
    from raysim.run.unused import refuse_retired, refuse_unused, refuse_unused_by_run

    from raysim.run.policy_table import check_policy_table

    refuse_retired(cfg)  # an old name, wherever it is set, before it is taken for an unused setting
    mode = cfg.get("mode")
    if mode in MOVED:
        raise ConfigError("mode", MOVED[mode], mode)
    if mode not in ("cluster", "fgd"):
        raise ConfigError("mode", "must be one of cluster, fgd", mode)
    if mode == "fgd":
        from raysim.run.fgd import fgd_settings

        fgd_settings(cfg)  # a former key of the timed experiment is named before it is taken for an unused one
    refuse_unused(cfg)
    check_data_section(cfg)
    if mode == "cluster":
        from raysim.run.config import check_cluster_config

        check_policy_table(cfg)  # what an experiment prepares for policies (policies.<name or kind>)
        refuse_unused_by_run(cfg)
        return check_cluster_config(cfg)
    return None


def check_data_section(cfg: DictConfig) -> None:
    """The `data:` section (both modes read it) checked against its declaration."""
    from raysim.run.data_names import DataSettings
    from raysim.run.values import plain
    from raysim.settings import parse

    parse(DataSettings, plain(cfg, "data") or {}, prefix="data", owner="the datasets by name")


def _run_mode(cfg: DictConfig, run_dir: Path, checked) -> dict:
    if cfg.mode == "cluster":
        from raysim.run.cluster import run_cluster

        return run_cluster(cfg, run_dir, checked)
    if cfg.mode == "fgd":
        from raysim.run.fgd import run_fgd

        return run_fgd(cfg, run_dir)
    if cfg.mode in MOVED:
        raise ConfigError("mode", MOVED[cfg.mode], cfg.mode)
    raise ConfigError("mode", "must be one of cluster, fgd", cfg.mode)
