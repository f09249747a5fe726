"""Every command in README.md runs as written.

The commands are those of README.md's ```bash blocks (each block one bash script, run with `set -e`
from its first line to its last) and of its tables (each table row one script: the row's
`raysim data fetch ...` commands, then its other `raysim ...`/`python -m raysim ...` commands). Each
script runs in bash, as a user would type it, in a fresh scratch folder that stands for a checkout
(`traces/` links to the repository's), with the checkout on PYTHONPATH and an empty data cache of its
own (RAYSIM_DATA), so that what a command needs must come from the README itself. Three things
differ from a user's machine, and only these:

- `raysim` and `python -m raysim` go through a small shim (`bin/raysim`, `bin/python` first on PATH)
  that appends `runtime=local` to simulation runs: in-process runs give byte-identical results
  (docs/configuration.md) and save a Ray start-up per command. Not to the quick start's
  `python -m raysim +experiment=venus`, which runs on Ray as written; not to a command that sets
  `runtime=` itself; not to the FGD inflation experiment, which takes no runtime. Tools
  (`raysim data|trace|models|report`) run unchanged.
- Datasets come from a mirror (RAYSIM_DATA_MIRROR), not the public hosts: venus, lucid_profiles,
  openb, gavel_throughputs, summit_nodes and alibaba_spot_nodes are the project's copies in ../shared (as in
  tests/test_data.py: those scripts are marked `shared` and skip with a reason without it); helios,
  philly and pai are tiny archives made here in the published layout (the readers' test traces) and
  stand in for the real ones through a registry (RAYSIM_DATA_REGISTRY) that differs from raysim's
  only in those three datasets' file hashes and sizes.
- A placeholder of PLACEHOLDERS (`<file.trace>`) is replaced by a small file made in the scratch folder.

Each script that runs a simulation promises a figure (PROMISES: what its README row or paragraph
says the run shows, e.g. the openb row's pods that queue), checked on the runs it made. Running the
scripts takes minutes (each command is a process that imports raysim, and the quick start starts
Ray), so every script runs in the slow step (`slow`; those needing ../shared are also `shared`);
the main suite runs two of them (SMOKE: the quick start in-process and the heterogeneous demo;
the openb row's reduced run is slow too) and checks their figures. It also keeps a fast check of every one of them,
`test_readme_command_is_well_formed`: the script is valid bash, every `raysim data fetch` names a
dataset of the registry, every tool command (`raysim data|trace|models|report ...`) is accepted by
the tool's own argument parser, and every simulation command (each run of a sweep) composes with
the overrides the shim gives it and passes the run's config checks (`check_cluster_config`), all in
this process. Scripts made only of ALLOWED commands (installing, the test suite itself, a Ray
cluster: tests/test_cluster.py runs that one) are not run, and a test checks that no other command
hides among them. Identical scripts run once.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from conftest import SHARED
from test_data import SHARED_COPIES, sha, targz

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

#: command prefixes that are not run here (installing; the test suite itself; a Ray cluster, which
#: tests/test_cluster.py starts under the `cluster` marker)
ALLOWED = ("pip install ", "python -m pytest ", "export RAY_AUTH_MODE=", "ray start ", "ray job submit ")
#: run on Ray exactly as written (everything else gets runtime=local, see the module docstring)
AS_WRITTEN = ("python -m raysim +experiment=venus",)
#: placeholder -> file name made in the scratch folder (see make_placeholders)
PLACEHOLDERS = {"<file.trace>": "gavel.trace"}
SYNTHETIC = ("helios", "philly", "pai")
TOOLS = ("data", "trace", "models", "report")


@dataclass
class Script:
    where: str                       # README line of the block or row
    text: str
    datasets: list[str] = field(default_factory=list)

    @property
    def runs(self) -> bool:
        return bool(re.search(r"(^|[;&|(]\s*)(python -m raysim|raysim) (?!(data|trace|models|report)\b)", self.text, re.M))


def code_blocks(text: str) -> list[tuple[int, str]]:
    """(line, body) of every ```bash block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].strip() == "```bash":
            start, body = i + 1, []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start + 1, "\n".join(body)))
        i += 1
    return out


