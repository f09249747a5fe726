"""Open an HTML file in headless Chromium (Debian's `chromium`, driven by Playwright) as a person
would: what the page requested, what it drew, its text and a screenshot. Tests that use it skip
with a reason where Chromium or Playwright is absent (.ci/run installs both)."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

#: Flags that keep Chromium's own background traffic (updates, sign-in) out of a closed network
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    """The Chromium executable, or a skip naming what is missing."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on this machine (Debian: apt-get install chromium; .ci/run installs it)")
    pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency: pip install -e '.[dev]'")
    return path


@dataclass
class Rendered:
    requests: list[str]  # every URL the page asked for, itself first
    text: str  # the page's visible text
    charts: int  # charts drawn (uPlot's elements, each with its canvas)
    drawn: str | None  # what the page's script reports it drew (body's data-charts-drawn)
    titles: list[str]  # the drawn charts' titles
    errors: list[str]  # script errors and console errors
    load_s: float  # seconds from navigation to the load event


def render(html: Path, screenshot: Path | None = None, width: int = 1200) -> Rendered:
    """Open `html` (a file) and read back what a person sees; `screenshot`: a full-page PNG there."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            requests, errors = [], []
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            start = time.perf_counter()
            page.goto(html.resolve().as_uri(), wait_until="load")
            load_s = time.perf_counter() - start
            charts = page.locator(".uplot canvas").count()
            titles = page.locator(".uplot .u-title").all_inner_texts()
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
            return Rendered(requests, page.inner_text("body"), charts, page.get_attribute("body", "data-charts-drawn"),
                            titles, errors, load_s)
        finally:
            browser.close()
