"""The FGD placement ("inflation") experiment's results: a multirun over policies and seeds combined
(`summarize_fgd_sweep`) and the allocation and fragmentation curves (`curve_plot`). One run is
raysim.run.fgd's (`+experiment=fgd_openb`, mode `fgd`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from raysim.report.plots import set_title, subplots
from raysim.tables import markdown_table


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
