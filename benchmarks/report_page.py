"""report.html: its size, the time to write it, the time headless Chromium takes to open it, and what
writing it adds to a run as a user times it.

    python benchmarks/report_page.py page <run or multirun folder> [--screenshot out.png]
    python benchmarks/report_page.py overhead [--repeats 3] -- <raysim overrides...>

`page` rebuilds the folder's report.html (median of three builds, in this process, imports
excluded), prints its size and opens it in Debian's chromium through Playwright (median of three
loads, each in a fresh browser page, from navigation to the load event, which comes after the
page's script has drawn every chart). `overhead` runs `python -m raysim <overrides> runtime=local`
as processes, alternately with report.html=true and false, and prints the median process wall
time of each and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def build(folder: Path) -> Path:
    """Rebuild the folder's report.html as `raysim report` does."""
    if (folder / "jobs.parquet").exists():
        from raysim.report.run_page import write_run_page

        return write_run_page(folder)
    from raysim.report.sweep import report_sweep

    report_sweep(folder, plots=False)
    return folder / "report.html"


def open_times(page: Path, repeats: int, screenshot: Path | None) -> list[float]:
    """Seconds from navigation to the load event in headless Chromium, per load."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        for i in range(repeats):
            tab = browser.new_page(viewport={"width": 1200, "height": 900})
            start = time.perf_counter()
            tab.goto(page.resolve().as_uri(), wait_until="load")
            times.append(time.perf_counter() - start)
            drawn = tab.get_attribute("body", "data-charts-drawn")
            if screenshot is not None and i == 0:
                tab.screenshot(path=str(screenshot), full_page=True)
            tab.close()
        browser.close()
    print(f"charts drawn: {drawn}")
    return times


def page_command(args) -> None:
    folder = Path(args.folder)
    builds = []
    for _ in range(3):
        start = time.perf_counter()
        page = build(folder)
        builds.append(time.perf_counter() - start)
    print(f"{page}: {page.stat().st_size / 1e6:.2f} MB")
    print(f"write (median of 3, in-process): {statistics.median(builds):.2f} s  {[round(b, 2) for b in builds]}")
    loads = open_times(page, 3, Path(args.screenshot) if args.screenshot else None)
    print(f"open in headless Chromium (median of 3): {statistics.median(loads):.2f} s  {[round(t, 2) for t in loads]}")


def overhead_command(args) -> None:
    walls: dict[str, list[float]] = {"true": [], "false": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for html in ("false", "true"):
                command = [sys.executable, "-m", "raysim", *args.overrides, "runtime=local", f"report.html={html}",
                           f"hydra.run.dir={tmp}/{html}{i}"]
                start = time.perf_counter()
                subprocess.run(command, cwd=REPO, check=True, capture_output=True)
                walls[html].append(time.perf_counter() - start)
    off, on = statistics.median(walls["false"]), statistics.median(walls["true"])
    print(f"report.html=false: {off:.2f} s  {[round(w, 2) for w in walls['false']]}")
    print(f"report.html=true:  {on:.2f} s  {[round(w, 2) for w in walls['true']]}")
    print(f"the page adds {100 * (on - off) / off:+.1f} % to the run's process wall time (median)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    page = sub.add_parser("page", help="size, write time and open time of a folder's report.html")
    page.add_argument("folder")
    page.add_argument("--screenshot", help="a full-page PNG of the first load")
    over = sub.add_parser("overhead", help="a run's process wall time with and without the page")
    over.add_argument("--repeats", type=int, default=3)
    over.add_argument("overrides", nargs="+", help="the run's overrides, after --")
    args = ap.parse_args()
    page_command(args) if args.command == "page" else overhead_command(args)


if __name__ == "__main__":
    main()
