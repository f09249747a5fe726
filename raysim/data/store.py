"""The dataset cache: where datasets live, downloading them (pooch), and checking them.

Layout: ``<root>/<dataset>/<file path>``, root = ``$RAYSIM_DATA`` or ``~/.cache/raysim/data``, plus one
manifest per dataset (``<root>/<dataset>/.raysim-manifest.json``) recording each file's SHA-256,
size, modification time, source and whether the hash is pinned or was trusted on first use. A cache
folder has the layout a mirror needs, so a filled cache can serve as ``RAYSIM_DATA_MIRROR``.

Downloads go through pooch: into a temporary file beside the target, checked against the pinned
hash, then renamed into place; an interrupted or refused download leaves nothing behind, and a file
is recorded in the manifest only once it is in place.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path, PurePosixPath

from raysim.data.registry import DataError, DataFile, Dataset, human_size

CACHE_ENV = "RAYSIM_DATA"
MIRROR_ENV = "RAYSIM_DATA_MIRROR"
MANIFEST = ".raysim-manifest.json"


def cache_root() -> Path:
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser().absolute()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser().absolute() / "raysim" / "data"


def folder(name: str) -> Path:
    return cache_root() / name


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------- manifest

def read_manifest(name: str, strict: bool = False) -> dict:
    """Dataset `name`'s manifest ({"files": {}} when there is none). One that is not a manifest
    (see `check_manifest`) is a DataError naming it when `strict` (verifying), else it counts as
    none: every file is not cached and is fetched again."""
    p = folder(name) / MANIFEST
    try:
        manifest = json.loads(p.read_text(encoding="utf-8"), object_pairs_hook=_unique)
        check_manifest(manifest)
        return manifest
    except FileNotFoundError:
        return {"files": {}}
    except (OSError, ValueError, RecursionError) as exc:
        if strict:
            why = f"not JSON ({exc})" if isinstance(exc, json.JSONDecodeError) else \
                "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise DataError(f"{p}: not a raysim data manifest: {why} (`raysim data fetch {name}` writes it "
                            "again)") from None
        return {"files": {}}


def _unique(pairs: list) -> dict:
    """A JSON object's pairs as a dict; a key given twice is a ValueError (JSON keeps the last)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set = set()
        raise ValueError(f"{next(k for k, _ in pairs if k in seen or seen.add(k))!r} is given twice in one object")
    return out


#: A manifest entry's keys and their types (`sha256`, `size`, `mtime_ns` required).
ENTRY = {"sha256": str, "size": int, "mtime_ns": int, "pinned": bool, "source": str, "fetched": str,
         "trusted_on_first_use": bool, "unpacked_from": str}
_SHA256 = re.compile(r"[0-9a-f]{64}")


def check_manifest(manifest) -> None:
    """ValueError saying where `manifest` is not what write_manifest writes: {"files": {path:
    entry}, "unpacked": {archive: [member paths]}} (unpacked optional), each path inside the
    dataset's folder, each entry ENTRY's keys of their types, a sha256 of 64 hex digits."""
    if not isinstance(manifest, dict) or "files" not in manifest or set(manifest) - {"files", "unpacked"}:
        raise ValueError("expected an object of files (and unpacked)")
    for key in manifest:
        if not isinstance(manifest[key], dict):
            raise ValueError(f"{key}: expected an object")
    for path, entry in manifest["files"].items():
        _inside(path, f"files[{path!r}]")
        if not isinstance(entry, dict):
            raise ValueError(f"files[{path!r}]: expected an object of {', '.join(ENTRY)}")
        for field in ("sha256", "size", "mtime_ns", *entry):
            kind = ENTRY.get(field)
            if kind is None:
                raise ValueError(f"files[{path!r}]: unknown key {field!r}")
            value = entry.get(field)
            if value is None or not isinstance(value, kind) or kind is int and (isinstance(value, bool) or value < 0):
                raise ValueError(f"files[{path!r}].{field}: expected {'a whole number >= 0' if kind is int else kind.__name__}"
                                 f", not {value!r}")
        if not _SHA256.fullmatch(entry["sha256"]):
            raise ValueError(f"files[{path!r}].sha256: expected 64 hex digits, not {entry['sha256']!r}")
    for archive, members in manifest.get("unpacked", {}).items():
        _inside(archive, f"unpacked[{archive!r}]")
        if not isinstance(members, list):
            raise ValueError(f"unpacked[{archive!r}]: expected a list of paths")
        for member in members:
            _inside(member, f"unpacked[{archive!r}]")


