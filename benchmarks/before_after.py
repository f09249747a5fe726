"""Before/after: run one benchmark script from two source trees in one invocation and compare.

    python benchmarks/before_after.py --ref <git-ref> [--repeat 3] [--tree <after tree>] [--metric wall_s]
                                      [--json] -- <benchmark script, relative to the tree> [its args...]

    python benchmarks/before_after.py --ref bc5a0ad --repeat 3 -- benchmarks/venus_baselines.py --json
    python benchmarks/before_after.py --ref bc5a0ad --repeat 3 -- benchmarks/scale.py --json \\
        --months 1 --policies fifo --runtimes local

"Before" is a temporary detached git worktree of `--ref` (of the repository this script lives in);
"after" is `--tree` (default: that repository's working tree, uncommitted changes included). The
benchmark runs `--repeat` times alternating before, after, before, after, ... so that machine noise
hits both alike. Each run is a fresh process `python <tree>/<script> <args>` with cwd=<tree> and
PYTHONPATH=<tree> (`--script-from-after`: the after tree's script in both, for a script newer than
the ref that runs raysim's commands as processes), so each tree imports its own `raysim` (and,
through raysim/paths.py, its own conf/ and traces/); this is checked before any run and the
comparison aborts if it does not hold.

The benchmark must print JSON lines (pass it `--json`). Rows are grouped into cases by every
non-numeric field (objects excepted: measurements) plus the numeric keys given by `--key` (default: months, jobs, days, seed,
window_s, vcs_per_actor); the table shows, per case, the median `--metric` before and after, the
ratio after/before and every run's value. Fields such as avg_jct (`--same`) that should not change
between runs are compared and any difference is reported under the table. `--json` prints the
comparison as one JSON document instead of the table (progress goes to stderr either way).

The worktree is created next to the repository (so paths relative to its parent, such as the
benchmarks' default ../shared/traces/..., resolve the same in both trees) and removed at the end,
also on an error or Ctrl-C. Caches outside the trees (~/.cache/raysim/synth, the trace's Parquet
cache beside ../shared traces) are shared by both; the benchmarks time loading apart from wall_s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_KEYS = ("months", "jobs", "days", "seed", "window_s", "vcs_per_actor")
DEFAULT_SAME = ("avg_jct", "avg_queue", "events")
CHECK_IMPORT = ("import json, raysim, raysim.paths as p; "
                "print(json.dumps({'raysim': raysim.__file__, 'conf': str(p.CONF_DIR), 'traces': str(p.TRACES_DIR)}))")


class Failure(Exception):
    """A run or a check went wrong; the message says which and why."""


def git(repo: Path, *args: str) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise Failure(f"git {' '.join(args)} (in {repo}) failed: {res.stderr.strip()}")
    return res.stdout.strip()


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def tree_env(tree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def run_in(tree: Path, cmd: list[str], timeout: float | None) -> tuple[int, str, str, float]:
    """Run `cmd` in `tree` with its own raysim; kill its whole process group on any interruption."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=tree_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as e:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        if isinstance(e, subprocess.TimeoutExpired):
            raise Failure(f"{' '.join(cmd)} (in {tree}) ran past --timeout {timeout:g} s") from None
        raise
    return proc.returncode, out, err, time.perf_counter() - t


def check_import(name: str, tree: Path, python: str) -> dict:
    """The raysim a run in `tree` imports, and its conf/traces folders; Failure unless it is the tree's own."""
    rc, out, err, _ = run_in(tree, [python, "-c", CHECK_IMPORT], timeout=120)
    if rc != 0:
        raise Failure(f"{name}: `import raysim` failed in {tree}:\n{tail(err)}")
    where = json.loads(out.strip().splitlines()[-1])
    package = Path(where["raysim"]).resolve()
    if not package.is_relative_to(tree.resolve() / "raysim"):
        raise Failure(f"{name}: a run in {tree} imports raysim from {package}, not from that tree "
                      f"(PYTHONPATH={tree} did not take precedence)")
    for folder in ("conf", "traces"):
        if not Path(where[folder]).resolve().is_relative_to(tree.resolve()):
            raise Failure(f"{name}: raysim in {tree} uses {folder}/ from {where[folder]}, outside the tree")
    return where


def tail(text: str, lines: int = 25) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join("    " + line for line in kept) if kept else "    (nothing)"


def json_rows(stdout: str) -> list[dict]:
    rows = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def case_of(row: dict, keys: set[str], metric: str, same: set[str]) -> tuple:
    """The identifying (field, value) pairs of a row, in the row's own order: its names and `keys`;
    measurements a run reports as objects (e.g. scale.py's speedup_bound and split_s) are not."""
    return tuple((k, json.dumps(v) if isinstance(v, list) else v) for k, v in row.items()
                 if k not in ("error", metric) and k not in same and not isinstance(v, dict)
                 and (k in keys or not is_number(v)))


