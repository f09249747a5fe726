"""FGD mode (`+experiment=fgd_openb`, mode `fgd`): its settings, declared once, and one inflation run
into a run folder.

A run folder gets `allo.csv` and `frag_ratio.csv` (one row each, in the FGD simulator's column
layout: workload, sc_policy, tune, seed, [total_gpus,] then one column per percent 0..130 of
arrived GPU workload), `fgd_summary.csv` (the curves at 100 % and 130 %, failures, wall time) and
`plots/fgd_curves.png`. A multirun over policies and seeds is combined by
raysim.report.fgd.summarize_fgd_sweep.

The experiment has no clock: pods are placed on the resource state by FGD's node scorers
(raysim.placement.scored), and nothing else of a trace replay applies. A setting it does not use
(a scheduling policy, a placer, quotas between VCs, a runtime, trace options, ...), given on the
command line or differing from the root defaults, is refused in one line naming it
(raysim.run.unused). Pods in time, under any policy and placer, are `+experiment=openb`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.paths import original_cwd
from raysim.placement.scored import SCORERS
from raysim.report.describe import run_description, run_overrides
from raysim.run import unused
from raysim.run.values import plain
from raysim.settings import parse, section, setting
from raysim.sharing.inflation import load_openb, run_inflation, workload_name
from raysim.report.fgd import curve_plot

DATA_HELP = ("The Alibaba GPU 2023 trace (openb) is public: github.com/alibaba/clusterdata, folder "
             "cluster-trace-gpu-v2023/csv; `raysim data fetch openb` caches it for fgd.data_dir=data:openb "
             "(docs/data.md). Or set fgd.data_dir to the folder holding openb_node_list_gpu_node.csv and "
             "the openb_pod_list_*.csv files.")

#: Former keys of the timed experiment, now `+experiment=openb`.
MOVED = {"timed": "the timed experiment is +experiment=openb now",
         "backfill": "a backfilling queue is policy=fifo_backfill of +experiment=openb now",
         "speedup": "compressed arrivals are trace.reader_options.speedup=N of +experiment=openb now (default 100000)"}


@dataclass(frozen=True)
class FgdSettings:
    """The `fgd:` section: which pod list on which cluster, under which node scorer."""

    data_dir: str = setting("data:openb", "the folder holding the openb CSVs (data:openb, or a path relative to "
                                          "the launch directory)")
    workload: str = setting("default", "a pod list: default, cpu050, gpushare40, gpuspec10, multigpu20, ... "
                                       "(docs/sharing.md)")
    node_list: str = setting("openb_node_list_gpu_node", "the cluster's node list (the reference uses the 1,213 "
                                                         "GPU nodes)")
    policy: str = setting("fgd", "the node scorer placing each pod", choices=tuple(SCORERS))
    # (at most 10: the curves end at 130 % of the cluster's GPUs, and the arrivals and their memory grow
    # with tune; 1e300 drew pods forever)
    tune: float = setting(1.3, "arrivals stop when requested GPUs reach tune x the cluster's", above=0,
                          maximum=10)
    plots: bool = setting(True, "plots/fgd_curves.png: allocation and fragmentation against arrived workload")


@dataclass(frozen=True)
class FgdMode:
    """What mode `fgd` reads of the config root."""

    seed: int = setting(0, "the seed of the pods' random arrival order", minimum=0)
    fgd: FgdSettings = section(FgdSettings, "the experiment's inputs and node scorer")


def fgd_settings(cfg: DictConfig) -> FgdMode:
    """The run's `seed` and `fgd:` section, checked before anything is read: a former timed-experiment
    key, a missing section or a bad value is one line naming the key."""
    section_ = plain(cfg, "fgd")
    if section_ is None:
        raise ConfigError("fgd", "mode=fgd needs an `fgd:` config section; run e.g. "
                          "`python -m raysim +experiment=fgd_openb`")
    for key, why in MOVED.items():
        if key in section_:
            raise ConfigError(f"fgd.{key}", why)
    return parse(FgdMode, {"seed": plain(cfg, "seed"), "fgd": section_}, prefix="", owner="the FGD experiment")


def refuse_unused(cfg: DictConfig, overrides=None) -> None:
    """A ConfigError naming the first setting the inflation experiment does not use (a former
    timed-experiment key in `fgd`, or any setting of a trace replay: raysim.run.unused's table for
    mode=fgd), given in `overrides` (default: Hydra's command-line overrides of this run) or differing
    from the root defaults."""
    fgd_settings(cfg)
    unused.refuse_unused(cfg, overrides)


def run_fgd(cfg: DictConfig, run_dir: Path) -> dict:
    """Run one FGD inflation experiment as configured (`fgd.*`, `seed`); returns its summary row."""
    refuse_unused(cfg)
    mode = fgd_settings(cfg)
    f = mode.fgd
    folder = (original_cwd() / f.data_dir).resolve()
    if not (folder / f"{f.node_list.removesuffix('.csv')}.csv").is_file():
        raise FileNotFoundError(f"fgd.data_dir: no {f.node_list}.csv in {folder}.\n{DATA_HELP}")
    t0 = time.perf_counter()
    nodes, pods = load_openb(folder, f.workload, f.node_list)
    load_s = time.perf_counter() - t0
    run = run_inflation(nodes, pods, f.policy, mode.seed, f.tune, workload=workload_name(f.workload), check=True)
    allo, frag = run.rows()
    allo.to_csv(run_dir / "allo.csv", index=False)
    frag.to_csv(run_dir / "frag_ratio.csv", index=False)
    row = {"workload": run.workload, "sc_policy": run.label, "seed": run.seed, "tune": run.tune,
           "gpus": run.total_gpus, "arrivals": len(run.pod), "failed": run.failed,
           "allo_100": allo.at[0, "100"], "allo_130": allo.at[0, "130"],
           "frag_ratio_100": frag.at[0, "100"], "frag_ratio_130": frag.at[0, "130"],
           "load_s": round(load_s, 3), "wall_s": round(run.wall_s, 3)}
    pd.DataFrame([row]).to_csv(run_dir / "fgd_summary.csv", index=False)
    if f.plots:
        curve_plot({run.label: (allo, frag)}, run_dir / "plots" / "fgd_curves.png",
                   title=run_description(f"{run.workload}, seed {run.seed}", overrides=run_overrides(run_dir)))
    print(f"{run.label} on {run.workload} (seed {run.seed}, tune {run.tune}): {len(run.pod):,} arrivals, "
          f"{run.failed:,} failed; GPU allocation {row['allo_100']:.2f} % at 100 % arrived, "
          f"{row['allo_130']:.2f} % at 130 %; {run.wall_s:.2f} s")
    return row
