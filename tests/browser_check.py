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
#: Run before the page's own scripts: records the box of every text drawn on a canvas (a chart's tick
#: labels and axis titles), from the canvas's transform and the text's measured extent, and keeps
#: those that reach outside their canvas (text there is cut off)
TEXT_BOXES = """
window.__texts = 0; window.__outside = [];
const fillText = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, x, y) {
  const m = this.measureText(text), t = this.getTransform(), c = this.canvas;
  const corners = [[x - m.actualBoundingBoxLeft, y - m.actualBoundingBoxAscent],
                   [x + m.actualBoundingBoxRight, y - m.actualBoundingBoxAscent],
                   [x - m.actualBoundingBoxLeft, y + m.actualBoundingBoxDescent],
                   [x + m.actualBoundingBoxRight, y + m.actualBoundingBoxDescent]].map(
    ([px, py]) => t.transformPoint(new DOMPoint(px, py)));
  const xs = corners.map(p => p.x), ys = corners.map(p => p.y);
  if (String(text).trim()) {
    window.__texts++;
    if (Math.min(...xs) < -0.5 || Math.min(...ys) < -0.5 || Math.max(...xs) > c.width + 0.5
        || Math.max(...ys) > c.height + 0.5) {
      const chart = c.closest(".chart");
      window.__outside.push(`${chart ? chart.id : "?"}: "${text}" at x ${Math.min(...xs).toFixed(1)}..`
        + `${Math.max(...xs).toFixed(1)}, y ${Math.min(...ys).toFixed(1)}..${Math.max(...ys).toFixed(1)}`
        + ` on a ${c.width} x ${c.height} canvas`);
    }
  }
  return fillText.apply(this, arguments);
};
"""


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
    texts: int  # texts drawn on the charts' canvases (tick labels, axis titles)
    outside: list[str]  # those reaching outside their canvas (cut off), each with its box
    legends: list[list[str]]  # each chart's legend as shown with the cursor away from the charts: its entries
    wide_tables: list[bool]  # for each table that is wider than its box (it scrolls): whether a hint says so


def take_screenshot(page, path: Path) -> None:
    """A full-page PNG of `page` at `path`. Headless Chromium on a loaded machine sometimes answers
    "Unable to capture screenshot" (seen once in a CI run whose page rendered and passed every other
    check): one more try, then the error stands."""
    from playwright.sync_api import Error

    try:
        page.screenshot(path=str(path), full_page=True)
    except Error as exc:
        if "Unable to capture screenshot" not in str(exc):
            raise
        page.screenshot(path=str(path), full_page=True)


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
            page.add_init_script(TEXT_BOXES)
            start = time.perf_counter()
            page.goto(html.resolve().as_uri(), wait_until="load")
            load_s = time.perf_counter() - start
            charts = page.locator(".uplot canvas").count()
            titles = page.locator(".uplot .u-title").all_inner_texts()
            if screenshot is not None:
                take_screenshot(page, screenshot)
            wide_tables = page.evaluate("""Array.from(document.querySelectorAll("div.scroll"))
                .filter(box => box.scrollWidth > box.clientWidth + 1)
                .map(box => !!box.previousElementSibling && box.previousElementSibling.matches(".scroll-hint")
                            && box.previousElementSibling.offsetParent !== null)""")
            return Rendered(requests, page.inner_text("body"), charts, page.get_attribute("body", "data-charts-drawn"),
                            titles, errors, load_s, page.evaluate("window.__texts"), page.evaluate("window.__outside"),
                            page.evaluate("""Array.from(document.querySelectorAll(".uplot .u-legend")).map(legend =>
                                Array.from(legend.querySelectorAll(".u-series"))
                                     .filter(row => row.offsetParent !== null).map(row => row.innerText.trim()))"""),
                            wide_tables)
        finally:
            browser.close()


@dataclass
class DrawnBars:
    """What a bar chart drew, read back from its uPlot and its canvas."""

    id: str
    values: list  # the values it holds, one per bar
    y_range: tuple[float, float]  # its value axis as drawn
    tops: list  # the value at each bar's drawn end, read from the canvas pixels (None: no bar drawn)
    pixel: float  # the value one canvas pixel of the axis stands for
    legend: list[str]  # the legend's text with the cursor over each bar
    ticks: list[str]  # the value axis's tick labels


#: Reads a chart's bars from its canvas: for each bar, the first pixel from the top of the plot in
#: the bar's middle column that is coloured (not white or grey), as a value of the y axis
READ_BARS = """(id) => {
  const u = document.getElementById(id).uplot;
  const {left, top, width, height} = u.bbox;
  const y = u.scales.y;
  const pixel = (y.max - y.min) / height;
  const tops = u.data[0].map((_, i) => {
    const column = u.ctx.getImageData(Math.round(u.valToPos(i, "x", true)), top, 1, height).data;
    for (let row = 0; row < height; row++) {
      const c = column.slice(4 * row, 4 * row + 3);
      if (Math.max(...c) - Math.min(...c) > 40) return y.max - (row + 0.5) * pixel;
    }
    return null;
  });
  return {values: Array.from(u.data[1]), y_range: [y.min, y.max], tops: tops, pixel: pixel,
          ticks: u.axes[1]._values.map(String)};
}"""


def read_bars(html: Path, width: int = 1400) -> list[DrawnBars]:
    """Every bar chart of `html` (its charts of kind bars, one series), read back as drawn in
    Chromium at `width` px: the values, the axis, each bar's end on the canvas, the legend while
    the cursor is over each bar, the tick labels."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(html.resolve().as_uri(), wait_until="load")
            specs = page.evaluate("JSON.parse(document.getElementById('raysim-charts').textContent)")
            out = []
            for spec in (s for s in specs if s["kind"] == "bars"):
                page.evaluate("(id) => document.getElementById(id).scrollIntoView({block: 'center'})", spec["id"])
                drawn = page.evaluate(READ_BARS, spec["id"])
                legend = []
                for i in range(len(drawn["values"])):
                    box = page.evaluate("""([id, i]) => { const u = document.getElementById(id).uplot;
                        const r = u.over.getBoundingClientRect();
                        return [r.left + u.valToPos(i, "x"), r.top + r.height / 2]; }""", [spec["id"], i])
                    page.mouse.move(*box)
                    page.wait_for_function("([id, i]) => document.getElementById(id).uplot.cursor.idx === i",
                                           arg=[spec["id"], i])
                    legend.append(page.evaluate("""(id) => document.getElementById(id).uplot.root
                        .querySelectorAll('.u-legend .u-series')[1].querySelector('.u-value').textContent""",
                                                spec["id"]))
                out.append(DrawnBars(spec["id"], drawn["values"], tuple(drawn["y_range"]), drawn["tops"],
                                     drawn["pixel"], legend, drawn["ticks"]))
            return out
        finally:
            browser.close()
