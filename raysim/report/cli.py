"""`raysim report <folder>`: rebuild a sweep's comparison table, plots and report.html (a multirun
folder), or a run's report.html, and its out_jobs.csv (Batsim's job table) where it is absent (a
run folder). A run that failed (its failed.json) is skipped with the reason it gives; a result file
that is missing, damaged or of another kind is one line naming it (raysim.report.run_files), or,
where it is optional (timeseries.parquet, lost_by_cause.csv) and missing, a line on the page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from raysim.errors import UserError, failed_run
from raysim.report.replicas import FILE as REPLICAS_FILE
from raysim.report.sweep import headline, missing_runs_lines, report_sweep

#: The files that make a folder a trace replay's run folder (any of them: the others, missing, are named).
RUN_FILES = ("jobs.parquet", "summary.csv", "trace_report.json")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="raysim report", description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a Hydra multirun folder (trace replays, harvesting included, or FGD inflation "
                                   "runs), or a run folder (one with jobs.parquet, summary.csv or "
                                   "trace_report.json, or an FGD inflation run's)")
    ap.add_argument("--no-plots", action="store_true", help="no PNG plots (tables and report.html only)")
    args = ap.parse_args(argv)
    failed = failed_run(args.folder)
    if failed:
        raise UserError(f"{args.folder}: the run there {failed}; nothing to report")
    if (Path(args.folder) / "fgd_summary.csv").exists():  # one FGD inflation run
        from raysim.report.run_page import write_fgd_page

        print(f"wrote {write_fgd_page(Path(args.folder))}")
        return 0
    if any((Path(args.folder) / name).exists() for name in RUN_FILES):
        return report_run(Path(args.folder))
    try:
        table = report_sweep(args.folder, plots=not args.no_plots)
    except FileNotFoundError as exc:
        warn_missing_runs(args.folder)  # (every run failed: why)
        ap.error(str(exc))
    print(headline(table))
    replicas = Path(args.folder) / REPLICAS_FILE
    print(f"wrote {args.folder}/sweep_summary.csv, sweep_summary.md"
          + (f", {REPLICAS_FILE} (means and 95 % intervals over seeds)" if replicas.exists() else "") + " and report.html")
    warn_missing_runs(args.folder)
    return 0


def warn_missing_runs(folder) -> None:
    """A warning line on stderr for each run folder of a multirun folder that has no results, with why."""
    for line in missing_runs_lines(folder) if Path(folder).is_dir() else []:
        print(f"raysim report: warning: {line}", file=sys.stderr)


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
