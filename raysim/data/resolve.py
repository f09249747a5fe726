"""``data:NAME`` and ``data:NAME/FILE``: an input named by dataset, resolved to the cached copy.

`resolve` is the one function that turns such a value into a path; raysim.run.data_names applies it to
every string of a run's config before the run reads anything (so every input that names a file or
folder accepts the form, in every mode), and `records` says what was resolved, for the run's
trace_report.json.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from raysim.data import store
from raysim.data.registry import DataError, dataset, human_size

PREFIX = "data:"

#: What `resolve` handed out in this process since the last `reset_records()`.
_RECORDS: list[dict] = []


def is_data_ref(value) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def parse(value: str) -> tuple[str, str]:
    """'data:NAME/SUB/FILE' -> ('NAME', 'SUB/FILE'); 'data:NAME' -> ('NAME', '')."""
    rest = value[len(PREFIX):].strip().strip("/")
    name, _, sub = rest.partition("/")
    return name, sub


def resolve(value, key: str | None = None, auto_fetch: bool = False, say=print):
    """The local path for `value` when it is a ``data:`` reference (any other value is returned as it
    is): the dataset's cached folder, or a file or folder inside it. The dataset must be cached and
    intact (with `auto_fetch`, it is fetched first); otherwise a one-line DataError says what to run."""
    if not is_data_ref(value):
        return value
    name, sub = parse(value)
    where = f"{key}: " if key else ""
    if not name:
        raise DataError(f"{where}{value!r}: name a dataset, e.g. data:venus (`raysim data list`)")
    try:
        ds = dataset(name)
    except DataError as exc:
        raise DataError(f"{where}{exc}") from None
    state = store.status(ds)
    if state != "cached":
        if not auto_fetch:
            what = f"in the cache is {state}" if state.startswith("damaged") else "is not cached"
            raise DataError(f"{where}dataset {name!r} {what}: run `raysim data fetch {name}` "
                            f"({human_size(ds.size)}, licence: {ds.licence}), or set data.auto_fetch=true")
        store.fetch(ds, say=say)
    bad = store.problems(ds)
    if bad:
        raise DataError(f"{where}dataset {name!r} in the cache is damaged ({bad[0]}): run `raysim data fetch {name}` "
                        "to download it again")
    root = store.folder(name)
    files = store.cached_files(ds)
    if sub:
        target = root / PurePosixPath(sub)
        inside = [p for p in files if p == sub or p.startswith(sub.rstrip("/") + "/")]
        if not inside and not target.exists():
            listed = ", ".join(sorted(files)[:8]) + (", ..." if len(files) > 8 else "")
            raise DataError(f"{where}dataset {name!r} has no file {sub!r} (it has: {listed})")
    else:
        target, inside = root, sorted(files)
    _RECORDS.append({"key": key, "value": value, "dataset": name, "path": str(target),
                     "files": [{"file": p, "sha256": files[p]["sha256"],
                                "pinned": bool(files[p].get("pinned", False)) and not files[p].get("trusted_on_first_use")}
                               for p in sorted(inside) if p in files]})
    return str(target)


def records() -> list[dict]:
    return list(_RECORDS)


def reset_records() -> None:
    _RECORDS.clear()