def commands(body: str) -> list[str]:
    """The commands of a block: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", "", body)
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def table_scripts(text: str) -> list[tuple[int, str]]:
    """(line, script) of every table row holding raysim commands: fetches first, then the rest."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            continue
        spans = [s for s in re.findall(r"`([^`]+)`", line) if s.startswith(("raysim ", "python -m raysim"))]
        if spans:
            fetch = [s for s in spans if s.startswith("raysim data fetch ")]
            out.append((n, "\n".join(fetch + [s for s in spans if s not in fetch])))
    return out


def allowed(cmd: str) -> bool:
    return cmd.startswith(ALLOWED)


def readme_scripts() -> tuple[list[Script], list[tuple[int, list[str]]]]:
    """(scripts to run, blocks not run) of README.md."""
    text = README.read_text()
    scripts, skipped, seen = [], [], set()
    for line, body in code_blocks(text):
        cmds = commands(body)
        if any(allowed(c) for c in cmds):
            skipped.append((line, cmds))
            continue
        scripts.append(Script(f"README.md:{line}", body))
    scripts += [Script(f"README.md:{line}", body) for line, body in table_scripts(text)]
    out = []
    for s in scripts:
        if s.text in seen:
            continue
        seen.add(s.text)
        s.datasets = [name for m in re.finditer(r"raysim data fetch ([\w ]+)", s.text) for name in m.group(1).split()]
        out.append(s)
    return out, skipped


SCRIPTS, SKIPPED = readme_scripts()


# --------------------------------------------------------------------------- what each script promises

def run_folders(work: Path) -> list[Path]:
    """The run folders a script left in its scratch checkout (outputs/ and multirun/), oldest first."""
    found = [p.parent for name in ("summary.csv", "fgd_summary.csv") for p in work.glob(f"*/**/{name}")]
    return sorted(found, key=lambda p: (p / "raysim.log").stat().st_mtime if (p / "raysim.log").exists() else 0)


def cluster(run: Path) -> pd.Series:
    """The cluster-wide (`all`) row of a run's summary.csv."""
    return pd.read_csv(run / "summary.csv").set_index("vc").loc["all"]


def vcs(run: Path) -> int:
    return int((pd.read_csv(run / "summary.csv")["vc"] != "all").sum())


def queued(run: Path) -> int:
    """Jobs of the run that waited at all."""
    return int((pq.read_table(run / "jobs.parquet", columns=["queue"]).column("queue").to_numpy() > 0).sum())


def peak_utilisation(run: Path) -> float:
    series = pq.read_table(run / "timeseries.parquet", columns=["vc", "gpu_utilization"]).to_pandas()
    return float(series.loc[series["vc"] == "all", "gpu_utilization"].max())


def sweep_runs(work: Path) -> list[str]:
    """The runs of the sweep a script made, as its sweep_summary.csv names them."""
    (summary,) = work.glob("multirun/**/sweep_summary.csv")
    table = pd.read_csv(summary)
    return table.loc[table["vc"] == "all", "run"].tolist()


@dataclass
class Promise:
    """What a README script says its run shows, and the check of that figure on the run folders it
    left (`runs`, oldest first; `work`, its scratch checkout): true when the run shows it."""

    pattern: str  # a regular expression matching the script's text
    figure: str
    check: Callable[[list[Path], Path], bool]


