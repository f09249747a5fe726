"""What determines a run's results, as digests: checkpoints carry them and a resume compares them.

:func:`run_fingerprint` digests, under one key each, the trace's content, the policy and its inputs
(constants, Lucid's pair speeds and profiles), the placer, the simulator's semantic switches, the
seed, the cluster layout and GPU-type catalog, the profiler stage's settings, the network model,
the duration estimates and per-job inputs, and the online estimator's settings. Runtime-only
settings (runtime, window size, actor packing, checkpoint cadence) are not part of it: they never
change results.

Digests are SHA-256 over a canonical encoding (type-tagged, dict keys sorted, arrays by dtype,
shape and bytes, Arrow columns by type and values), so equal inputs give equal digests in any
process and however a table is chunked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def run_fingerprint(trace_table: pa.Table, spec, estimates=None, job_extra=None, estimator=None) -> dict[str, str]:
    """{input name: digest} of everything that determines a run's results."""
    params = dataclasses.asdict(spec.params)
    seed = params.pop("seed")
    parts = {
        "trace": trace_table,
        "policy": {"name": spec.policy, "options": spec.policy_options},
        "placer": {"name": spec.placer, "type_order": spec.type_order},
        "semantics": params,
        "seed": seed,
        "layout": {"layout": spec.layout, "catalog": spec.catalog, "t0": spec.t0},
        "profiler": spec.profiler,
        "network": spec.network,
        "estimates": estimates,
        "job_inputs": job_extra,
        "estimator": _settings(estimator),
        # what a checkpoint's simulator state holds: checkpoints from before job tables had GPU
        # shares, CPU, memory, first GPUs and the least work a stop left (the stall guard's), or
        # before FIFO-family and backfilling queues ranked priority classes (raysim.sim.spot), are
        # refused (their state lacks them)
        "state": {"job table": "requests, first GPU and least remaining work",
                  "queues": "by priority class, backfilling ones too",
                  "resources": spec.resources,
                  "shapes": spec.shapes},
    }
    if spec.quota.mode != "none":  # (absent with quota=none: earlier checkpoints stay resumable)
        # (`state`: VC groups decide their own cohorts and ledgers count loans; checkpoints
        # from before either are refused, their state lacks them. So are those written before the
        # `sharing` group became `quota`: a borrow run's VC states name the ledger's old module.)
        parts["quota"] = {"settings": spec.quota, "pool_homes": spec.pool_homes,
                          "state": "groups, ledger loan counts"}
    if spec.capacity is not None:  # (absent without capacity events: earlier checkpoints stay resumable)
        parts["capacity"] = spec.capacity
    if spec.checkpoint is not None:  # (absent without checkpoints: earlier checkpoints stay resumable)
        parts["checkpoint_restart"] = spec.checkpoint
    if spec.checkpoint_kinds:  # (absent without per-application settings: earlier checkpoints stay resumable)
        parts["checkpoint_kinds"] = spec.checkpoint_kinds
    if spec.attempts is not None:  # (absent without trace.failed=replay: earlier checkpoints stay resumable)
        parts["attempts"] = spec.attempts
    if spec.spot is not None:  # (absent without priority classes: earlier checkpoints stay resumable)
        parts["spot"] = spec.spot
    if spec.spares is not None:  # (absent without spares: earlier checkpoints stay resumable)
        parts["spares"] = spec.spares
    if spec.standbys is not None:  # (absent without standbys: earlier checkpoints stay resumable)
        parts["standbys"] = spec.standbys
    return {name: digest(value) for name, value in parts.items()}


def differences(recorded: dict | None, current: dict) -> list[str]:
    """Names whose digests differ (every name when nothing was recorded)."""
    if not recorded:
        return sorted(current)
    return sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))


def digest(value) -> str:
    h = hashlib.sha256()
    _feed(h, value)
    return h.hexdigest()


def _settings(estimator) -> dict | None:
    """An online estimator's configuration: its class and its scalar attributes (not fitted state)."""
    if estimator is None:
        return None
    scalars = {k: v for k, v in vars(estimator).items()
               if not k.startswith("_") and isinstance(v, (bool, int, float, str, type(None)))}
    return {"class": type(estimator).__qualname__, **scalars}


def _feed(h, value) -> None:
    """Canonical, type-tagged encoding of `value` into the hash `h`."""
    if value is None or isinstance(value, (bool, int, str)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, float):
        h.update(f"float:{'nan' if math.isnan(value) else value.hex()};".encode())
    elif isinstance(value, np.generic):
        _feed(h, value.item())
    elif isinstance(value, dict):
        h.update(f"dict:{len(value)};".encode())
        for key in sorted(value, key=repr):
            _feed(h, key)
            _feed(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}:{len(value)};".encode())
        for item in value:
            _feed(h, item)
    elif isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        h.update(f"ndarray:{array.dtype.str}:{array.shape};".encode())
        h.update(array.tobytes() if array.dtype != object else repr(array.tolist()).encode())
    elif isinstance(value, pa.Table):
        h.update(f"table:{value.num_rows};".encode())
        for name, column in zip(value.column_names, value.columns):
            _feed(h, name)
            _feed_column(h, column)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"{type(value).__qualname__}:".encode())
        _feed(h, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    elif isinstance(value, (set, frozenset)):
        _feed(h, sorted(value, key=repr))
    elif hasattr(value, "fingerprint_fields"):  # an input object that says what determines it
        h.update(f"{type(value).__qualname__}:".encode())
        _feed(h, value.fingerprint_fields())
    else:
        raise TypeError(f"cannot fingerprint a {type(value).__qualname__}")


def _feed_column(h, column: pa.ChunkedArray) -> None:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    h.update(f"column:{array.type}:{len(array)};".encode())
    h.update(np.asarray(array.is_null()).tobytes())
    if pa.types.is_temporal(array.type):
        array = pc.cast(array, pa.int64(), safe=False)
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type) or pa.types.is_boolean(array.type):
        h.update(array.fill_null(False if pa.types.is_boolean(array.type) else 0).to_numpy(zero_copy_only=False).tobytes())
    else:
        h.update("\x1f".join("" if v is None else str(v) for v in array.to_pylist()).encode())
