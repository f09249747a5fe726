"""Quota reports as Arrow: what VC groups send the coordinator for the cohorts it decides.

One row per VC (raysim.sim.quota.VCSimulator.quota_report has the fields); the rows of one
window's reports travel as one record batch and become plain dicts again for the lending policy.
"""

from __future__ import annotations

import pyarrow as pa

_INT = pa.int64()
REPORT_SCHEMA = pa.schema([
    ("vc", pa.string()), ("time", _INT),
    ("pools", pa.list_(pa.struct([("pool", _INT), ("gpu_type", pa.string()), ("gpus_per_node", _INT),
                                  ("nodes", _INT), ("idle", _INT)]))),
    ("lent", pa.list_(pa.struct([("pool", _INT), ("vc", pa.string()), ("nodes", _INT)]))),
    ("held", pa.list_(pa.struct([("lender", pa.string()), ("pool", _INT), ("gpu_type", pa.string()),
                                 ("gpus_per_node", _INT), ("nodes", _INT), ("idle", _INT), ("draining", _INT)]))),
    ("returned", pa.list_(pa.struct([("lender", pa.string()), ("pool", _INT), ("gpu_type", pa.string()),
                                     ("gpus_per_node", _INT), ("nodes", _INT)]))),
    ("pending_jobs", _INT), ("pending_gpus", _INT),
    ("pending_by_types", pa.list_(pa.struct([("gpu_types", pa.list_(pa.string())), ("jobs", _INT), ("gpus", _INT)]))),
    ("free_gpus", _INT), ("held_gpus", _INT), ("lent_gpus", _INT), ("draining_gpus", _INT), ("held_idle", _INT),
    ("loan_state", _INT), ("borrowed_gpu_s", _INT), ("lent_gpu_s", _INT),
])


def reports_batch(reports: list[dict]) -> pa.RecordBatch:
    """Complete quota reports (plain dicts) as one record batch."""
    return pa.RecordBatch.from_pylist(reports, schema=REPORT_SCHEMA)


def reports_of(batch: pa.RecordBatch) -> dict[str, dict]:
    """VC -> its report, back from a record batch."""
    return {row["vc"]: row for row in batch.to_pylist()}