#: The figure each script's runs show (the first pattern that matches the script): what its README
#: row or paragraph promises. Every script that runs a simulation has one (a test checks it);
#: test_readme_command_runs_as_written checks it on the command as written, and
#: test_readme_promise_holds_in_a_reduced_form on the SMOKE rows, in the main suite.
PROMISES = [
    Promise(r"\+experiment=venus policy=tiresias placer=first_fit", "a sweep over three policies, compared",
            lambda runs, work: len(sweep_runs(work)) == 3),
    Promise(r"^python -m raysim \+experiment=venus$", "a summary per VC of the 15 VCs, and the page",
            lambda runs, work: vcs(runs[-1]) == 15 and (runs[-1] / "report.html").exists()),
    Promise(r"\+experiment=venus_maintenance", "jobs interrupted by the nodes that change",
            lambda runs, work: cluster(runs[-1])["interruptions"] > 0),
    Promise(r"\+experiment=venus_real", "the real Venus trace's 23,859 jobs",
            lambda runs, work: cluster(runs[-1])["jobs"] == 23_859),
    Promise(r"\+experiment=lucid", "avg JCT 12,886 s, avg queue 915 s",
            lambda runs, work: (round(cluster(runs[-1])["avg_jct"]), round(cluster(runs[-1])["avg_queue"]))
            == (12_886, 915)),
    Promise(r"\+experiment=hetero_demo", "placement by GPU type: V100, P100 and K80 GPUs each used",
            lambda runs, work: all(cluster(runs[-1])[f"gpu_utilization_{t}"] > 0 for t in ("V100", "P100", "K80"))),
    Promise(r"\+experiment=saturn_synth", "~699k jobs",
            lambda runs, work: 690_000 < cluster(runs[-1])["jobs"] < 710_000),
    Promise(r"\+experiment=helios_synth", "62 VCs", lambda runs, work: vcs(runs[-1]) == 62),
    Promise(r"\+experiment=fgd_openb", "FGD's GPU allocation at 100 % arrived workload, over 90 %",
            lambda runs, work: pd.read_csv(runs[-1] / "fgd_summary.csv").at[0, "allo_100"] > 90),
    Promise(r"\+experiment=openb", "pods that queue on a cluster that fills",
            lambda runs, work: cluster(runs[-1])["avg_queue"] > 0 and queued(runs[-1]) > 0
            and peak_utilisation(runs[-1]) > 0.5),
    Promise(r"\+experiment=sia_saturn", "avg JCT 0.587 h",
            lambda runs, work: round(cluster(runs[-1])["avg_jct"] / 3600, 3) == 0.587),
    Promise(r"\+experiment=harvest_summit_full", "1,001 tasks", lambda runs, work: cluster(runs[-1])["jobs"] == 1_001),
    Promise(r"\+experiment=venus_(gavel|elastic)", "the Venus week's 6,412 jobs (Gavel's round mechanism drops "
            "a few, as Gavel does)", lambda runs, work: cluster(runs[-1])["jobs"] == 6_412),
    Promise(r"\+experiment=spot_alibaba", "high-priority jobs evict spot jobs",
            lambda runs, work: cluster(runs[-1])["evictions"] > 0),
    Promise(r"\+experiment=airesim", "failures of the job, its warm standbys swapped in",
            lambda runs, work: cluster(runs[-1])["interruptions"] > 0 and cluster(runs[-1])["standby_swaps"] > 0),
    Promise(r"\+experiment=(gavel_|harvest_summit)|trace\.path=",
            "every job of the run finished",
            lambda runs, work: 0 < cluster(runs[-1])["finished"] == cluster(runs[-1])["jobs"]),
]


def promise(script: Script) -> Promise | None:
    return next((p for p in PROMISES if re.search(p.pattern, script.text, re.M)), None)


def keeps_its_promise(script: Script, work: Path) -> None:
    """The figure `script`'s runs in `work` show is the one it promises."""
    p = promise(script)
    runs = run_folders(work)
    assert runs, f"{script.where}: no run folder in {work}"
    assert p.check(runs, work), f"{script.where}: does not show {p.figure!r} ({runs[-1]})"


def param(s: Script, run: bool = True):
    """The script as a test parameter: running it is `slow` (and `shared` where it fetches a copy of
    ../shared); checking it (run=False) is neither."""
    marks = [pytest.mark.slow] if run else []
    if run and set(s.datasets) & set(SHARED_COPIES):
        marks.append(pytest.mark.shared)
    first = s.text.strip().splitlines()[-1][:60]
    return pytest.param(s, marks=marks, id=f"{s.where}:{first}")


