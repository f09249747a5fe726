"""Self-contained HTML pages (report.html of a run or a sweep): the pieces a page is made of and the
file they make. Everything a page needs is inside the file: styles, the charting library (uPlot,
MIT licence, 50 KB, in raysim/report/assets with its licence) and the charts' numbers as JSON, so
a page opens without network access (an air-gapped cluster, an e-mail attachment). Charts are
drawn in the browser: drag across a chart to zoom into a span (double-click to zoom out), and the
legend shows each line's value under the cursor. Why uPlot and not plotly, bokeh or Vega-Lite:
docs/outputs.md#reporthtml."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from importlib import resources

import numpy as np
import pandas as pd

from raysim.tables import cell, units_caption

#: What the page may load: nothing from anywhere (its scripts and styles are inline, images data: URIs)
POLICY = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
#: Significant digits of the numbers a line chart's JSON holds (what a line can show, not the data's precision)
DIGITS = 5
#: Kinds of chart whose values are read one by one (a table's figures): their JSON holds them exact
EXACT_KINDS = ("bars", "points")


def esc(text) -> str:
    """`text` as HTML text."""
    return html.escape(str(text), quote=True)


def number_list(values, exact: bool = False) -> list:
    """Numbers for a chart's JSON: DIGITS significant digits (`exact`: as they are), NaN and infinity
    as null (a gap)."""
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    if exact:
        return [x if ok else None for x, ok in zip(v.tolist(), finite.tolist())]
    magnitude = np.floor(np.log10(np.abs(np.where(finite & (v != 0), v, 1.0))))
    scale = 10.0 ** (DIGITS - 1 - magnitude)
    rounded = np.round(np.where(finite, v, 0.0) * scale) / scale
    return [x if ok else None for x, ok in zip(rounded.tolist(), finite.tolist())]


@dataclass
class Chart:
    """One chart: `data` is [x, y1, y2, ...] with one label per y in `series`; `kind` line, step,
    bars or points (bars and points carry their values exact, lines DIGITS significant digits); an
    axis is {"label": ..., "log": bool, "asinh": bool, "range": [lo, hi], "categories": [names of
    x = 0, 1, ...]}; `text`: per y, what the legend shows for each value (the table's text), where
    the page is not to format the values itself."""

    id: str
    title: str
    x: dict
    y: dict
    series: list[str]
    data: list
    kind: str = "line"
    caption: str = ""
    height: int = 320
    bold: int | None = None  # the series drawn thicker (the cluster among its VCs)
    text: list[list[str]] | None = None

    def spec(self) -> dict:
        exact = self.kind in EXACT_KINDS
        return {"id": self.id, "title": self.title, "x": self.x, "y": self.y, "series": self.series,
                "data": [number_list(d, exact) for d in self.data], "kind": self.kind, "height": self.height,
                "bold": self.bold, "text": self.text}


@dataclass
class Page:
    """A page being built: sections of HTML (in order) and the charts they place."""

    title: str
    subtitle: str = ""
    sections: list[tuple[str, str, str]] = field(default_factory=list)  # (anchor, heading, HTML)
    charts: list[Chart] = field(default_factory=list)

    def section(self, anchor: str, heading: str, body: str) -> None:
        self.sections.append((anchor, heading, body))

    def chart(self, chart: Chart) -> str:
        """The HTML that places `chart` (its caption under it); the chart is drawn from the page's JSON."""
        self.charts.append(chart)
        caption = f"<figcaption>{esc(chart.caption)}</figcaption>" if chart.caption else ""
        return f'<figure class="chart-box"><div id="{chart.id}" class="chart" data-title="{esc(chart.title)}"></div>' \
               f"{caption}</figure>"

    def render(self) -> str:
        """The whole page as one HTML string."""
        nav = " ".join(f'<a href="#{a}">{esc(h)}</a>' for a, h, _ in self.sections)
        body = "\n".join(f'<section id="{a}"><h2>{esc(h)}</h2>\n{b}\n</section>' for a, h, b in self.sections)
        charts = json.dumps([c.spec() for c in self.charts], separators=(",", ":"), allow_nan=False)
        charts = charts.replace("</", "<\\/")  # no "</script>" inside the script element
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(self.title)}</title>"
            f"<style>{asset('uPlot.min.css')}\n{asset('page.css')}</style></head>\n<body>"
            f"<header><h1>{esc(self.title)}</h1><p class=\"sub\">{esc(self.subtitle)}</p><nav>{nav}</nav></header>\n"
            f"{body}\n"
            f"<script id=\"raysim-charts\" type=\"application/json\">{charts}</script>\n"
            f"<script>{asset('uPlot.iife.min.js')}</script>\n<script>{asset('page.js')}</script>\n"
            "</body></html>\n")


def asset(name: str) -> str:
    """A file of raysim/report/assets as text."""
    return resources.files("raysim.report").joinpath("assets", name).read_text(encoding="utf-8")


def table(frame: pd.DataFrame, *, sortable: bool = True, total: str | None = None, links: dict | None = None,
          caption: bool = True) -> str:
    """`frame` as an HTML table: numbers rounded for people (raysim.tables.cell) and right
    aligned, each cell's exact value kept for sorting; a row whose first cell is `total` set apart
    (the cluster); `links`: {column: {value: href}} to link cells; `caption`: the units line under it."""
    links = links or {}
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = []
        for column, v in zip(frame.columns, values):
            number = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            raw = "" if number and pd.isna(v) else (repr(float(v)) if number else v)
            text = esc(cell(v, str(column)))
            href = links.get(column, {}).get(v)
            if href:
                text = f'<a href="{esc(href)}">{text}</a>'
            cells.append(f'<td{" class=n" if number else ""} data-v="{esc(raw)}">{text}</td>')
        first = values[0] if len(values) else None
        rows.append(f"<tr{' class=total' if total is not None and first == total else ''}>{''.join(cells)}</tr>")
    units = units_caption(frame.columns) if caption else ""
    return (f'<div class="scroll"><table{" class=sortable" if sortable else ""}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>" + (f'<p class="caption">{esc(units)}</p>' if units else ""))


def small_multiples(charts: list[str]) -> str:
    """Charts side by side, as many to a row as the page's width allows."""
    return f'<div class="small-multiples">{"".join(charts)}</div>' if charts else ""


def facts(items: list[tuple[str, str]]) -> str:
    """A list of (name, value) pairs (values are HTML already: escape them with `esc`)."""
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def cards(items: list[tuple[str, str]]) -> str:
    """Headline figures: (name, value as text)."""
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>' for k, v in items) + "</div>"
