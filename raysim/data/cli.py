"""``raysim data list | fetch NAME... | path NAME[/FILE] | verify [NAME...]``."""

from __future__ import annotations

import argparse
import textwrap

from raysim.data import store
from raysim.data.registry import DataError, dataset, datasets, human_size
from raysim.data.resolve import PREFIX, resolve


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="raysim data", description=(
        "Public datasets by name: download into the cache (~/.cache/raysim/data, RAYSIM_DATA moves it; "
        "RAYSIM_DATA_MIRROR replaces the public hosts), verify, and find them. Experiments name them as "
        "data:NAME or data:NAME/FILE (docs/data.md)."))
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every dataset: size, licence, citation, whether it is cached")
    f = sub.add_parser("fetch", help="download datasets into the cache (verified before use)")
    f.add_argument("names", nargs="*", metavar="NAME")
    f.add_argument("--all", action="store_true", help="every dataset of the registry")
    pa = sub.add_parser("path", help="print the cached folder of a dataset (or of NAME/FILE)")
    pa.add_argument("name", metavar="NAME[/FILE]")
    v = sub.add_parser("verify", help="re-hash the cached files (every cached dataset by default)")
    v.add_argument("names", nargs="*", metavar="NAME")
    args = p.parse_args(argv)
    return {"list": _list, "fetch": _fetch, "path": _path, "verify": _verify}[args.command](args)


def _list(args) -> int:
    root = store.cache_root()
    print(f"cache: {root}  (mirror: {__import__('os').environ.get(store.MIRROR_ENV) or 'none, public hosts'})")
    for name, ds in datasets().items():
        print(f"\n{name}  {human_size(ds.size)}  {store.status(ds)}  {ds.pinned}")
        for label, text in (("", ds.title), ("licence: ", ds.licence), ("cite: ", ds.citation)):
            print(textwrap.fill(label + text, width=100, initial_indent="    ", subsequent_indent="      "))
    return 0


def _fetch(args) -> int:
    names = list(datasets()) if args.all else args.names
    if not names:
        raise DataError(f"raysim data fetch: name a dataset (known: {', '.join(datasets())}) or give --all")
    todo = [dataset(n) for n in names]  # every name checked before anything is downloaded
    for ds in todo:
        state = store.status(ds)
        store.fetch(ds)
        verb = "already cached" if state == "cached" else "fetched"
        print(f"{ds.name}: {verb}, verified ({len(ds.files)} file{'s' * (len(ds.files) != 1)}, "
              f"{human_size(ds.size)}) in {store.folder(ds.name)}; licence: {ds.licence}")
    return 0


def _path(args) -> int:
    print(resolve(args.name if args.name.startswith(PREFIX) else PREFIX + args.name))
    return 0


def _verify(args) -> int:
    # every dataset the cache holds or records: one whose files were all deleted is still recorded
    # in its manifest, and fails as missing rather than passing as "not cached"; so does a manifest
    # that is not one (mangled by hand: it fails as such)
    todo = [dataset(n) for n in args.names] if args.names else \
        [ds for ds in datasets().values() if store.status(ds) != "not cached" or store.recorded(ds)]
    if not todo:
        print("no dataset is cached (raysim data fetch NAME)")
        return 0
    bad = 0
    for ds in todo:
        try:
            issues = store.problems(ds, rehash=True)
        except DataError as exc:  # its manifest is not one
            issues = [str(exc)]
        if issues:
            bad += 1
            for line in issues:
                print(f"{ds.name}: {line}")
        else:
            n = len(store.cached_files(ds))
            print(f"{ds.name}: ok ({n} file{'s' * (n != 1)} re-hashed)")
    if bad:
        raise DataError(f"{bad} dataset(s) failed verification: run `raysim data fetch NAME` to download "
                        "them again")
    return 0