# --------------------------------------------------------------------------- the README as a whole

def test_readme_is_a_short_guide():
    assert len(README.read_text().splitlines()) <= 250


def test_ci_runs_the_test_command_the_readme_gives():
    ci = (REPO / ".ci" / "run").read_text()
    main = next(line for line in ci.splitlines() if line.startswith("python -m pytest -m \"not slow"))
    assert any(main in commands(body) for _, body in code_blocks(README.read_text())), main


def test_blocks_not_run_hold_only_allowed_commands():
    assert SKIPPED, "the install and Ray cluster blocks"
    for line, cmds in SKIPPED:
        assert all(allowed(c) for c in cmds), (line, [c for c in cmds if not allowed(c)])


def test_every_experiment_is_in_the_table():
    table = {s for _, s in table_scripts(README.read_text())}
    for path in sorted((REPO / "conf" / "experiment").glob("*.yaml")):
        assert any(re.search(rf"\+experiment={path.stem}(\s|$)", s) for s in table), path.stem


def test_placeholders_are_known():
    for s in SCRIPTS:
        for p in re.findall(r"<[^>\s]+>", s.text):
            assert p in PLACEHOLDERS, (s.where, p)


@pytest.mark.parametrize("page", [README, REPO / "benchmarks" / "README.md", *sorted((REPO / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        assert (page.parent / target.split("#")[0]).exists(), (page.name, target)


# --------------------------------------------------------------------------- running the commands

SHIM = """#!{python}
import os, sys
REAL = {python!r}
args = sys.argv[1:]
if os.path.basename(sys.argv[0]) == "python":
    if args[:2] != ["-m", "raysim"]:
        os.execv(REAL, [REAL, *args])
    args = args[2:]
extra = os.environ.get("README_EXTRA", "").split()
if (not args or args[0] in {tools!r} or any(a.startswith(("runtime=", "--help", "-h")) for a in args)
        or "+experiment=fgd_openb" in args):  # (a mode without a runtime)
    extra = []
os.execv(REAL, [REAL, "-m", "raysim", *args, *extra])
"""


def synthetic_archives(tmp: Path) -> dict[str, dict[str, tuple[bytes, str]]]:
    """dataset -> {registry file path: (bytes, unpack)}: the readers' test traces in the published layout."""
    from reader_samples import write_helios, write_pai, write_philly

    helios, philly, pai = write_helios(tmp / "helios"), write_philly(tmp / "philly"), write_pai(tmp / "pai")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in ("cluster_log.csv", "cluster_gpu_number.csv"):
            z.writestr(f"data/Saturn/{f}", (helios / f).read_bytes())
    return {
        "helios": {"data.zip": (buf.getvalue(), "zip")},
        "philly": {"trace-data.tar.gz": (targz({"trace-data/cluster_job_log": (philly / "cluster_job_log").read_bytes()}), "tar.gz")},
        "pai": {"pai_job_table.tar.gz": (targz({"pai_job_table.csv": (pai / "pai_job_table.csv").read_bytes()}), "tar.gz"),
                "pai_task_table.tar.gz": (targz({"pai_task_table.csv": (pai / "pai_task_table.csv").read_bytes()}), "tar.gz"),
                "pai_machine_spec.tar.gz": (targz({"pai_machine_spec.csv": b"m1,2,V100,96,512,8\n"}), "tar.gz")},
    }


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory):
    """(bin folder with the shims, mirror folder, registry file); ../shared's datasets are copied
    into the mirror on first use."""
    root = tmp_path_factory.mktemp("readme")
    bin_ = root / "bin"
    bin_.mkdir()
    for name in ("raysim", "python"):
        (bin_ / name).write_text(SHIM.format(python=sys.executable, tools=TOOLS))
        (bin_ / name).chmod(0o755)
    mirror = root / "mirror"
    registry = yaml.safe_load((REPO / "raysim" / "data" / "registry.yaml").read_text())
    for name, files in synthetic_archives(root / "synthetic").items():
        entries = []
        for path, (body, unpack) in files.items():
            (mirror / name).mkdir(parents=True, exist_ok=True)
            (mirror / name / path).write_bytes(body)
            entries.append({"path": path, "url": None, "size": len(body), "sha256": sha(body), "pinned": True,
                            "unpack": unpack})
        assert [e["path"] for e in entries] == [f["path"] for f in registry["datasets"][name]["files"]], name
        registry["datasets"][name]["files"] = entries
    (root / "registry.yaml").write_text(yaml.safe_dump(registry))
    return bin_, mirror, root / "registry.yaml"


def fill_mirror(mirror: Path, names) -> None:
    from raysim.data import datasets

    for name in names:
        for f in datasets()[name].files:
            dst = mirror / name / f.path
            if not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(SHARED / SHARED_COPIES[name] / f.path, dst)


def make_placeholders(folder: Path) -> None:
    from test_gavel_experiment import write_trace

    write_trace(folder / PLACEHOLDERS["<file.trace>"], [(20000, 1, 0.0), (40000, 2, 100.0), (10000, 8, 200.0),
                                                        (5000, 4, 300.0)])


def test_every_script_that_runs_promises_a_figure():
    for s in SCRIPTS:
        assert not s.runs or promise(s) is not None, s.where


@pytest.mark.parametrize("script", [param(s) for s in SCRIPTS])
def test_readme_command_runs_as_written(script, sandbox, tmp_path, request):
    work = run_script(script, sandbox, tmp_path, request,
                      "" if script.text.strip() in AS_WRITTEN else "runtime=local")
    if script.runs:
        keeps_its_promise(script, work)


#: The scripts (a pattern matching one of SCRIPTS) test_readme_promise_holds_in_a_reduced_form runs in
#: the main suite, with the overrides the shim appends to their simulation commands instead of the
#: slow step's; the figure checked is the script's promise.
SMOKE = {
    r"^python -m raysim \+experiment=venus$": "runtime=local",  # the quick start, in-process
    r"\+experiment=hetero_demo": "runtime=local",
    r"\+experiment=openb policy=tiresias placer=fgd": "runtime=local",  # (about 14 s of CPU: slow, below)
}
#: SMOKE rows whose reduced run is slow, as what the main suite still runs covers them: the openb
#: row's experiment runs in test_results_schema (400 pods fetched from a mirror of ../shared, its
#: page), the pods queueing on the filling cluster in test_golden's timed runs (exact), its
#: command's config in test_readme_command_is_well_formed.
SLOW_SMOKE = {r"\+experiment=openb policy=tiresias placer=fgd"}


def smoke_param(pattern: str):
    (script,) = [s for s in SCRIPTS if re.search(pattern, s.text, re.M)]
    marks = [pytest.mark.shared] if set(script.datasets) & set(SHARED_COPIES) else []
    marks += [pytest.mark.slow] if pattern in SLOW_SMOKE else []
    return pytest.param(script, SMOKE[pattern], marks=marks, id=f"{script.where}:{script.text.splitlines()[-1][:60]}")


@pytest.mark.parametrize("script,extra", [smoke_param(p) for p in SMOKE])
def test_readme_promise_holds_in_a_reduced_form(script, extra, sandbox, tmp_path, request):
    """The main suite's run of a few README scripts, each checked as test_readme_command_runs_as_written
    (slow) checks it on its command as written."""
    keeps_its_promise(script, run_script(script, sandbox, tmp_path, request, extra))


def run_script(script: Script, sandbox, tmp_path: Path, request, extra: str) -> Path:
    """Run `script` in a scratch checkout as the module docstring says, `extra` appended to each
    simulation command by the shim; its scratch checkout."""
    bin_, mirror, registry = sandbox
    shared = [d for d in script.datasets if d in SHARED_COPIES]
    if shared:
        request.getfixturevalue("shared_dir")  # skips with a reason without ../shared
        fill_mirror(mirror, shared)
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "traces").symlink_to(REPO / "traces")
    make_placeholders(work)
    text = script.text
    for placeholder, name in PLACEHOLDERS.items():
        text = text.replace(placeholder, name)
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "RAYSIM_DATA": str(tmp_path / "cache"), "RAYSIM_DATA_MIRROR": str(mirror),
           "RAYSIM_DATA_REGISTRY": str(registry), "MPLBACKEND": "Agg", "README_EXTRA": extra}
    env.pop("HYDRA_FULL_ERROR", None)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=work, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, f"{script.where}\n{text}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    return work


# --------------------------------------------------------------------------- the fast check of each script

class _Parsed(Exception):
    """Raised by the patched ArgumentParser.parse_args once a tool's command line is parsed."""


def _tool_args_parse(argv: list[str], monkeypatch) -> None:
    """`raysim <tool> ...` (argv without `raysim`) is accepted by the tool's argument parser; the tool
    itself does not run."""
    import argparse
    import importlib

    from raysim.cli import TOOLS

    assert argv and argv[0] in TOOLS, argv
    original = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        original(self, args, namespace)  # a bad command line exits with status 2 here
        raise _Parsed

    with monkeypatch.context() as m:
        m.setattr(argparse.ArgumentParser, "parse_args", parse_only)
        with pytest.raises(_Parsed):
            importlib.import_module(TOOLS[argv[0]]).main(argv[1:])


def _run_passes_the_config_checks(argv: list[str], as_written: bool) -> None:
    """`python -m raysim <argv>`: every run of it (each combination of a sweep's values), with the
    shim's runtime=local where the shim adds it, composes and passes the run's config checks."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from raysim import cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run.config import check_cluster_config

    args = [a for a in argv if a != "-m"]
    assert all(not a.startswith("-") for a in args), argv
    if not as_written and not any(a.startswith("runtime=") for a in args) and "+experiment=fgd_openb" not in args:
        args.append("runtime=local")  # what the shim appends (see SHIM)
    axes = []
    for override in OverridesParser.create().parse_overrides(args):
        key = override.get_key_element()
        if key.startswith("hydra."):  # (where results go: Hydra's own settings)
            continue
        values = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                  else [override.get_value_element_as_str()])
        axes.append([f"{key}={v}" for v in values])
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        for overrides in itertools.product(*axes):
            cfg = compose(config_name="config", overrides=list(overrides))
            if cfg.mode == "cluster":
                check_cluster_config(cfg)


@pytest.mark.parametrize("script", [param(s, run=False) for s in SCRIPTS])
def test_readme_command_is_well_formed(script, tmp_path, monkeypatch):
    """The main suite's stand-in for test_readme_command_runs_as_written (slow): see the module
    docstring."""
    from raysim.data import datasets

    text = script.text
    for placeholder, name in PLACEHOLDERS.items():
        text = text.replace(placeholder, str(tmp_path / name))
    syntax = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True)
    assert syntax.returncode == 0, (script.where, syntax.stderr)
    assert set(script.datasets) <= set(datasets()), (script.where, script.datasets)
    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path / "cache"))  # data:NAME inputs are resolved by a run, not here
    monkeypatch.chdir(tmp_path)
    for line in commands(text):
        inner = re.findall(r"\$\(([^)]*)\)", line)  # $(raysim data path ...): checked as a command of its own
        for cmd in [*inner, re.sub(r"\$\([^)]*\)", "SUBSTITUTED", line)]:
            words = shlex.split(cmd)
            if words[:3] == ["python", "-m", "raysim"]:
                argv = words[3:]
            elif words[:1] == ["raysim"]:
                argv = words[1:]
            else:
                pytest.fail(f"{script.where}: not a raysim command: {cmd}")
            if argv and argv[0] in TOOLS:
                _tool_args_parse(argv, monkeypatch)
            else:
                _run_passes_the_config_checks(argv, as_written=cmd.strip() in AS_WRITTEN)
