"""`raysim report <folder>`: rebuild a sweep's comparison table and plots (a multirun folder), or a
run's out_jobs.csv, Batsim's job table, where it is absent (a run folder)."""

from __future__ import annotations

import argparse
from pathlib import Path

from raysim.report.sweep import headline, report_sweep


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="raysim report", description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a Hydra multirun folder (trace replays, harvesting included, or FGD inflation "
                                   "runs), or a run folder (one with jobs.parquet)")
    ap.add_argument("--no-plots", action="store_true", help="tables only")
    args = ap.parse_args(argv)
    if (Path(args.folder) / "jobs.parquet").exists():
        return report_run(Path(args.folder))
    try:
        table = report_sweep(args.folder, plots=not args.no_plots)
    except FileNotFoundError as exc:
        ap.error(str(exc))
    print(headline(table))
    print(f"wrote {args.folder}/sweep_summary.csv and sweep_summary.md")
    return 0


def report_run(run_dir: Path) -> int:
    """A run folder: write its out_jobs.csv where it is absent (a run with report.out_jobs=false, or
    from before raysim wrote it)."""
    from raysim.report.batsim import FILE, write_out_jobs

    if (run_dir / FILE).exists():
        print(f"{run_dir / FILE} is there already (delete it to rebuild it)")
        return 0
    print(f"wrote {write_out_jobs(run_dir)}")
    return 0
