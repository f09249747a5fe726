"""What jobs ask for besides whole GPUs, as run inputs: GPU shares, CPU, memory and request shapes.

A trace may carry per job ``gpu_milli`` (1000: whole GPUs; less: a share of one GPU), ``cpu_milli``
and ``memory_mib`` (the Alibaba 2023 pods do). When it has any of them, or the layout's pools limit
CPU and memory, or the placer is a scored one (raysim.placement.SCORED), the run's VCs count CPU,
memory and GPU milli per node (RunSpec.resources) and every job carries its request as job columns.
The run also gets its request shapes (raysim.placement.scored.placer.Shapes: the scored placers'
score tables and FGD's target workload, which the time series' fragmentation is measured
against), and each job its shape id.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raysim.placement import SCORED
from raysim.placement.scored.placer import Shapes
from raysim.sim.jobs import REQUEST_INPUTS
from raysim.cluster.resources import Pods
from raysim.trace.schema import REQUEST_COLUMNS


def counts_resources(table: pa.Table, layout: dict, placer: str) -> bool:
    """Whether the run's VCs must count CPU, memory and GPU milli (see the module doc)."""
    return (placer in SCORED or any(c in table.column_names for c in REQUEST_COLUMNS)
            or any(p.limits_resources for pools in layout.values() for p in pools))


def request_inputs(table: pa.Table) -> tuple[dict[str, np.ndarray], object]:
    """Per-job request columns (job input names, with each job's shape id) and the run's shapes."""
    n = table.num_rows
    cols = {job: _int_column(table, trace, REQUEST_INPUTS[job]) for trace, job in REQUEST_COLUMNS.items()}
    gpu = table.column("gpu_num").to_numpy().astype(np.int64)
    cols["gpu_milli"] = np.where(gpu == 0, 0, cols["gpu_milli"])  # a CPU-only job asks no GPU milli

    spec = (np.array(table.column("gpu_constraint").to_pylist(), dtype=object)
            if "gpu_constraint" in table.column_names else np.full(n, None, dtype=object))
    shapes, of_job = Shapes.of(Pods(cols["cpu_milli"], cols["mem_mib"], gpu, cols["gpu_milli"], spec))
    cols["shape"] = of_job
    return cols, shapes


def _int_column(table: pa.Table, name: str, default: int) -> np.ndarray:
    if name not in table.column_names:
        return np.full(table.num_rows, default, dtype=np.int64)
    return table.column(name).cast(pa.int64()).fill_null(default).to_numpy()
