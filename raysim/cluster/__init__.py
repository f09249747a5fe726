"""Cluster data: heterogeneous VC layouts (node pools), per-GPU-type job throughputs, and the
resource model of nodes (raysim.cluster.resources: CPU, memory and per-GPU milli, who holds what).

A pure data package (no simulator, runtime, policy or placement imports): those build on it.
"""

from raysim.cluster.layout import (
    DEFAULT_GPU_TYPE,
    Layout,
    Pool,
    gpu_types,
    layout_from_config,
    layout_from_vc_nodes,
    read_layout_csv,
    restrict,
    total_gpus,
)
from raysim.cluster.throughput import (
    UNKNOWN_RATIO,
    ThroughputTable,
    read_gavel_throughputs,
    read_throughput_csv,
)

__all__ = [
    "DEFAULT_GPU_TYPE", "Layout", "Pool", "gpu_types", "layout_from_config", "layout_from_vc_nodes",
    "read_layout_csv", "restrict", "total_gpus",
    "UNKNOWN_RATIO", "ThroughputTable", "read_gavel_throughputs", "read_throughput_csv",
]
