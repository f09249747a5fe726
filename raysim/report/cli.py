"""`raysim report <multirun folder>`: rebuild a sweep's comparison table and plots."""

from __future__ import annotations

import argparse

from raysim.report.sweep import report_sweep


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="raysim report", description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a Hydra multirun folder (trace replays, harvesting included, or FGD inflation runs)")
    ap.add_argument("--no-plots", action="store_true", help="tables only")
    args = ap.parse_args(argv)
    try:
        table = report_sweep(args.folder, plots=not args.no_plots)
    except FileNotFoundError as exc:
        ap.error(str(exc))
    print((table[table["vc"] == "all"] if "vc" in table.columns else table).to_string(index=False))
    print(f"wrote {args.folder}/sweep_summary.csv and sweep_summary.md")
    return 0
