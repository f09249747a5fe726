"""Where a run's results go while it runs: Parquet row groups on disk, not tables in memory.

The coordinator hands the sink each window's finished-job records and time-series samples. Records
are written as they come (raw simulator records, in completion order); samples are held back only
until every VC's clock has passed them, then written together with the cluster-wide rows. Files are
numbered segments (`records-0000.parquet`, `series-0000.parquet`, ...): a segment is sealed whenever
the coordinator writes a checkpoint, so a resumed run drops whatever was written after it and goes on.
`raysim.report.results` turns the segments into the run's jobs.parquet and timeseries.parquet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.report.results import series_by_vc, timeseries_table
from raysim.runtime.codec import RESULT_SCHEMA

KINDS = ("records", "series")


def read_records(paths) -> pa.Table:
    """The record segments a ResultSink wrote, as one table."""
    tables = [pq.read_table(p) for p in paths]
    return pa.concat_tables(tables) if tables else RESULT_SCHEMA.empty_table()


@dataclass
class SinkPosition:
    """What a checkpoint must remember of the sink: sealed segments and samples not yet written."""

    segments: int = 0
    held: dict = field(default_factory=dict)  # vc -> {column: array} of samples after the last written time


class ResultSink:
    """Writes records and samples of one run into `folder` as row groups of about `row_group_rows` rows."""

    def __init__(self, folder, vc_order, *, row_group_rows: int = 1 << 17):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.vc_order = list(vc_order)
        self.row_group_rows = int(row_group_rows)
        self.pos = SinkPosition()
        self._pending = {k: [] for k in KINDS}  # tables not written yet
        self._writers: dict[str, pq.ParquetWriter] = {}

    # ------------------------------------------------------------------ during the run
    def add_records(self, table: pa.Table) -> None:
        """Finished-job records of one window (any order)."""
        if table.num_rows:
            self._add("records", table)

    def add_samples(self, tables: list, final_up_to: int) -> None:
        """One window's sample tables of every VC; samples at times <= `final_up_to` are final
        (no VC can end the run earlier) and are written, later ones are held back."""
        for vc, cols in series_by_vc(list(tables), self.vc_order).items():
            held = self.pos.held.get(vc)
            self.pos.held[vc] = cols if held is None else {c: np.concatenate([held[c], v]) for c, v in cols.items()}
        self._write_samples(final_up_to)

    def seal(self) -> SinkPosition:
        """Write everything pending and close the current segment; returns the position to resume from."""
        self._flush()
        for w in self._writers.values():
            w.close()
        self._writers = {}
        self.pos.segments += 1
        return SinkPosition(self.pos.segments, {vc: dict(cols) for vc, cols in self.pos.held.items()})

    def reopen(self, pos: SinkPosition) -> None:
        """Continue from a checkpoint's position: segments written after it are deleted."""
        self.pos = SinkPosition(pos.segments, {vc: dict(cols) for vc, cols in pos.held.items()})
        for kind in KINDS:
            for path in self.folder.glob(f"{kind}-*.parquet"):
                if int(path.stem.split("-")[1]) >= pos.segments:
                    path.unlink()

    def close(self, end: int) -> dict[str, list[Path]]:
        """Write the samples up to the run's last event `end` (later ones are dropped), close the
        files and return {kind: segment paths in order}."""
        self._write_samples(end)
        self.pos.held = {}
        self.seal()
        return {k: sorted(self.folder.glob(f"{k}-*.parquet")) for k in KINDS}

    # ------------------------------------------------------------------ internals
    def _write_samples(self, up_to: int) -> None:
        ready, held = {}, {}
        for vc in self.vc_order:
            cols = self.pos.held.get(vc)
            if cols is None:
                continue
            k = int(np.searchsorted(cols["time"], up_to, side="right"))
            ready[vc] = {c: v[:k] for c, v in cols.items()}
            held[vc] = {c: v[k:] for c, v in cols.items()}
        self.pos.held = held
        if any(len(cols["time"]) for cols in ready.values()):
            self._add("series", timeseries_table(ready))

    def _add(self, kind: str, table: pa.Table) -> None:
        self._pending[kind].append(table)
        if sum(t.num_rows for t in self._pending[kind]) >= self.row_group_rows:
            self._flush(kind)

    def _flush(self, only: str | None = None) -> None:
        """Write pending rows in groups of exactly `row_group_rows` (the rest waits), or all of them
        when sealing: the files' layout then depends on the rows, not on how windows cut them."""
        for kind in KINDS if only is None else (only,):
            parts = self._pending[kind]
            if not parts:
                continue
            table = pa.concat_tables(parts).combine_chunks()
            n = table.num_rows if only is None else table.num_rows - table.num_rows % self.row_group_rows
            self._pending[kind] = [table.slice(n)] if n < table.num_rows else []
            if n == 0:
                continue
            writer = self._writers.get(kind)
            if writer is None:
                path = self.folder / f"{kind}-{self.pos.segments:04d}.parquet"
                writer = self._writers[kind] = pq.ParquetWriter(path, table.schema, compression="zstd")
            writer.write_table(table.slice(0, n), row_group_size=self.row_group_rows)
