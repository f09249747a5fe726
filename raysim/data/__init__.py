"""Public datasets by name: a registry (registry.yaml), a checksummed cache filled by pooch, and
``data:NAME[/FILE]`` references resolved to the cached files (docs/data.md).

    raysim data list | fetch NAME... | path NAME[/FILE] | verify [NAME...]
    python -m raysim +experiment=venus_real          # trace.path=data:venus
"""

from raysim.data.registry import DataError, Dataset, DataFile, dataset, datasets
from raysim.data.resolve import is_data_ref, resolve
from raysim.data.store import cache_root, fetch, folder, problems, status

__all__ = ["DataError", "Dataset", "DataFile", "dataset", "datasets", "is_data_ref", "resolve",
           "cache_root", "fetch", "folder", "problems", "status"]
