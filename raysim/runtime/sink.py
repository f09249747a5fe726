"""Where a run's results go while it runs: Parquet row groups on disk, not tables in memory.

The coordinator hands the sink each window's finished-job records and time-series change rows
(raysim.sim.recorder). Records are written as they come (raw simulator records, in completion
order); change rows are held back only until every VC's clock has passed them (at most one row a
VC), then written in time order (at each time, the VCs in layout order). Files are numbered
segments (`records-0000.parquet`, `series-0000.parquet`, ...): a segment is sealed whenever the
coordinator writes a checkpoint, so a resumed run drops whatever was written after it and goes on.
At the end the series segments become the run's time series file (raysim.report.timeseries: the
60-s grid, or change-points over a long span) and `raysim.report.results` the jobs file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from raysim.report.timeseries_write import write_timeseries
from raysim.runtime.codec import RESULT_SCHEMA, SAMPLE_INTERVAL

KINDS = ("records", "series")


def read_records(paths) -> pa.Table:
    """The record segments a ResultSink wrote, as one table."""
    tables = [pq.read_table(p) for p in paths]
    return pa.concat_tables(tables) if tables else RESULT_SCHEMA.empty_table()


@dataclass
class SinkPosition:
    """What a checkpoint must remember of the sink: sealed segments and change rows not yet written."""

    segments: int = 0
    held: pa.Table | None = None  # change rows after the last written time (vc: index in the layout)
    interval: int | None = None  # seconds between the samples (from the change rows' tables)


class ResultSink:
    """Writes records and samples of one run into `folder` as row groups of about `row_group_rows` rows."""

    def __init__(self, folder, vc_order, *, row_group_rows: int = 1 << 17):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.vc_order = list(vc_order)
        self.row_group_rows = int(row_group_rows)
        self.pos = SinkPosition()
        self._pending = {k: [] for k in KINDS}  # tables not written yet
        self._pending_rows = {k: 0 for k in KINDS}  # their row counts (kept, not summed per window)
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._incoming: list[pa.Table] = []  # change-row tables not merged into `pos.held` yet
        self._incoming_rows = 0
        self._final = None  # the latest `final_up_to`

    #: change rows gathered before they are merged, sorted and written: windows that each bring
    #: a few rows (short windows) cost little, and the files do not depend on how windows cut them
    MERGE_ROWS = 8192

    # ------------------------------------------------------------------ during the run
    def add_records(self, table: pa.Table) -> None:
        """Finished-job records of one window (any order)."""
        if table.num_rows:
            self._add("records", table)

    def add_samples(self, tables: list, final_up_to: int) -> None:
        """One window's change-row tables of every VC; rows at times <= `final_up_to` are final
        (no VC can end the run earlier) and are written, later ones are held back."""
        for table in tables:
            meta = table.schema.metadata or {}
            if SAMPLE_INTERVAL in meta:
                self.pos.interval = int(meta[SAMPLE_INTERVAL])
            if table.num_rows:
                self._incoming.append(table.replace_schema_metadata())
                self._incoming_rows += table.num_rows
        self._final = final_up_to
        if self._incoming_rows >= self.MERGE_ROWS:
            self._merge_samples()

    def _merge_samples(self) -> None:
        """Merge the gathered change rows into the held ones (sorted by time, then VC in layout
        order) and write those up to the latest `final_up_to`."""
        parts = [] if self.pos.held is None else [self.pos.held]
        if self._incoming:
            table = pa.concat_tables(self._incoming)
            vc = pc.index_in(table.column("vc"), value_set=pa.array(self.vc_order)).cast(pa.int32())
            parts.append(table.set_column(0, "vc", vc))
            self._incoming, self._incoming_rows = [], 0
        if parts:
            rows = pa.concat_tables(parts)
            self.pos.held = rows.take(pc.sort_indices(rows, [("time", "ascending"), ("vc", "ascending")]))
        if self._final is not None:
            self._write_samples(self._final)

    def seal(self) -> SinkPosition:
        """Write everything pending and close the current segment; returns the position to resume from."""
        self._merge_samples()
        self._flush()
        for w in self._writers.values():
            w.close()
        self._writers = {}
        self.pos.segments += 1
        return SinkPosition(self.pos.segments, self.pos.held, self.pos.interval)

    def reopen(self, pos: SinkPosition) -> None:
        """Continue from a checkpoint's position: segments written after it are deleted."""
        self.pos = SinkPosition(pos.segments, pos.held, pos.interval)
        self._incoming, self._incoming_rows, self._final = [], 0, None
        for kind in KINDS:
            for path in self.folder.glob(f"{kind}-*.parquet"):
                if int(path.stem.split("-")[1]) >= pos.segments:
                    path.unlink()

    def close(self, end: int) -> dict[str, list[Path]]:
        """Write the change rows up to the run's last event `end` (later ones are dropped), close
        the files and turn the series segments into the run's time series, whose grid ends at
        `end`. Returns {"records": segment paths in order, "series": [the time series file], or
        [] when the run sampled nothing}."""
        self._merge_samples()
        self._write_samples(end)
        self.pos.held = None
        self.seal()
        segments = sorted(self.folder.glob("series-*.parquet"))
        series = self.folder / "timeseries.parquet"
        parts = (batch for p in segments for batch in pq.ParquetFile(p).iter_batches(batch_size=self.row_group_rows))
        written = write_timeseries(parts, series, self.vc_order, interval=self.pos.interval, end=end,
                                   row_group_rows=self.row_group_rows)
        for p in segments:
            p.unlink()
        return {"records": sorted(self.folder.glob("records-*.parquet")), "series": [series] if written else []}

    # ------------------------------------------------------------------ internals
    def _write_samples(self, up_to: int) -> None:
        held = self.pos.held
        if held is None:
            return
        k = int(np.searchsorted(held.column("time").to_numpy(), up_to, side="right"))
        if k:
            self._add("series", held.slice(0, k))
        self.pos.held = held.slice(k)

    def _add(self, kind: str, table: pa.Table) -> None:
        self._pending[kind].append(table)
        self._pending_rows[kind] += table.num_rows
        if self._pending_rows[kind] >= self.row_group_rows:
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
            self._pending_rows[kind] = table.num_rows - n
            if n == 0:
                continue
            writer = self._writers.get(kind)
            if writer is None:
                path = self.folder / f"{kind}-{self.pos.segments:04d}.parquet"
                writer = self._writers[kind] = pq.ParquetWriter(path, table.schema, compression="zstd")
            writer.write_table(table.slice(0, n), row_group_size=self.row_group_rows)
