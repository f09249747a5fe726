"""`raysim report <folder>`: rebuild a sweep's comparison table, plots and report.html (a multirun
folder), or a run's report.html, and its out_jobs.csv (Batsim's job table) where it is absent (a
run folder)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from raysim.report.sweep import headline, missing_runs_line, report_sweep


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="raysim report", description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a Hydra multirun folder (trace replays, harvesting included, or FGD inflation "
                                   "runs), or a run folder (one with jobs.parquet, or an FGD inflation run's)")
    ap.add_argument("--no-plots", action="store_true", help="no PNG plots (tables and report.html only)")
    args = ap.parse_args(argv)
    if (Path(args.folder) / "jobs.parquet").exists():
        return report_run(Path(args.folder))
    if (Path(args.folder) / "fgd_summary.csv").exists():  # one FGD inflation run
        from raysim.report.run_page import write_fgd_page

        print(f"wrote {write_fgd_page(Path(args.folder))}")
        return 0
    try:
        table = report_sweep(args.folder, plots=not args.no_plots)
    except FileNotFoundError as exc:
        ap.error(str(exc))
    print(headline(table))
    print(f"wrote {args.folder}/sweep_summary.csv, sweep_summary.md and report.html")
    missing = missing_runs_line(args.folder)
    if missing:
        print(f"raysim report: warning: {missing}", file=sys.stderr)
    return 0


def report_run(run_dir: Path) -> int:
    """A run folder: rebuild its report.html, and write its out_jobs.csv where it is absent (a run
    with report.out_jobs=false, or from before raysim wrote it)."""
    from raysim.report.batsim import FILE, write_out_jobs
    from raysim.report.run_page import write_run_page

    if (run_dir / FILE).exists():
        print(f"{run_dir / FILE} is there already (delete it to rebuild it)")
    else:
        print(f"wrote {write_out_jobs(run_dir)}")
    print(f"wrote {write_run_page(run_dir)}")
    return 0
