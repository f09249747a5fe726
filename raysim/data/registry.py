"""The registry of public datasets (``registry.yaml`` beside this file): what each dataset is, where
each of its files is published, its size, SHA-256 and whether that hash is the published file's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from raysim.errors import UserError
from raysim.yamlfile import load_yaml

REGISTRY_FILE = Path(__file__).with_name("registry.yaml")
#: Environment variable naming another registry file (tests, private datasets).
REGISTRY_ENV = "RAYSIM_DATA_REGISTRY"
UNPACK = ("tar.gz", "zip")


class DataError(UserError):
    """A dataset that cannot be used: unknown, not cached, refused by its hash, not downloadable."""


@dataclass(frozen=True)
class DataFile:
    path: str                 # inside the dataset's folder
    url: str | None           # None: no public copy (a mirror only)
    size: int | None
    sha256: str | None        # pinned: the published file's; else the copy raysim was tested with
    pinned: bool
    unpack: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    licence: str
    citation: str
    source: str
    reads: str
    files: tuple[DataFile, ...]

    @property
    def size(self) -> int | None:
        """Bytes to download, None when some file's size is unknown."""
        sizes = [f.size for f in self.files]
        return None if any(s is None for s in sizes) else sum(sizes)

    @property
    def pinned(self) -> str:
        """'pinned', 'unpinned' or 'partly pinned'."""
        n = sum(f.pinned for f in self.files)
        return "pinned" if n == len(self.files) else "unpinned" if n == 0 else "partly pinned"

    def file(self, path: str) -> DataFile | None:
        return next((f for f in self.files if f.path == path), None)


def registry_path() -> Path:
    return Path(os.environ.get(REGISTRY_ENV) or REGISTRY_FILE)


def datasets() -> dict[str, Dataset]:
    """Every dataset of the registry, by name (registry order)."""
    return _load(str(registry_path()))


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Dataset]:
    try:
        raw = load_yaml(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"dataset registry {path}: cannot be read ({exc})") from None
    out = {}
    for name, d in (raw or {}).get("datasets", {}).items():
        files = []
        for f in d.get("files") or []:
            unpack = f.get("unpack")
            if unpack is not None and unpack not in UNPACK:
                raise DataError(f"dataset registry {path}: {name}/{f['path']}: unpack must be one of {UNPACK}")
            sha = f.get("sha256")
            files.append(DataFile(path=str(f["path"]), url=f.get("url"), size=f.get("size"),
                                  sha256=str(sha).lower() if sha else None, pinned=bool(f.get("pinned", False)),
                                  unpack=unpack, note=str(f.get("note") or "")))
            if files[-1].pinned and not files[-1].sha256:
                raise DataError(f"dataset registry {path}: {name}/{f['path']}: pinned without a sha256")
        out[str(name)] = Dataset(name=str(name), title=str(d.get("title", "")), licence=str(d.get("licence", "")),
                                 citation=str(d.get("citation", "")), source=str(d.get("source", "")),
                                 reads=str(d.get("reads", "")), files=tuple(files))
    return out


def dataset(name: str) -> Dataset:
    """The dataset called `name`; a one-line DataError listing the known names otherwise."""
    known = datasets()
    if name not in known:
        raise DataError(f"unknown dataset {name!r} (known: {', '.join(known)})")
    return known[name]


def human_size(n: int | None) -> str:
    if n is None:
        return "size unknown"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
