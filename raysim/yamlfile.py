"""YAML read with PyYAML's safe loader, in C where PyYAML was built with libyaml: Hydra's run files
(.hydra/config.yaml, overrides.yaml), which a sweep's report reads for every run, and the dataset
registry read several times faster than with the pure-Python loader."""

from __future__ import annotations

from pathlib import Path

import yaml

#: PyYAML's safe loader in C where available, else in Python (the same documents either way).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str):
    """A YAML document (safe: plain data only)."""
    return yaml.load(text, Loader=SAFE_LOADER)


def read_yaml(path: Path, empty):
    """The YAML file at `path`, or `empty` where it is absent or holds nothing."""
    path = Path(path)
    if not path.exists():
        return empty
    return load_yaml(path.read_text()) or empty
