"""One application's measured profile on one GPU kind, read and queried as Sia's simulator does.

A profile folder holds, per application, the files of Sia's artifact (``sia-simulator/traces/<app>``):

- ``placements-<kind>.csv`` (``placement,local_bsz,step_time,sync_time``): step and gradient-sync
  time measured per placement and per-GPU batch size. A placement is written as its GPUs per node,
  one digit a node (``11`` = two nodes of one GPU each);
- ``scalability-<kind>.csv`` (``num_nodes,num_replicas,local_bsz,step_time,sync_time``): more
  measurements by node and GPU count, used where no placement row matches;
- ``validation-<batch size>.csv`` (``progress,iteration,metric,grad_sqr,grad_var``, one row per
  epoch): training progress and gradient statistics at each validated batch size.

A kind without its own placements or scalability file uses the plain ``placements.csv`` /
``scalability.csv``. Step times (:meth:`AppProfile.step_time`) are queried very often and memoised.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd
from scipy.interpolate import LinearNDInterpolator, interp1d
from scipy.spatial import QhullError

from raysim.errors import UserError, one_line

log = logging.getLogger("raysim")

#: Node count at which Sia stops distinguishing placements it interpolates for.
MAX_INTERPOLATED_NODES = 16
#: Largest per-GPU batch size Sia imposes over the profile's own, by (application, GPU kind).
MAX_LOCAL_BSZ_OVERRIDES = {("deepspeech2", "rtx"): 57}

_PLACEMENT_COLUMNS = ("placement", "local_bsz", "step_time", "sync_time")
_SCALABILITY_COLUMNS = ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
_VALIDATION_COLUMNS = ("progress", "iteration", "grad_sqr", "grad_var")
_POINT_COLUMNS = ["num_nodes", "num_replicas", "local_bsz"]
_TIME_COLUMNS = ["step_time", "sync_time"]
_PLACEMENT_DIGITS = re.compile(r"[1-9]+")
_VALIDATION_NAME = re.compile(r"validation-(\d+)\.csv")
_FLAT = object()  # marks profile points that span no volume (no interpolation across placements)
#: A column check: (what a value must be, the test over the column's values).
_Check = tuple[str, Callable[[np.ndarray], np.ndarray]]
_NUMBER: _Check = ("a number", np.isfinite)
_POSITIVE: _Check = ("a positive number", lambda v: v > 0)
_NON_NEGATIVE: _Check = ("a number >= 0", lambda v: v >= 0)
_POSITIVE_INTEGER: _Check = ("a positive integer", lambda v: (v > 0) & (v == np.round(v)))


def normal_placement(placement) -> tuple[int, ...]:
    """`placement` (GPUs per node) without empty nodes, rotated to its lexicographically smallest
    rotation: the form the profiles are keyed by."""
    nodes = tuple(int(n) for n in placement if n)
    if not nodes:
        raise ValueError(f"placement {tuple(placement)} has no GPUs")
    return min(nodes[i:] + nodes[:i] for i in range(len(nodes)))


class AppProfile:
    """The measured step times and training curves of one application on one GPU kind.

    Attributes: `app`, `kind`; `batch_sizes` (the validated batch sizes, ascending),
    `init_batch_size` and `max_batch_size` (the smallest and largest of them); `min_local_bsz`,
    `max_local_bsz` (range of per-GPU batch sizes profiled); `max_epochs`; `restart_s` (seconds a
    checkpoint-restore takes)."""

    def __init__(self, app: str, kind: str, placements: pd.DataFrame, scalability: pd.DataFrame,
                 validation: dict[int, pd.DataFrame], *, max_epochs: int | None, restart_s: float):
        """`placements` has the placement file's columns plus num_nodes and num_replicas; the
        placement column holds tuples of GPUs per node. `validation` maps batch size -> table."""
        self.app, self.kind, self.restart_s = app, kind, float(restart_s)
        self.batch_sizes = tuple(sorted(validation))
        self.init_batch_size, self.max_batch_size = self.batch_sizes[0], self.batch_sizes[-1]
        self.min_local_bsz = int(placements.local_bsz.min())
        self.max_local_bsz = MAX_LOCAL_BSZ_OVERRIDES.get((app, kind), int(placements.local_bsz.max()))
        self.max_epochs = max_epochs or min(len(table) for table in validation.values())
        self._placements, self._scalability = placements, scalability
        rows_of: dict[tuple[int, ...], list[int]] = {}
        for row, placement in enumerate(placements.placement.tolist()):
            rows_of.setdefault(placement, []).append(row)
        self._by_placement = {placement: placements.iloc[rows] for placement, rows in rows_of.items()}
        self._validation = {bsz: {col: validation[bsz][col].to_numpy(float) for col in _VALIDATION_COLUMNS}
                            for bsz in self.batch_sizes}
        epochs = min(len(table) for table in validation.values())
        #: the most nodes and GPUs any profiled configuration spans (what lookups can cover)
        self.max_nodes = int(max(placements.num_nodes.max(), scalability.num_nodes.max() if len(scalability) else 0))
        self.max_replicas = int(max(placements.num_replicas.max(),
                                    scalability.num_replicas.max() if len(scalability) else 0))
        largest = placements.groupby("num_replicas").local_bsz.max()
        self._largest_at = {int(r): int(b) for r, b in largest.items()}
        one = placements[placements.num_replicas == 1]
        self._one_gpu = None if one.empty else float(one.local_bsz.max() / one.step_time.max())
        self._progress = np.minimum.reduce([v["progress"][:epochs] for v in self._validation.values()])
        self._reset_caches()

    def _reset_caches(self) -> None:
        self._step_times: dict = {}
        self._max_local: dict = {}
        self._interpolators: dict = {}
        self._nd_interpolator: LinearNDInterpolator | object | None = None  # _FLAT: cannot be built

    def __getstate__(self) -> dict:  # pickled without caches (they rebuild on use)
        state = self.__dict__.copy()
        state.update(_step_times={}, _max_local={}, _interpolators={}, _nd_interpolator=None)
        return state

    def fingerprint_fields(self) -> dict:
        """What determines this profile (raysim.runtime.fingerprint: checkpoints refuse to resume
        with other profiles): its constants and every measured value."""
        return {"app": self.app, "kind": self.kind, "restart_s": self.restart_s, "max_epochs": self.max_epochs,
                "max_local_bsz": self.max_local_bsz,
                "placements": repr(self._placements.to_numpy().tolist()),
                "scalability": self._scalability.to_numpy(dtype=float),
                "validation": {b: v for b, v in self._validation.items()}}

    def __repr__(self) -> str:
        return f"AppProfile({self.app!r}, {self.kind!r})"

    # -- step times ------------------------------------------------------------------------------
    def step_time(self, placement: tuple[int, ...], local_bsz: float) -> tuple[float, float] | None:
        """(step time, sync time) in seconds of one step on `placement` with `local_bsz` samples per
        GPU (Sia's get_throughput). A profiled placement is interpolated linearly in the batch size;
        any other by node count, GPU count and batch size over all profile rows. None where the
        profile does not reach (a batch size outside the placement's range, a point outside the
        measured points' hull)."""
        key = (tuple(placement), local_bsz)
        if key not in self._step_times:
            self._step_times[key] = self._interpolate(normal_placement(placement), local_bsz)
        return self._step_times[key]

    def _interpolate(self, placement: tuple[int, ...], local_bsz: float) -> tuple[float, float] | None:
        if placement in self._by_placement:
            if placement not in self._interpolators:
                rows = self._by_placement[placement]
                self._interpolators[placement] = interp1d(rows.local_bsz.to_numpy(float),
                                                          rows[_TIME_COLUMNS].to_numpy(float), axis=0)
            try:
                step, sync = self._interpolators[placement](local_bsz)
            except ValueError:  # outside the measured batch sizes
                return None
        else:
            interpolator = self._nd()
            if interpolator is None:
                return None
            nodes = min(len(placement), MAX_INTERPOLATED_NODES)
            step, sync = interpolator([nodes, sum(placement), local_bsz])[0]
        if np.isnan(step) or np.isnan(sync):
            return None
        return float(step), float(sync)

    def _nd(self) -> LinearNDInterpolator | None:
        """Interpolator over (nodes, GPUs, batch size): mean placement rows per point, then the
        scalability rows. None when those points span no volume (e.g. all on one node)."""
        if self._nd_interpolator is None:
            means = self._placements.groupby(_POINT_COLUMNS)[_TIME_COLUMNS].mean().reset_index()
            points = pd.concat([means[_POINT_COLUMNS + _TIME_COLUMNS],
                                self._scalability[_POINT_COLUMNS + _TIME_COLUMNS]], ignore_index=True)
            try:
                self._nd_interpolator = LinearNDInterpolator(points[_POINT_COLUMNS].to_numpy(float),
                                                             points[_TIME_COLUMNS].to_numpy(float))
            except QhullError:
                self._nd_interpolator = _FLAT
        return None if self._nd_interpolator is _FLAT else self._nd_interpolator

    def max_local_bsz_for(self, placement: tuple[int, ...]) -> int:
        """Largest per-GPU batch size profiled for `placement` (Sia's get_max_local_bsz): that of
        its own rows if profiled, else the largest of the scalability rows with at least as many
        nodes and GPUs. ValueError when no row covers it."""
        key = tuple(placement)
        if key not in self._max_local:
            self._max_local[key] = self._largest_local(normal_placement(placement))
        return self._max_local[key]

    def _largest_local(self, placement: tuple[int, ...]) -> int:
        if placement in self._by_placement:
            return int(self._by_placement[placement].local_bsz.max())
        table = self._scalability
        covering = table[(table.num_nodes >= len(placement)) & (table.num_replicas >= sum(placement))]
        if covering.empty:
            raise UserError(f"policy.profiles: no profile row covers placement {placement} "
                            f"({self.app}/placements-{self.kind}.csv, scalability-{self.kind}.csv)")
        return int(covering.local_bsz.max())

    def max_local_bsz_at_replicas(self, replicas: int) -> int | None:
        """Largest per-GPU batch size profiled on any placement of `replicas` GPUs (the memory cap
        Sia's update_local_bsz applies), or None when no placement of that many GPUs is profiled."""
        return self._largest_at.get(replicas)

    def one_gpu_throughput(self) -> float:
        """Samples per second of one GPU: the largest single-GPU batch size over the largest
        single-GPU step time (Sia's per-kind throughput, which projects goodput across kinds)."""
        if self._one_gpu is None:
            raise UserError(f"policy.profiles: {self.app}/placements-{self.kind}.csv has no single-GPU row")
        return self._one_gpu

    # -- training curves -------------------------------------------------------------------------
    def _bracket(self, batch_size: float) -> tuple[int, int]:
        """The validated batch sizes just below and just above `batch_size` (equal when validated)."""
        if not self.init_batch_size <= batch_size <= self.max_batch_size:
            raise UserError(f"policy.profiles: {self.app}: batch size {batch_size} outside its validation-<batch>.csv "
                            f"files' {self.batch_sizes}")
        lower = max(b for b in self.batch_sizes if b <= batch_size)
        upper = min(b for b in self.batch_sizes if b >= batch_size)
        return lower, upper

    def _between(self, column: str, batch_size: float, epoch: int) -> float:
        """`column` at `epoch`, linearly interpolated in the batch size between validated ones."""
        lower, upper = self._bracket(batch_size)
        low = self._validation[lower][column][epoch]
        if lower == upper:
            return float(low)
        high = self._validation[upper][column][epoch]
        return float(((batch_size - lower) * high + (upper - batch_size) * low) / (upper - lower))

    def grad_stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) during `epoch` (0-based) at `batch_size` (Sia's get_grad_stats)."""
        return self._between("grad_sqr", batch_size, epoch), self._between("grad_var", batch_size, epoch)

    def progress_at(self, epoch: int) -> float:
        """Progress (in samples, statistically scaled) at which `epoch` epochs are done: the least
        over the validated batch sizes (Sia's get_progress)."""
        return 0.0 if epoch == 0 else float(self._progress[epoch - 1])

    def completion_epoch(self, batch_size: float) -> int:
        """Last epoch a job trains (0-based): with no target metric, the last of `max_epochs`
        whatever the batch size (Sia's get_completion_epoch)."""
        return self.max_epochs - 1


# -- reading the files ---------------------------------------------------------------------------
def load_profile(folder: Path, app: str, kind: str, *, max_epochs: int | None, restart_s: float) -> AppProfile:
    """The profile of `app` on GPU kind `kind` from `folder`/`app`/ (see the module doc).
    `max_epochs` None: the epochs of the shortest validation file. Bad or missing files raise
    :class:`UserError` naming the file (and the row and column of a bad value)."""
    app_folder = Path(folder) / app
    placements_file = _kind_file(app_folder, "placements", kind)
    placements = _read(placements_file, _PLACEMENT_COLUMNS, {
        "local_bsz": _POSITIVE_INTEGER, "step_time": _POSITIVE, "sync_time": _NON_NEGATIVE})
    placements["placement"] = _placements(placements, placements_file)
    placements["num_nodes"] = placements.placement.map(len)
    placements["num_replicas"] = placements.placement.map(sum)
    scalability = _read(_kind_file(app_folder, "scalability", kind), _SCALABILITY_COLUMNS, {
        "num_nodes": _POSITIVE_INTEGER, "num_replicas": _POSITIVE_INTEGER, "local_bsz": _POSITIVE_INTEGER,
        "step_time": _POSITIVE, "sync_time": _NON_NEGATIVE})
    missing = missing_published_files(app_folder, app)
    if missing:
        raise UserError(f"{app_folder}: no {missing[0]}" + (f" (nor {', '.join(missing[1:])})" if missing[1:] else "")
                        + f": Sia's published {app} profile has it, and without it the training curves would change "
                        "(restore it, or use policy.profiles=data:sia_profiles)")
    validation = {}
    for path in sorted(app_folder.glob("validation-*.csv")):
        name = _VALIDATION_NAME.fullmatch(path.name)
        if name is None:
            raise UserError(f"{path}: a validation file is named validation-<batch size>.csv")
        validation[int(name.group(1))] = _read(path, _VALIDATION_COLUMNS, {
            "progress": _NON_NEGATIVE, "iteration": _NON_NEGATIVE, "grad_sqr": _NUMBER, "grad_var": _NUMBER})
    if not validation:
        raise UserError(f"{app_folder}: no validation-<batch size>.csv file")
    profile = AppProfile(app, kind, placements, scalability, validation, max_epochs=max_epochs, restart_s=restart_s)
    if profile.max_batch_size < profile.min_local_bsz:
        raise UserError(f"{app_folder}: largest validated batch size {profile.max_batch_size} is below the "
                        f"smallest profiled per-GPU batch size {profile.min_local_bsz}")
    return profile


def _kind_file(app_folder: Path, stem: str, kind: str) -> Path:
    """`<stem>-<kind>.csv`, else the kind-less `<stem>.csv` in a folder without per-kind files (a
    folder with files of other kinds lacks this kind's: a UserError naming the folder and the file,
    not the kind-less file's other measurements in its place)."""
    own = app_folder / f"{stem}-{kind}.csv"
    plain = app_folder / f"{stem}.csv"
    if own.is_file() or not plain.is_file():
        return own
    others = sorted(p.name[len(stem) + 1:-4] for p in app_folder.glob(f"{stem}-*.csv"))
    if others:
        raise UserError(f"{app_folder}: no {own.name} (GPU kind {kind!r}); the folder profiles the kinds "
                        f"{', '.join(others)} (the kind-less {plain.name} is read only by a folder without per-kind files)")
    log.info("policy.profiles: %s has no per-kind %s files: GPU kind %r reads %s", app_folder, stem, kind, plain)
    return plain


def missing_published_files(app_folder: Path, app: str) -> list[str]:
    """The validation files of Sia's published profile of `app` (the registry's sia_profiles) that
    `app_folder` lacks, where its validation files are some of those: a copy with a file missing,
    whose training curves would silently be interpolated over the gap. [] for a profile of its own
    (a validation file Sia's has not) or an application Sia's profiles do not have."""
    from raysim.data.registry import DataError, dataset

    try:
        published = {f.path.split("/", 1)[1] for f in dataset("sia_profiles").files if f.path.startswith(app + "/")}
    except DataError:  # a registry without Sia's profiles
        return []
    wanted = {name for name in published if _VALIDATION_NAME.fullmatch(name)}
    have = {p.name for p in app_folder.glob("validation-*.csv")}
    if not have or not wanted or not have <= wanted:
        return []
    return sorted(wanted - have, key=lambda name: int(_VALIDATION_NAME.fullmatch(name).group(1)))


def _read(path: Path, columns: tuple[str, ...], checks: dict[str, _Check]) -> pd.DataFrame:
    """The table in `path` with `columns` required, and each column in `checks` made numeric and
    passing its check."""
    if not path.is_file():
        raise UserError(f"{path}: profile file not found")
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV file ({one_line(str(exc))})") from exc
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}")
    if table.empty:
        raise UserError(f"{path}: no data rows")
    for column, (wanted, holds) in checks.items():
        values = pd.to_numeric(table[column], errors="coerce").to_numpy(float)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(values) | ~holds(values)
        if bad.any():
            _bad_value(path, table, int(np.argmax(bad)), column, f"not {wanted}")
        table[column] = values
    return table


def _placements(table: pd.DataFrame, path: Path) -> list[tuple[int, ...]]:
    """The placement column as tuples of GPUs per node (as written: Sia matches a query, in its
    normal form, against the rows as written)."""
    placements = []
    for row, text in enumerate(table.placement.tolist()):
        if not _PLACEMENT_DIGITS.fullmatch(text):
            _bad_value(path, table, row, "placement", "a placement is one digit 1-9 per node")
        placements.append(tuple(int(digit) for digit in text))
    return placements


def _bad_value(path: Path, table: pd.DataFrame, row: int, column: str, wanted: str) -> NoReturn:
    raise UserError(f"{path}, row {row + 1} (line {row + 2}), column {column!r}: {wanted} "
                    f"(value {table[column].iat[row]!r})")
