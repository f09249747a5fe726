"""Quota reports as Arrow: what VC groups send the coordinator for the cohorts it decides.

One row per VC (raysim.quota.ledger.QuotaLoans.quota_report has the fields); the rows of one
window's reports travel as one record batch and become plain dicts again for the lending policy
(`loans`, a dict keyed by (lender, borrower, pool), travels as a list of rows). The fields of named
loans (`idle_ids`, `held_nodes`, a returned row's `origins`) are null without them.
"""

from __future__ import annotations

import pyarrow as pa

_INT = pa.int64()
REPORT_SCHEMA = pa.schema([
    ("vc", pa.string()), ("time", _INT),
    ("pools", pa.list_(pa.struct([("pool", _INT), ("gpu_type", pa.string()), ("gpus_per_node", _INT),
                                  ("nodes", _INT), ("idle", _INT)]))),
    ("lent", pa.list_(pa.struct([("pool", _INT), ("gpu_type", pa.string()), ("gpus_per_node", _INT),
                                 ("vc", pa.string()), ("nodes", _INT)]))),
    ("loans", pa.list_(pa.struct([("lender", pa.string()), ("borrower", pa.string()), ("pool", _INT),
                                  ("nodes", _INT)]))),
    ("held", pa.list_(pa.struct([("lender", pa.string()), ("pool", _INT), ("gpu_type", pa.string()),
                                 ("gpus_per_node", _INT), ("nodes", _INT), ("idle", _INT), ("draining", _INT)]))),
    ("returned", pa.list_(pa.struct([("lender", pa.string()), ("pool", _INT), ("gpu_type", pa.string()),
                                     ("gpus_per_node", _INT), ("nodes", _INT), ("origins", pa.list_(_INT))]))),
    ("idle_ids", pa.list_(pa.list_(_INT))),
    ("held_nodes", pa.list_(pa.struct([("lender", pa.string()), ("pool", _INT), ("node", _INT), ("idle", pa.bool_()),
                                       ("used", _INT)]))),
    ("pending_jobs", _INT), ("pending_gpus", _INT),
    ("pending_by_types", pa.list_(pa.struct([("gpu_types", pa.list_(pa.string())), ("jobs", _INT), ("gpus", _INT)]))),
    ("free_gpus", _INT), ("held_gpus", _INT), ("lent_gpus", _INT), ("draining_gpus", _INT), ("held_idle", _INT),
    ("idle_own", _INT),
    ("loan_state", _INT), ("borrowed_gpu_s", _INT), ("lent_gpu_s", _INT),
])


def reports_batch(reports: list[dict]) -> pa.RecordBatch:
    """Complete quota reports (plain dicts) as one record batch."""
    rows = [{**r, "loans": [{"lender": lender, "borrower": borrower, "pool": pool, "nodes": n}
                            for (lender, borrower, pool), n in r["loans"].items()]} for r in reports]
    return pa.RecordBatch.from_pylist(rows, schema=REPORT_SCHEMA)


def reports_of(batch: pa.RecordBatch) -> dict[str, dict]:
    """VC -> its report, back from a record batch."""
    out = {}
    for row in batch.to_pylist():
        row["loans"] = {(x["lender"], x["borrower"], x["pool"]): x["nodes"] for x in row["loans"]}
        out[row["vc"]] = row
    return out