def _inside(path, where: str) -> None:
    p = PurePosixPath(path) if isinstance(path, str) else None
    if p is None or not path or p.is_absolute() or ".." in p.parts or "\\" in path:
        raise ValueError(f"{where}: not a path inside the dataset's folder")


def write_manifest(name: str, manifest: dict) -> None:
    """Atomic: a temporary file beside it, renamed into place."""
    d = folder(name)
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".manifest-", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
    os.replace(tmp, d / MANIFEST)


def _record(path: Path, sha: str, **extra) -> dict:
    st = path.stat()
    return {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns, **extra}


def _stat_matches(path: Path, entry: dict) -> bool:
    st = path.stat()
    return st.st_size == entry.get("size") and st.st_mtime_ns == entry.get("mtime_ns")


# ---------------------------------------------------------------------------------------------- state

def status(ds: Dataset) -> str:
    """'cached' (every file in place and recorded), 'damaged (...)' (a file the cache recorded is
    gone), 'partly cached' or 'not cached' (no check of the bytes: see `problems`)."""
    files = read_manifest(ds.name).get("files", {})
    have = [f.path in files and (folder(ds.name) / f.path).is_file() for f in ds.files]
    gone = sum(f.path in files and not ok for f, ok in zip(ds.files, have))
    if gone:
        return f"damaged ({gone} recorded file{'s' * (gone != 1)} missing: raysim data fetch {ds.name})"
    return "cached" if all(have) else "partly cached" if any(have) else "not cached"


def problems(ds: Dataset, rehash: bool = False) -> list[str]:
    """What is wrong with the cached copy of `ds`, one line per file (empty: usable)."""
    return [f"{path}: {why}" for path, why in _problems(ds, rehash).items()]


def _problems(ds: Dataset, rehash: bool = False) -> dict[str, str]:
    """{file: what is wrong with it}. A file whose size and modification time are those recorded is
    trusted without reading it unless `rehash`; any other is hashed and compared with the recorded
    hash (and, for a pinned file, with the registry's)."""
    manifest = read_manifest(ds.name, strict=True)
    files = manifest["files"]
    out, touched = {}, False
    wanted = {f.path: f for f in ds.files}
    for path in [*wanted, *(p for p in files if p not in wanted)]:
        entry = files.get(path)
        target = folder(ds.name) / path
        if entry is None:
            out[path] = "not cached"
            continue
        if not target.is_file():
            out[path] = "missing from the cache"
            continue
        spec = wanted.get(path)
        if spec is not None and spec.pinned and entry.get("sha256") != spec.sha256:
            out[path] = (f"the cached copy (sha256 {entry.get('sha256', '?')[:12]}...) is not the pinned file "
                         f"(sha256 {spec.sha256[:12]}...)")
            continue
        if not rehash and _stat_matches(target, entry):
            continue
        actual = sha256_of(target)
        if actual != entry.get("sha256"):
            out[path] = (f"sha256 {actual[:12]}... does not match the recorded {entry.get('sha256', '?')[:12]}... "
                         "(changed since it was fetched)")
        else:
            files[path] = {**entry, **_record(target, actual)}
            touched = True
    if touched:
        try:
            write_manifest(ds.name, manifest)
        except OSError:
            pass  # a read-only cache: the next use hashes again
    return out


