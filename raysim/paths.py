"""Where raysim's own files live, in a source checkout and in an installed wheel."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT = PACKAGE_DIR.parent


def _locate(name: str) -> Path:
    """Top-level folder `name` of a checkout, else the copy shipped inside the package."""
    candidate = _CHECKOUT / name
    if (_CHECKOUT / "pyproject.toml").exists() and candidate.is_dir():
        return candidate
    return PACKAGE_DIR / name


CONF_DIR = _locate("conf")
TRACES_DIR = _locate("traces")


def project_path(relative: str) -> str:
    """Resolve a path shipped with raysim (e.g. ``traces/venus_synth``) to an absolute path."""
    head, _, rest = relative.partition("/")
    base = {"traces": TRACES_DIR, "conf": CONF_DIR}.get(head)
    if base is None:
        raise ValueError(f"raysim_path: unknown project folder {head!r} in {relative!r}")
    return str(base / rest) if rest else str(base)


def original_cwd() -> Path:
    """Hydra's original working directory when Hydra is running, else the current one: what
    relative data paths in a config are relative to."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.utils import get_original_cwd

        if HydraConfig.initialized():
            return Path(get_original_cwd())
    except ImportError:
        pass
    return Path(os.getcwd())
