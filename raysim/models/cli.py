"""`raysim models ...`: train the models from files, and write the evaluation report.

    raysim models train throughput --data cluster_throughput.csv --out forecast.csv [--kind ebm]
    raysim models train duration --trace traces/venus_sept --out estimates.csv [--kind ebm]
    raysim models train packing --single single_data.csv [--colocation colocate_info.csv] --out labels.csv
    raysim models train colocation --single single_data.csv --colocation colocate_info.csv --out colocation_cv.json
    raysim models report --shared DATA --out models_report/

DATA is the data folder holding traces/venus_sept/ and profiles/ (the files the report reads are
listed below, relative to it).

The duration output has Lucid's estimate-file columns (job_id, priority = estimated seconds), so
`estimator.source=file estimator.path=<it>` uses it directly.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from raysim.models import duration as dur
from raysim.models import interference as itf
from raysim.models import packing as pk
from raysim.models import throughput as tp
from raysim.models.features import EBM_SETTINGS, KINDS, accuracy, macro_f1, mae
from raysim.models.plots import plot_importances, plot_shapes
from raysim.errors import TraceError

#: files the report reads, relative to --shared (the Lucid artifact files are optional)
THROUGHPUT_CSV = "traces/venus_sept/cluster_throughput.csv"
TRACE_DIR = "traces/venus_sept"
LUCID_FORECAST = "traces/venus_sept/lucid_artifacts/throughput_forecast.csv"
LUCID_ESTIMATES = {"lucid artifact (ebm)": "traces/venus_sept/lucid_artifacts/duration_estimates_ebm.csv",
                   "lucid artifact (lightgbm)": "traces/venus_sept/lucid_artifacts/duration_estimates_lgb.csv"}
SINGLE_CSV = "profiles/single_data.csv"
COLOCATION_CSV = "profiles/colocate_info.csv"
COLUMNS = ["section", "target", "kind", "metric", "value", "n_train", "n_test", "fit_s"]


def main(argv: list[str]) -> int:
    """Entry point of `raysim models`; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (TraceError, ValueError, FileNotFoundError) as err:
        print(f"raysim models: error: {err}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raysim models", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train one model and write what it predicts").add_subparsers(
        dest="model", required=True)

    p = train.add_parser("throughput", help="forecast of submitted GPU jobs/GPUs per 10 minutes")
    p.add_argument("--data", required=True, help="cluster_throughput.csv")
    p.add_argument("--out", required=True, help="forecast CSV to write (Lucid's throughput_forecast format)")
    p.add_argument("--split", default=tp.DEFAULT_SPLIT,
                   help="first forecast bin; earlier bins train (%(default)s)")
    _common(p, "--kind")
    p.set_defaults(run=_train_throughput)

    p = train.add_parser("duration", help="weekly-retrained duration estimates for a trace")
    p.add_argument("--trace", required=True, help="trace file or folder (as for trace.path)")
    p.add_argument("--out", required=True, help="CSV to write: job_id, priority (estimated seconds)")
    p.add_argument("--period-days", type=float, default=7.0, help="retraining period (%(default)s days)")
    p.add_argument("--target", choices=dur.TARGETS, default="log", help="fit log(1+duration) or seconds")
    p.add_argument("--cache-dir", default=None, help="where to cache the parsed trace (default: no cache)")
    _common(p, "--kind")
    p.set_defaults(run=_train_duration)

    p = train.add_parser("packing", help="share-score labels and leave-one-model-out classifier check")
    p.add_argument("--single", required=True, help="single_data.csv")
    p.add_argument("--colocation", default=None, help="colocate_info.csv (adds colocation labels)")
    p.add_argument("--out", required=True, help="per-configuration CSV to write")
    _common(p, "--classifier")
    p.set_defaults(run=_train_packing)

    p = train.add_parser("colocation", help="colocated-speed models: grouped cross-validation")
    p.add_argument("--single", required=True, help="single_data.csv")
    p.add_argument("--colocation", required=True, help="colocate_info.csv")
    p.add_argument("--out", required=True, help="JSON to write (the metrics of colocation_cv.json)")
    p.add_argument("--folds", type=int, default=5, help="folds, grouped by model pair (%(default)s)")
    p.add_argument("--kind", choices=KINDS, default=itf.DEFAULT_KIND,
                   help="learned model whose tier accuracy is `tier_accuracy` (%(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=_train_colocation)

    p = sub.add_parser("report", help="EBM vs LightGBM on held-out data, with EBM plots")
    p.add_argument("--shared", required=True, help="folder holding traces/venus_sept and profiles/")
    p.add_argument("--out", required=True, help="folder for models_report.md/.csv and the PNGs")
    p.add_argument("--split", default=tp.DEFAULT_SPLIT, help="throughput: first test bin (%(default)s)")
    p.add_argument("--test-from-day", type=int, default=14,
                   help="duration: test on jobs submitted from this day on (%(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=_report)
    return parser


def _common(p: argparse.ArgumentParser, kind_flag: str) -> None:
    p.add_argument(kind_flag, dest="kind", choices=KINDS, default="ebm", help="model family (%(default)s)")
    p.add_argument("--seed", type=int, default=0)


def _train_throughput(args) -> int:
    forecast = tp.fit_forecast(tp.read_throughput(args.data), split=args.split, kind=args.kind, seed=args.seed)
    forecast.write(args.out)
    for target, err in forecast.mae.items():
        print(f"{target}: {args.kind} MAE {err:.3f} over {len(forecast.table)} bins "
              f"(trained on {forecast.n_train} bins in {forecast.fit_seconds[target]:.1f} s)")
    print(f"wrote {args.out}")
    return 0


def _train_duration(args) -> int:
    from raysim.trace.load import load_trace

    trace = load_trace(args.trace, cache=args.cache_dir is not None, cache_dir=args.cache_dir)
    table = trace.table
    submit = table.column("submit_time").to_numpy().astype(np.float64)
    ends = submit + table.column("duration").to_numpy()
    t0 = time.perf_counter()
    est = dur.weekly_estimates(table, ends, trace.origin, period_s=int(args.period_days * 86400),
                               kind=args.kind, seed=args.seed, target=args.target)
    out = pd.DataFrame({"job_id": table.column("job_id").to_numpy(), "priority": np.round(est).astype(np.int64)})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    print(f"{len(out)} jobs, MAE {mae(table.column('duration').to_numpy(), est):.0f} s "
          f"(completion = submit + duration; {time.perf_counter() - t0:.1f} s); wrote {args.out}")
    return 0


def _train_packing(args) -> int:
    single = pk.read_single(args.single)
    table = single.copy()
    if args.colocation:
        table = pk.auto_labels(single, pk.colocation_speeds(args.colocation))
        agree = pk.agreement(table)
        print(f"colocation labels agree with single_data's label on {agree['agree']}/{agree['measured']} "
              f"measured configurations ({agree['accuracy']:.1%})")
    table["cv_prediction"] = pk.cross_validate(single, args.kind, args.seed)
    print(f"{args.kind} leave-one-model-out: accuracy {accuracy(single['label'], table['cv_prediction']):.3f}, "
          f"macro-F1 {macro_f1(single['label'], table['cv_prediction'], pk.LABELS):.3f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"wrote {args.out}")
    return 0


def _train_colocation(args) -> int:
    metrics, _ = itf.cross_validate(args.colocation, args.single, folds=args.folds, seed=args.seed, kind=args.kind)
    _write_json(metrics, Path(args.out))
    print(_colocation_summary(metrics))
    print(f"wrote {args.out}")
    return 0


def _colocation_summary(m: dict) -> str:
    return (f"colocated speed, {m['folds']}-fold CV grouped by model pair over {m['n_pairs']} pairs: MAE "
            f"lightgbm {m['mae_learned_lightgbm']:.4f}, ebm {m['mae_learned_ebm']:.4f}, analytic "
            f"{m['mae_analytic']:.4f} (capacity 100 %: {m['mae_analytic_capacity100']:.4f}), speed = 1 "
            f"{m['mae_speed1']:.4f}; share tier accuracy ({m['kind']}) {m['tier_accuracy']:.3f} over "
            f"{m['n_configurations']} configurations")


def _write_json(data: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _report(args) -> int:
    rows, notes = report(Path(args.shared), Path(args.out), seed=args.seed, split=args.split,
                         test_from_day=args.test_from_day)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(rows.to_string(index=False))
    print("\n".join(notes))
    print(f"wrote {Path(args.out) / 'models_report.md'}")
    return 0


class _Results:
    """Rows, notes and plot paths collected while the report runs."""

    def __init__(self):
        self.rows, self.notes, self.plots = [], [], []

    def add(self, section, target, kind, metric, value, n_train=None, n_test=None, fit_s=None):
        self.rows.append(dict(section=section, target=target, kind=kind, metric=metric, value=value,
                              n_train=n_train, n_test=n_test, fit_s=fit_s))

    def plot(self, model, out: Path, stem: str, title: str):
        self.plots += [plot_importances(model, out / f"{stem}_importance.png", title),
                       plot_shapes(model, out / f"{stem}_shapes.png", title)]


def report(shared: Path, out: Path, *, seed: int = 0, split: str = tp.DEFAULT_SPLIT,
           test_from_day: int = 14) -> tuple[pd.DataFrame, list[str]]:
    """Evaluate every model on held-out data, write models_report.md/.csv and EBM plots to `out`.

    Returns the result rows (COLUMNS) and the report's notes.
    """
    out.mkdir(parents=True, exist_ok=True)
    res = _Results()
    _report_throughput(res, shared, out, seed, split)
    _report_duration(res, shared, out, seed, test_from_day)
    confusion = _report_packing(res, shared, out, seed)
    _report_colocation(res, shared, out, seed)
    table = pd.DataFrame(res.rows, columns=COLUMNS).astype({"n_train": "Int64", "n_test": "Int64"})
    table.to_csv(out / "models_report.csv", index=False, float_format="%.6g")
    (out / "models_report.md").write_text(_markdown(table, res.notes, confusion, res.plots, out))
    return table, res.notes


def _report_throughput(res: _Results, shared: Path, out: Path, seed: int, split: str) -> None:
    """Train before `split`, forecast from it on; compare with persistence and Lucid's forecast."""
    series = tp.read_throughput(shared / THROUGHPUT_CSV)
    forecasts = {kind: tp.fit_forecast(series, split=split, kind=kind, seed=seed) for kind in KINDS}
    for kind, fc in forecasts.items():
        fc.write(out / f"throughput_forecast_{kind}.csv")
        for target in tp.TARGETS:
            res.add("throughput", target, kind, "MAE", fc.mae[target], fc.n_train, len(fc.table),
                    fc.fit_seconds[target])
    n_test = len(forecasts["ebm"].table)
    for target, err in tp.persistence_mae(series, split=split).items():
        res.add("throughput", target, "persistence (bin k-5)", "MAE", err, None, n_test)
    if (shared / LUCID_FORECAST).exists():
        lucid = pd.read_csv(shared / LUCID_FORECAST).merge(forecasts["ebm"].table[["time"]], on="time")
        for target, pred in tp.TARGETS.items():
            res.add("throughput", target, "lucid artifact", "MAE", mae(lucid[target], lucid[pred]), None,
                    len(lucid))
    for target in tp.TARGETS:
        ratio = forecasts["ebm"].mae[target] / forecasts["lightgbm"].mae[target]
        res.notes.append(f"throughput {target}: EBM MAE / LightGBM MAE = {ratio:.3f} "
                         f"({'within' if ratio <= 1.10 else 'NOT within'} the 10% bound)")
        res.plot(forecasts["ebm"].models[target], out, f"throughput_{tp.SHORT[target]}",
                 f"EBM throughput: {target}")
    res.notes.append("throughput: features of bin k use only bins <= k-5 (a true forecast for the 5 bins "
                     "Lucid's packing switch averages); one-step-ahead walk over the test bins with actual "
                     "past counts")


def _report_duration(res: _Results, shared: Path, out: Path, seed: int, test_from_day: int) -> None:
    """Time split without leakage (train: completed before the test start), plus weekly retraining."""
    from raysim.trace.load import load_trace

    trace = load_trace(shared / TRACE_DIR, cache=False)
    jobs = trace.table.to_pandas()
    submit, duration = jobs["submit_time"].to_numpy(), jobs["duration"].to_numpy().astype(np.float64)
    ends = submit + duration
    day0 = int(np.floor(submit.min() / 86400) * 86400)
    train, test = ends < day0 + test_from_day * 86400, submit >= day0 + test_from_day * 86400
    sizes = (int(train.sum()), int(test.sum()))
    for kind in KINDS:
        for target in dur.TARGETS:
            t0 = time.perf_counter()
            model = dur.DurationModel(kind, seed, target).fit(jobs[train], trace.origin)
            fit_s = time.perf_counter() - t0
            res.add("duration", f"duration ({target} target)", kind, "MAE",
                    mae(duration[test], model.predict(jobs[test])), *sizes, fit_s)
            if kind == "ebm" and target == "log" and model.model is not None:
                res.plot(model.model, out, "duration", "EBM duration (log target)")
    median = np.median(duration[train]) if train.any() else dur.DEFAULT_ESTIMATE_S
    res.add("duration", "duration", "median of training jobs", "MAE", mae(duration[test], median), *sizes)
    for name, rel in LUCID_ESTIMATES.items():
        if (shared / rel).exists():
            est = pd.read_csv(shared / rel).set_index("job_id")["priority"]
            aligned = est.reindex(jobs["job_id"][test]).to_numpy(dtype=np.float64)
            res.add("duration", "duration", name + ", negatives -> 0", "MAE",
                    mae(duration[test], np.maximum(aligned, 0)), None, sizes[1])
    later = submit >= day0 + dur.WEEK_S
    for kind in KINDS:
        t0 = time.perf_counter()
        est = dur.weekly_estimates(trace.table, ends, trace.origin, kind=kind, seed=seed, start=day0)
        res.add("duration", "duration (weekly retrain, weeks 2+)", kind, "MAE", mae(duration[later], est[later]),
                None, int(later.sum()), time.perf_counter() - t0)
    res.notes.append(f"duration split: train on jobs completing (submit + duration) before day {test_from_day}, "
                     f"test on jobs submitted from day {test_from_day}; weekly rows: each week predicted by a "
                     "model trained on jobs completed before it (week 1 has none and is left out); the Lucid "
                     "artifact estimates come from models trained on months before September (not in shared/)")


def _report_packing(res: _Results, shared: Path, out: Path, seed: int) -> pd.DataFrame:
    """Label agreement and leave-one-model-out classification; returns the confusion matrix."""
    single = pk.read_single(shared / SINGLE_CSV)
    labels = pk.auto_labels(single, pk.colocation_speeds(shared / COLOCATION_CSV))
    agree = pk.agreement(labels)
    source = "colocation speeds vs single_data label"
    res.add("packing", "label", source, "agreement (measured configs)", agree["accuracy"], None, agree["measured"])
    res.add("packing", "label", source, "agreement (unmeasured -> 2)", agree["reference_accuracy"], None,
            len(labels))
    y = single["label"].to_numpy()
    for kind in KINDS:
        t0 = time.perf_counter()
        pred = pk.cross_validate(single, kind, seed)
        fit_s = time.perf_counter() - t0
        res.add("packing", "label", kind, "accuracy (leave-one-model-out)", accuracy(y, pred), None, len(y), fit_s)
        res.add("packing", "label", kind, "macro-F1 (leave-one-model-out)", macro_f1(y, pred, pk.LABELS),
                None, len(y))
    majority = np.full(len(y), np.bincount(y, minlength=len(pk.LABELS)).argmax())
    res.add("packing", "label", "constant: most frequent label", "accuracy", accuracy(y, majority), None, len(y))
    res.add("packing", "label", "constant: most frequent label", "macro-F1", macro_f1(y, majority, pk.LABELS),
            None, len(y))
    clf = pk.fit_classifier(single, "ebm", seed)
    if clf.estimator is not None:
        res.plot(clf, out, "packing", "EBM share-score classifier")
    return agree["confusion"]


def _report_colocation(res: _Results, shared: Path, out: Path, seed: int) -> None:
    """Colocated-speed models under grouped 5-fold CV (rows in the packing section: Lucid's packing
    analyzer consumes them); writes colocation_cv.json."""
    m, _ = itf.cross_validate(shared / COLOCATION_CSV, shared / SINGLE_CSV, seed=seed)
    _write_json(m, out / "colocation_cv.json")
    n = m["n_pair_sides"]
    models = {"lightgbm": "learned_lightgbm", "ebm": "learned_ebm",
              "analytic (interleaved, fitted capacity)": "analytic",
              "analytic (interleaved, capacity 100 %)": "analytic_capacity100",
              "analytic (random phases)": "analytic_random", "constant: speed = 1": "speed1"}
    for kind, name in models.items():
        res.add("packing", "colocated speed", kind, f"MAE ({m['folds']}-fold CV grouped by model pair)",
                m[f"mae_{name}"], None, n, m["fit_s"].get(name))
    for kind, name in models.items():
        res.add("packing", "share tier from speeds", kind, "accuracy (per configuration)",
                m[f"tier_accuracy_{name.removeprefix('learned_')}"], None, m["n_configurations"])
    res.notes.append(
        "colocated speed: each measured pair gives two rows (own job, partner) with both single-job profiles; "
        "folds keep every pair of two models together; the analytic capacity is fitted per training fold "
        f"({', '.join(f'{c:g}' for c in m['analytic_capacity_per_fold'])} %). Share tier per configuration: mean "
        "over the pairs it is in of the measured vs the predicted speeds, < 0.85 -> 2, < 0.95 -> 1, else 0")
    res.notes.append(_colocation_summary(m))


def _markdown(table: pd.DataFrame, notes: list[str], confusion: pd.DataFrame, plots, out: Path) -> str:
    def fmt(v, digits):
        return "" if pd.isna(v) else (f"{v:.{digits}f}" if isinstance(v, float) else str(int(v)))

    lines = ["# raysim models report", "",
             "Produced by `raysim models report`; EBM settings: "
             + ", ".join(f"{k}={v}" for k, v in EBM_SETTINGS.items()) + "; LightGBM defaults with n_jobs=1.", ""]
    for section in table["section"].unique():
        part = table[table["section"] == section]
        lines += [f"## {section}", "", "| target | model | metric | value | n train | n test | fit s |",
                  "|---|---|---|---|---|---|---|"]
        for r in part.itertuples(index=False):
            digits = 3 if section != "duration" else 0
            lines.append(f"| {r.target} | {r.kind} | {r.metric} | {fmt(r.value, digits)} | {fmt(r.n_train, 0)} "
                         f"| {fmt(r.n_test, 0)} | {fmt(r.fit_s, 1)} |")
        lines.append("")
    lines += ["Colocation label (columns) vs single_data label (rows), measured configurations:", "",
              "| label | " + " | ".join(str(c) for c in confusion.columns) + " |",
              "|---|" + "---|" * len(confusion.columns)]
    lines += [f"| {i} | " + " | ".join(str(v) for v in row) + " |" for i, row in confusion.iterrows()]
    lines += ["", "## Notes", ""] + [f"- {n}" for n in notes] + ["", "## EBM plots", ""]
    lines += [f"![{p.stem}]({p.relative_to(out)})" for p in plots]
    return "\n".join(lines) + "\n"