def recorded(ds: Dataset) -> bool:
    """Whether the cache holds a manifest of `ds` that records a file, or one that is not a manifest."""
    try:
        return bool(read_manifest(ds.name, strict=True)["files"])
    except DataError:
        return True


def cached_files(ds: Dataset) -> dict[str, dict]:
    """Manifest entries of `ds` (registry files and files unpacked from its archives)."""
    return dict(read_manifest(ds.name).get("files", {}))


# ---------------------------------------------------------------------------------------------- fetching

def source_of(ds: Dataset, f: DataFile) -> str:
    """Where `f` is downloaded from: the mirror (RAYSIM_DATA_MIRROR: a folder or http(s) base URL,
    laid out as <mirror>/<dataset>/<path>) when set, else its published URL."""
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        if mirror.startswith(("http://", "https://")):
            return f"{mirror.rstrip('/')}/{ds.name}/{f.path}"
        base = Path(mirror.removeprefix("file://")).expanduser().absolute()
        return str(base / ds.name / PurePosixPath(f.path))
    if not f.url:
        raise DataError(f"dataset {ds.name!r}: {f.path} has no public download in the form raysim reads ({ds.source}); "
                        f"set {MIRROR_ENV} to a folder or server that holds {ds.name}/{f.path} (docs/data.md)")
    return f.url


def fetch(ds: Dataset, say=print) -> list[str]:
    """Download every file of `ds` that is not cached (or whose cached copy is damaged), verify it and
    unpack archives. Returns the notices said (first-use hashes of unpinned files, warnings)."""
    notices: list[str] = []
    files = read_manifest(ds.name).get("files", {})
    try:
        wrong = _problems(ds)
    except DataError:  # its manifest is not one: every file is fetched again, and a new one written
        wrong = {f.path: "" for f in ds.files}
    broken = set()
    for path in wrong:
        broken.add(files.get(path, {}).get("unpacked_from", path))
    for f in ds.files:
        if f.path not in broken:
            continue
        _fetch_file(ds, f, say, notices)
    left = problems(ds)
    if left:
        raise DataError(f"dataset {ds.name!r} is still not usable after fetching: {left[0]}")
    return notices


