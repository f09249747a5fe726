"""``raysim trace ...``: generate, inspect and convert traces.

- ``raysim trace synth --preset saturn --days 183 --seed 0 --out DIR``: generate a trace from a
  preset (``venus``, ``venus_6m``, ``earth``, ``saturn``, ``uranus``, or ``helios`` for all four).
- ``raysim trace spot --node-list node_info_df.csv --nodes 200 --jobs 3000 --days 7 --seed 0 --out DIR``:
  generate an HP/spot workload in the spot GPU trace's two-file format (raysim.trace.spot_synth).
- ``raysim trace stats TRACE [--compare OTHER]``: print a trace's statistics, side by side with a
  second trace. TRACE is a file, a folder, or ``synth:PRESET[:DAYS[:SEED]]``.
- ``raysim trace convert SRC --format helios|philly|pai|alibaba2023 --out DIR``: read a public trace
  and write it in raysim's schema: jobs.parquet + vc_config.csv, or + layout.csv when the reader
  derives typed node pools (alibaba2023, which also writes the whole pod list as pods.parquet).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.trace.alibaba2023_jobs import write_pods
from raysim.errors import TraceError
from raysim.trace.load import (LAYOUT_FILE, READERS, Trace, auto_format, load_trace, reader_options_from_text,
                               resolve_source)
from raysim.trace.stats import format_stats, trace_stats
from raysim.trace.spot_synth import main as spot_main
from raysim.trace.synth import load_synth, main as synth_main, write_trace

SYNTH_PREFIX = "synth:"


def _reader_option(text: str) -> tuple[str, str]:
    """KEY=VALUE, the value still text (its reader's declaration says how to read it:
    raysim.trace.load.reader_options_from_text)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _reading_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default="auto", choices=["auto", *sorted(READERS)],
                        help="trace format (auto: by file name)")
    parser.add_argument("--vc-config", default=None, help="VC layout CSV (default: vc_config.csv beside "
                        "the trace, else what the reader derives)")
    parser.add_argument("--on-error", default="raise", choices=["raise", "skip"],
                        help="skip: drop bad rows and count them instead of stopping at the first")
    parser.add_argument("-o", "--option", action="append", type=_reader_option, default=[],
                        metavar="KEY=VALUE", help="reader option, e.g. vc_size=last (helios), "
                        "duration=span (philly), vc_groups='{\"T4\": \"inference\"}' (pai); raysim --help "
                        "lists each reader's")


def _load(path: str, args, *, fmt: str, vc_config, cache: bool) -> Trace:
    if path.startswith(SYNTH_PREFIX):
        name, days, seed = (path[len(SYNTH_PREFIX):].split(":") + ["7", "0"])[:3]
        return load_synth({"preset": name, "days": float(days), "seed": int(seed)}, cache_dir=args.cache_dir)
    texts = dict(args.option)
    if fmt == "auto":
        fmt = auto_format(resolve_source(path, fmt, texts.get("workload")))
    return load_trace(path, fmt=fmt, vc_config=vc_config, on_error=args.on_error, cache=cache,
                      cache_dir=args.cache_dir, reader_options=reader_options_from_text(fmt, texts))


def _label(path: str) -> str:
    if path.startswith(SYNTH_PREFIX):
        return path
    p = Path(path)
    return p.name if p.is_dir() else f"{p.parent.name}/{p.name}"


def _report(trace: Trace) -> None:
    for line in trace.report.lines():
        print(f"{_label(trace.source)}: {line}")


def _stats(args) -> int:
    columns = {}
    for path, fmt, vc_config in ((args.trace, args.format, args.vc_config), (args.compare, "auto", None)):
        if path is None:
            continue
        trace = _load(path, args, fmt=fmt, vc_config=vc_config, cache=not args.no_cache)
        _report(trace)
        label = _label(path) if _label(path) not in columns else path
        columns[label] = trace_stats(trace.table, trace.vc_gpus(), gpus_per_node=1)
    print(format_stats(columns, top_vcs=args.top_vcs))
    return 0


def _convert(args) -> int:
    trace = _load(args.src, args, fmt=args.format, vc_config=args.vc_config, cache=False)
    _report(trace)
    folder = write_trace(args.out, trace.table, trace.vc_nodes, trace.layout)
    files = ["jobs.parquet", "vc_config.csv" if trace.layout is None else LAYOUT_FILE]
    if (auto_format(Path(trace.source)) if args.format == "auto" else args.format) == "alibaba2023":
        write_pods(trace.source, folder, args.on_error)
        files.append("pods.parquet")
    gpus = sum(trace.vc_gpus().values())
    shape = (f"at {DEFAULT_GPUS_PER_NODE} per node" if trace.layout is None
             else f"in {sum(len(pools) for pools in trace.layout.values())} node pools")
    from raysim.tables import plural

    print(f"wrote {plural(trace.table.num_rows, 'job')}, {plural(len(trace.vc_nodes), 'VC')} "
          f"({plural(gpus, 'GPU')} {shape}) to {folder}: {', '.join(files)} "
          f"(skipped {plural(trace.report.total, 'row')})")
    return 0


def main(argv: list[str]) -> int:
    """Entry point of ``raysim trace``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="raysim trace", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("synth", add_help=False, help="generate a trace from a preset (see --help)")
    sub.add_parser("spot", add_help=False, help="generate an HP/spot workload in the spot GPU trace's format "
                   "(see --help)")
    stats = sub.add_parser("stats", help="statistics of a trace, optionally next to another")
    stats.add_argument("trace", help="file, folder or synth:PRESET[:DAYS[:SEED]]")
    stats.add_argument("--compare", default=None, help="second trace (format auto), shown side by side")
    stats.add_argument("--top-vcs", type=int, default=12, help="VCs listed per trace (largest first)")
    stats.add_argument("--no-cache", action="store_true", help="do not read or write the Parquet cache")
    stats.add_argument("--cache-dir", default=None, help="where caches go (default: beside the trace, or "
                       "~/.cache/raysim; generated traces: ~/.cache/raysim/synth)")
    _reading_arguments(stats)
    convert = sub.add_parser("convert", help="convert a public trace to raysim's schema")
    convert.add_argument("src", help="trace file or folder")
    convert.add_argument("--out", required=True, help="output folder (jobs.parquet + vc_config.csv or "
                         "layout.csv; alibaba2023: + pods.parquet)")
    convert.set_defaults(cache_dir=None)
    _reading_arguments(convert)

    if argv and argv[0] == "synth":
        return synth_main(argv[1:], prog="raysim trace synth")
    if argv and argv[0] == "spot":
        return spot_main(argv[1:], prog="raysim trace spot")
    args = parser.parse_args(argv)
    try:
        return _stats(args) if args.command == "stats" else _convert(args)
    except (TraceError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
