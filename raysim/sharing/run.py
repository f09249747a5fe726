"""FGD mode entry point (`+experiment=fgd_openb`): config -> one inflation run -> run folder.

A run folder gets `allo.csv` and `frag_ratio.csv` (one row each, in the FGD simulator's column
layout: workload, sc_policy, tune, seed, [total_gpus,] then one column per percent 0..130 of
arrived GPU workload), `fgd_summary.csv` (the curves at 100 % and 130 %, failures, wall time) and
`plots/fgd_curves.png`. A multirun over policies and seeds is combined by `summarize_fgd_sweep`.

The experiment has no clock: pods are placed on the resource state by FGD's scored policies
(raysim.placement.scored), and nothing else of a trace replay applies. A setting it does not use
(a scheduling policy, a placer, quotas between VCs, a runtime, trace options, ...), given on the
command line or differing from the root defaults, is refused in one line naming it
(raysim.run.unused). Pods in time, under any policy and placer, are
`+experiment=openb`.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.paths import original_cwd
from raysim.run import unused
from raysim.report.describe import run_description, run_overrides
from raysim.report.plots import set_title, subplots
from raysim.tables import markdown_table
from raysim.sharing.inflation import load_openb, run_inflation, workload_name

DATA_HELP = ("The Alibaba GPU 2023 trace (openb) is public: github.com/alibaba/clusterdata, folder "
             "cluster-trace-gpu-v2023/csv; `raysim data fetch openb` caches it for fgd.data_dir=data:openb "
             "(docs/data.md). Or set fgd.data_dir to the folder holding openb_node_list_gpu_node.csv and "
             "the openb_pod_list_*.csv files.")


#: Former keys of the timed experiment, now `+experiment=openb`.
MOVED = {"timed": "the timed experiment is +experiment=openb now",
         "backfill": "a backfilling queue is policy=fifo_backfill of +experiment=openb now",
         "speedup": "compressed arrivals are +trace.reader_options.speedup=N of +experiment=openb now"}


def refuse_moved(cfg: DictConfig) -> None:
    """A ConfigError naming a former timed-experiment key in `fgd`, or a missing `fgd` section."""
    if cfg.get("fgd") is None:
        raise ConfigError("fgd", "mode=fgd needs an `fgd:` config section; run e.g. "
                          "`python -m raysim +experiment=fgd_openb`")
    for key, why in MOVED.items():
        if key in cfg.fgd:
            raise ConfigError(f"fgd.{key}", why)


def refuse_unused(cfg: DictConfig, overrides=None) -> None:
    """A ConfigError naming the first setting the inflation experiment does not use (a former
    timed-experiment key in `fgd`, or any setting of a trace replay: raysim.run.unused's table for
    mode=fgd), given in `overrides` (default: Hydra's command-line overrides of this run) or differing
    from the root defaults."""
    refuse_moved(cfg)
    unused.refuse_unused(cfg, overrides)


def run_fgd(cfg: DictConfig, run_dir: Path) -> dict:
    """Run one FGD inflation experiment as configured (`fgd.*`, `seed`); returns its summary row."""
    refuse_unused(cfg)
    f = cfg.fgd
    check_fgd_config(cfg)
    folder = (original_cwd() / str(f.data_dir)).resolve()
    if not (folder / f"{str(f.node_list).removesuffix('.csv')}.csv").is_file():
        raise FileNotFoundError(f"fgd.data_dir: no {f.node_list}.csv in {folder}.\n{DATA_HELP}")
    t0 = time.perf_counter()
    nodes, pods = load_openb(folder, str(f.workload), str(f.node_list))
    load_s = time.perf_counter() - t0
    run = run_inflation(nodes, pods, str(f.policy), int(cfg.seed), float(f.tune),
                        workload=workload_name(str(f.workload)), check=True)
    allo, frag = run.rows()
    allo.to_csv(run_dir / "allo.csv", index=False)
    frag.to_csv(run_dir / "frag_ratio.csv", index=False)
    row = {"workload": run.workload, "sc_policy": run.label, "seed": run.seed, "tune": run.tune,
           "gpus": run.total_gpus, "arrivals": len(run.pod), "failed": run.failed,
           "allo_100": allo.at[0, "100"], "allo_130": allo.at[0, "130"],
           "frag_ratio_100": frag.at[0, "100"], "frag_ratio_130": frag.at[0, "130"],
           "load_s": round(load_s, 3), "wall_s": round(run.wall_s, 3)}
    pd.DataFrame([row]).to_csv(run_dir / "fgd_summary.csv", index=False)
    if f.get("plots", True):
        curve_plot({run.label: (allo, frag)}, run_dir / "plots" / "fgd_curves.png",
                   title=run_description(f"{run.workload}, seed {run.seed}", overrides=run_overrides(run_dir)))
    print(f"{run.label} on {run.workload} (seed {run.seed}, tune {run.tune}): {len(run.pod):,} arrivals, "
          f"{run.failed:,} failed; GPU allocation {row['allo_100']:.2f} % at 100 % arrived, "
          f"{row['allo_130']:.2f} % at 130 %; {run.wall_s:.2f} s")
    return row


def check_fgd_config(cfg: DictConfig) -> None:
    """Every `fgd.*` value and the seed checked before anything is read: one line naming the key."""
    from raysim.placement.scored import SCORERS
    from raysim.run.values import choice, integer, number

    f = cfg.fgd
    integer(cfg, "seed", minimum=0)
    choice(cfg, "fgd.policy", tuple(SCORERS), what="policy of the FGD simulator")
    number(cfg, "fgd.tune", above=0)
    for key in ("workload", "node_list", "data_dir"):
        if not isinstance(f.get(key), str) or not f.get(key).strip():
            raise ConfigError(f"fgd.{key}", "must be a name (see conf/experiment/fgd_openb.yaml)", f.get(key))
    if not isinstance(f.get("plots", True), bool):
        raise ConfigError("fgd.plots", "must be true or false", f.get("plots"))


def summarize_fgd_sweep(sweep_dir: str | Path, title: str = "") -> pd.DataFrame:
    """Combine the runs of an FGD multirun: `analysis_allo_discrete.csv` and
    `analysis_frag_ratio_discrete.csv` (every run's row, the FGD simulator's layout),
    `fgd_sweep.md` (per policy: mean and spread over seeds at 100 % and 130 %) and
    `plots/fgd_curves.png` (mean curve per policy, titled with the workloads and `title`: what was run).
    Returns the per-policy table."""
    sweep_dir = Path(sweep_dir)
    runs = sorted(p.parent for p in sweep_dir.glob("*/allo.csv"))
    if not runs:
        raise FileNotFoundError(f"{sweep_dir}: no run folder with an allo.csv")
    allo = pd.concat([pd.read_csv(r / "allo.csv") for r in runs], ignore_index=True)
    frag = pd.concat([pd.read_csv(r / "frag_ratio.csv") for r in runs], ignore_index=True)
    key = ["workload", "sc_policy", "tune", "seed"]
    allo.sort_values(key).to_csv(sweep_dir / "analysis_allo_discrete.csv", index=False)
    frag.sort_values(key).to_csv(sweep_dir / "analysis_frag_ratio_discrete.csv", index=False)
    table = (allo.groupby(["workload", "sc_policy"])
             .agg(seeds=("seed", "count"), allo_100=("100", "mean"), allo_100_sd=("100", "std"),
                  allo_130=("130", "mean"), allo_130_sd=("130", "std")).reset_index())
    fr = frag.groupby(["workload", "sc_policy"])[["100", "130"]].mean().reset_index()
    table = table.merge(fr.rename(columns={"100": "frag_ratio_100", "130": "frag_ratio_130"}))
    shown = table.assign(**{c: table[c].map("{:.2f}".format) for c in table.columns if table[c].dtype == float})
    (sweep_dir / "fgd_sweep.md").write_text(
        "# FGD inflation sweep\n\nGPU allocation ratio (%) and fragmentation ratio (%) at 100 % and 130 % "
        "arrived workload, mean (and standard deviation) over seeds.\n\n" + markdown_table(shown) + "\n")
    curves = {label: (allo[allo.sc_policy == label], frag[frag.sc_policy == label])
              for label in sorted(allo.sc_policy.unique())}
    workloads = ", ".join(sorted(allo.workload.unique()))
    curve_plot(curves, sweep_dir / "plots" / "fgd_curves.png", title=f"{workloads}: {title}" if title else workloads)
    return table


def curve_plot(curves: dict, path: Path, title: str = "") -> Path:
    """Allocation and fragmentation ratio against arrived workload, one line per label (mean of its
    rows); x: percent of the cluster's GPUs requested so far; `title`: what was run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (ax_a, ax_f) = subplots(1, 2, figsize=(10, 4))
    for label, (allo, frag) in curves.items():
        cols = [c for c in allo.columns if c.isdigit()]
        x = np.array([int(c) for c in cols])
        ax_a.plot(x, allo[cols].mean().to_numpy(dtype=float), label=label, linewidth=1)
        ax_f.plot(x, frag[cols].mean().to_numpy(dtype=float), label=label, linewidth=1)
    ax_a.set_xlabel("arrived GPU workload (% of cluster GPUs)")
    ax_a.set_ylabel("GPU allocation ratio (%)")
    ax_f.set_xlabel("arrived GPU workload (% of cluster GPUs)")
    ax_f.set_ylabel("fragmentation ratio (% of idle GPU capacity)")
    for ax in (ax_a, ax_f):
        ax.grid(alpha=0.3)
    ax_a.legend(fontsize=8)
    set_title(fig, "GPU allocation and fragmentation against arrived workload", title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