def _fetch_file(ds: Dataset, f: DataFile, say, notices: list[str]) -> None:
    import pooch

    target = folder(ds.name) / PurePosixPath(f.path)
    src = source_of(ds, f)
    manifest = read_manifest(ds.name)
    manifest["files"].pop(f.path, None)
    for member in manifest.get("unpacked", {}).pop(f.path, []):
        manifest["files"].pop(member, None)
    write_manifest(ds.name, manifest)  # the entry goes first: a crash below leaves it "not cached"
    if target.exists():
        target.unlink()
    bar = Progress(f"{ds.name}/{f.path}", f.size)
    remote = src.startswith(("http://", "https://"))
    if remote:
        downloader = pooch.HTTPDownloader(progressbar=bar, timeout=60)
    else:
        if not Path(src).is_file():
            raise DataError(f"dataset {ds.name!r}: {f.path} is not in the mirror ({src} not found)")
        downloader = CopyFrom(bar)
    known = f"sha256:{f.sha256}" if f.pinned else None
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        pooch.retrieve(src, known_hash=known, fname=target.name, path=target.parent, downloader=downloader)
    except ValueError as exc:
        bar.close()
        if "hash" in str(exc).lower():
            got = _hash_in(str(exc))
            raise DataError(f"dataset {ds.name!r}: {f.path} from {src} has sha256 {got}, not the pinned "
                            f"{f.sha256}: refused, nothing cached") from None
        raise DataError(f"dataset {ds.name!r}: {f.path} from {src}: {str(exc).splitlines()[0]}") from None
    except OSError as exc:
        bar.close()
        raise DataError(f"dataset {ds.name!r}: cannot download {f.path} from {src}: {exc}") from None
    except Exception as exc:  # requests' errors (connection refused, cut off, HTTP 404, ...)
        bar.close()
        if type(exc).__module__.split(".")[0] not in ("requests", "urllib3"):
            raise
        raise DataError(f"dataset {ds.name!r}: cannot download {f.path} from {src}: "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    finally:
        logger.setLevel(level)
    bar.close()
    sha = sha256_of(target)
    entry = _record(target, sha, pinned=f.pinned, source=src, fetched=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    if not f.pinned:
        entry["trusted_on_first_use"] = True
        same = " (the copy raysim was tested with)" if sha == f.sha256 else ""
        note = (f"{ds.name}: {f.path} is not pinned: recorded sha256 {sha} on first download, trusted on first "
                f"use{same}; later uses are checked against it")
        if f.sha256 and sha != f.sha256:
            note += (f". WARNING: this differs from the copy raysim was tested with (sha256 {f.sha256}); "
                     "results may differ from the documented figures")
        say(note)
        notices.append(note)
    manifest = read_manifest(ds.name)
    manifest["files"][f.path] = entry
    if f.unpack:
        try:
            members = _unpack(target, f.unpack, folder(ds.name))
        except BaseException:
            target.unlink(missing_ok=True)  # not recorded, so not cached: leave nothing of it either
            raise
        for m, path in members.items():
            manifest["files"][m] = _record(path, sha256_of(path), unpacked_from=f.path)
        manifest.setdefault("unpacked", {})[f.path] = sorted(members)
    write_manifest(ds.name, manifest)


def _hash_in(message: str) -> str:
    import re

    found = re.findall(r"\b[0-9a-f]{64}\b", message)
    return found[0] if found else "?"


def _unpack(archive: Path, kind: str, dest: Path) -> dict[str, Path]:
    """Extract `archive` into `dest` (via a temporary folder, each member renamed into place; members
    whose path would leave `dest` are refused). Returns {relative member path: its path}."""
    tmp = Path(tempfile.mkdtemp(dir=dest, prefix=".unpack-"))
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    _safe(info.filename, archive)
                z.extractall(tmp)
        else:
            with tarfile.open(archive, "r:gz") as t:
                members = [m for m in t.getmembers() if m.isfile() or m.isdir()]
                for m in members:
                    _safe(m.name, archive)
                t.extractall(tmp, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        out = {}
        for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
            rel = path.relative_to(tmp).as_posix()
            final = dest / rel
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, final)
            out[rel] = final
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _safe(name: str, archive: Path) -> None:
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts:
        raise DataError(f"{archive}: member {name!r} would be written outside the dataset's folder: refused")


class CopyFrom:
    """A pooch downloader that copies a file from a mirror folder (`url` is its path)."""

    def __init__(self, progress=None):
        self.progress = progress

    def __call__(self, url, output_file, pooch):  # noqa: ARG002 (pooch's downloader signature)
        size = os.path.getsize(url)
        if self.progress is not None:
            self.progress.total = size
        with open(url, "rb") as src, open(output_file, "wb") as dst:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                dst.write(chunk)
                if self.progress is not None:
                    self.progress.update(len(chunk))


class Progress:
    """A progress bar for pooch (tqdm's interface: total, update, reset, close) on stderr, drawn only
    on a terminal (at most ten times a second)."""

    def __init__(self, label: str, total: int | None = None, stream=None):
        self.label, self.total, self.n = label, total, 0
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0
        self._drawn = False

    def update(self, k: int) -> None:
        self.n += k
        now = time.monotonic()
        if self.live and (now - self._last > 0.1 or (self.total and self.n >= self.total)):
            self._last = now
            total = f"/{human_size(self.total)}" if self.total else ""
            pct = f" {100 * self.n / self.total:5.1f} %" if self.total else ""
            self.stream.write(f"\r{self.label}: {human_size(self.n)}{total}{pct}   ")
            self.stream.flush()
            self._drawn = True

    def reset(self) -> None:
        self.n = 0

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