def label(case: tuple) -> str:
    return " ".join(f"{k}={v}" for k, v in case)


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt(v: float | None, width: int = 9) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.3f}"


def main() -> int:
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    own, bench = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(prog="before_after.py", description=__doc__.splitlines()[0],
                                 usage="%(prog)s --ref REF [options] -- SCRIPT [ARGS...]")
    ap.add_argument("--ref", required=True, help="git ref of the 'before' tree (a commit, tag, branch, HEAD~1 ...)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tree, alternating before/after (default 3)")
    ap.add_argument("--warmup", type=int, default=0, help="uncounted before/after pairs run first (default 0)")
    ap.add_argument("--tree", default=None, help="the 'after' tree (default: the repository holding this script)")
    ap.add_argument("--metric", default="wall_s", help="numeric field compared (default wall_s)")
    ap.add_argument("--key", nargs="*", default=list(DEFAULT_KEYS),
                    help=f"numeric fields that identify a case (default: {' '.join(DEFAULT_KEYS)})")
    ap.add_argument("--same", nargs="*", default=list(DEFAULT_SAME),
                    help=f"fields reported when they differ between runs (default: {' '.join(DEFAULT_SAME)})")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the runs (default: this one)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds one run may take (default: no limit)")
    ap.add_argument("--worktree-dir", default=None,
                    help="folder to create the 'before' worktree in (default: the repository's parent)")
    ap.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    ap.add_argument("--script-from-after", action="store_true",
                    help="run the 'after' tree's copy of the script in both trees (a script newer than --ref "
                         "that only runs raysim's commands, e.g. benchmarks/commands.py)")
    args, unknown = ap.parse_known_args(own)
    if unknown:
        ap.error(f"unrecognized arguments: {' '.join(unknown)} (the benchmark and its arguments go after `--`)")
    if not bench:
        ap.error("put the benchmark after `--`, e.g. `--ref HEAD~1 -- benchmarks/venus_baselines.py --json`")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    repo = Path(git(Path(__file__).resolve().parent, "rev-parse", "--show-toplevel")).resolve()
    after = Path(args.tree).resolve() if args.tree else repo
    script, script_args = bench[0], bench[1:]
    if Path(script).is_absolute():
        ap.error(f"give the benchmark script relative to the tree root, not {script}")

    worktree = None
    # SIGTERM (e.g. from a job runner) unwinds like Ctrl-C so the worktree is removed.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        commit = git(repo, "rev-parse", "--verify", f"{args.ref}^{{commit}}")
        parent = Path(args.worktree_dir) if args.worktree_dir else repo.parent
        if not os.access(parent, os.W_OK):
            log(f"note: {parent} is not writable; the worktree goes to {tempfile.gettempdir()} and paths "
                f"relative to the repository's parent will not resolve the same in both trees")
            parent = Path(tempfile.gettempdir())
        worktree = Path(tempfile.mkdtemp(prefix=f".before-after-{commit[:10]}-", dir=parent))
        git(repo, "worktree", "add", "--detach", str(worktree), commit)
        trees = {"before": worktree, "after": after}
        scripts = {name: (after if args.script_from_after else tree) / script for name, tree in trees.items()}
        for name, tree in trees.items():
            if not scripts[name].is_file():
                raise Failure(f"{name}: {script} does not exist in {scripts[name].parent}")
        info = {}
        for name, tree in trees.items():
            where = check_import(name, tree, args.python)
            head = git(tree, "rev-parse", "HEAD")
            dirty = bool(git(tree, "status", "--porcelain", "--untracked-files=no"))
            info[name] = {"tree": str(tree), "commit": head, "uncommitted_changes": dirty, **where}
            log(f"{name:6s} {head[:10]}{' + uncommitted changes' if dirty else ''}  raysim from {where['raysim']}")
        if info["before"]["raysim"] == info["after"]["raysim"]:
            raise Failure("both trees import the same raysim package; nothing would be compared")

        values = {"before": {}, "after": {}}
        same_seen = {"before": {}, "after": {}}
        failed = {"before": set(), "after": set()}
        order: list[tuple] = []
        errors: list[str] = []
        total_runs = args.warmup + args.repeat
        for i in range(total_runs):
            counted = i >= args.warmup
            for name, tree in trees.items():
                tag = f"[{name} {i - args.warmup + 1}/{args.repeat}]" if counted else f"[{name} warm-up {i + 1}]"
                cmd = [args.python, str(scripts[name]), *script_args]
                rc, out, err, took = run_in(tree, cmd, args.timeout)
                if rc != 0:
                    raise Failure(f"{tag} {' '.join(cmd)} (cwd {tree}) exited with status {rc}; "
                                  f"its stderr ends with:\n{tail(err)}")
                rows = json_rows(out)
                if not rows:
                    raise Failure(f"{tag} {script} printed no JSON lines (does it take --json, and was it "
                                  f"given?); its stdout begins with:\n"
                                  + "\n".join("    " + l for l in out.splitlines()[:10]))
                log(f"{tag} {took:.1f} s, {len(rows)} rows")
                if not counted:
                    continue
                for row in rows:
                    case = case_of(row, set(args.key), args.metric, set(args.same))
                    if case not in order:
                        order.append(case)
                    if "error" in row:
                        errors.append(f"{tag} {label(case)}: {row['error']}")
                        failed[name].add(case)
                        continue
                    if not is_number(row.get(args.metric)):
                        errors.append(f"{tag} {label(case)}: no numeric {args.metric!r} in {row}")
                        failed[name].add(case)
                        continue
                    values[name].setdefault(case, []).append(row[args.metric])
                    for field in args.same:
                        if field in row:
                            same_seen[name].setdefault((case, field), set()).add(json.dumps(row[field]))
    except Failure as e:
        print(f"before_after.py: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("before_after.py: interrupted", file=sys.stderr)
        return 130
    finally:
        if worktree is not None:
            remove_worktree(repo, worktree)

    cases = []
    for case in order:
        b, a = values["before"].get(case, []), values["after"].get(case, [])
        mb, ma = median(b), median(a)
        differs = []
        for field in args.same:
            vb, va = same_seen["before"].get((case, field), set()), same_seen["after"].get((case, field), set())
            if (vb or va) and (len(vb | va) > 1):
                differs.append({"field": field, "before": sorted(json.loads(v) for v in vb),
                                "after": sorted(json.loads(v) for v in va)})
        cases.append({"case": dict(case), "label": label(case), "before": b, "after": a,
                      "failed": [name for name in ("before", "after") if case in failed[name]],
                      "before_median": mb, "after_median": ma,
                      "ratio": round(ma / mb, 4) if mb and ma is not None else None, "differs": differs})
    both = [c for c in cases if c["ratio"] is not None]
    total = None
    if both:
        tb, ta = sum(c["before_median"] for c in both), sum(c["after_median"] for c in both)
        total = {"before": round(tb, 4), "after": round(ta, 4), "ratio": round(ta / tb, 4) if tb else None,
                 "geomean_ratio": round(statistics.geometric_mean([c["ratio"] for c in both]), 4)
                 if all(c["ratio"] > 0 for c in both) else None}

    if args.json:
        print(json.dumps({"ref": args.ref, "benchmark": bench, "metric": args.metric, "repeat": args.repeat,
                          "trees": info, "cases": [{k: v for k, v in c.items() if k != "label"} for c in cases],
                          "total": total, "errors": errors}, indent=1))
    else:
        print_table(args, info, cases, total)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    return 1 if errors else 0


def print_table(args, info: dict, cases: list[dict], total: dict | None) -> None:
    def tree_line(name):
        t = info[name]
        return f"{name}: {t['commit'][:10]}{' + uncommitted changes' if t['uncommitted_changes'] else ''} ({t['tree']})"
    print(tree_line("before"))
    print(tree_line("after"))
    print(f"{args.metric}, median of {args.repeat} run(s) each, alternating before/after")
    width = max([len(c["label"]) for c in cases] + [len("case"), len("total")])
    print(f"{'case':<{width}}  {'before':>9}  {'after':>9}  {'after/before':>12}  runs before | after")
    for c in cases:
        ratio = f"{c['ratio']:>12.3f}" if c["ratio"] is not None else f"{'-':>12}"
        runs = " | ".join(" ".join(f"{v:g}" for v in c[name]) + (" FAILED" if name in c["failed"] else "")
                          for name in ("before", "after"))
        print(f"{c['label']:<{width}}  {fmt(c['before_median'])}  {fmt(c['after_median'])}  {ratio}  {runs}")
    if total and len(cases) > 1:
        print(f"{'total':<{width}}  {fmt(total['before'])}  {fmt(total['after'])}  {total['ratio']:>12.3f}  "
              + (f"(geometric mean of ratios {total['geomean_ratio']:.3f})" if total["geomean_ratio"] else ""))
    for c in cases:
        for name, other in (("before", "after"), ("after", "before")):
            if not c[name] and name not in c["failed"]:
                print(f"note: {c['label']}: not in the {name} runs (only in the {other} runs)")
        for d in c["differs"]:
            print(f"note: {c['label']}: {d['field']} differs: before {d['before']}, after {d['after']}")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def remove_worktree(repo: Path, worktree: Path) -> None:
    res = subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(worktree)],
                         capture_output=True, text=True)
    if worktree.exists():
        shutil.rmtree(worktree, ignore_errors=True)
    if res.returncode != 0:
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)
    if worktree.exists():
        log(f"warning: could not remove the worktree {worktree}")


if __name__ == "__main__":
    sys.exit(main())
