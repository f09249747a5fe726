"""Public datasets by name (raysim/data): the registry, the checksummed cache, mirrors, trust on first
use, interrupted and corrupt downloads, `raysim data ...` and data:NAME inputs. No network: a tiny
registry served from a mirror folder or a local HTTP server in tmp_path; with ../shared, a mirror
made from it runs +experiment=venus_real and fgd_openb through data: names."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import shutil
import tarfile
import threading
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (resolvers)
from raysim.cli import guarded
from raysim.data import DataError, datasets, resolve, store
from raysim.data import cli as data_cli
from raysim.run.data_names import resolve_config
from raysim.paths import CONF_DIR

A = b"job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n1,vcA,u1,1,4,0,100,COMPLETED\n2,vcA,u2,2,4,10,200,COMPLETED\n"
VC = b",num\nvcA,1\n"
NOTE = b"some unpinned notes\n"


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A registry of one dataset 'tiny' (two pinned files, one unpinned in a subfolder), its mirror
    folder and an empty cache; returns the mirror folder."""
    reg = {"datasets": {"tiny": {
        "title": "a tiny trace", "licence": "CC0 (test)", "citation": "nobody, 2026", "source": "tests",
        "reads": "trace.path=data:tiny",
        "files": [{"path": "jobs.csv", "url": "https://example.invalid/jobs.csv", "size": len(A), "sha256": sha(A), "pinned": True},
                  {"path": "vc_config.csv", "url": "https://example.invalid/vc.csv", "size": len(VC), "sha256": sha(VC), "pinned": True},
                  {"path": "more/notes.txt", "url": None, "size": len(NOTE), "sha256": sha(NOTE), "pinned": False}]}}}
    (tmp_path / "registry.yaml").write_text(yaml.safe_dump(reg))
    mirror = tmp_path / "mirror" / "tiny"
    (mirror / "more").mkdir(parents=True)
    (mirror / "jobs.csv").write_bytes(A)
    (mirror / "vc_config.csv").write_bytes(VC)
    (mirror / "more" / "notes.txt").write_bytes(NOTE)
    monkeypatch.setenv("RAYSIM_DATA_REGISTRY", str(tmp_path / "registry.yaml"))
    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("RAYSIM_DATA_MIRROR", str(tmp_path / "mirror"))
    return mirror


def cache_files(tmp_path) -> list[str]:
    root = tmp_path / "cache"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) if root.exists() else []


def data(*argv, capsys):
    """`raysim data ...` in this process: (exit status, stdout, stderr)."""
    code = guarded(lambda: data_cli.main(list(argv)))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fetch_verify_path_and_resolve_from_a_mirror_folder(tiny, tmp_path, capsys):
    code, out, err = data("fetch", "tiny", capsys=capsys)
    assert code == 0, err
    assert "more/notes.txt is not pinned: recorded sha256 " + sha(NOTE) in out
    assert "trusted on first use" in out and "tiny: fetched, verified (3 files" in out
    assert cache_files(tmp_path) == ["tiny/.raysim-manifest.json", "tiny/jobs.csv", "tiny/more/notes.txt",
                                     "tiny/vc_config.csv"]
    assert (tmp_path / "cache" / "tiny" / "jobs.csv").read_bytes() == A
    code, out, _ = data("verify", capsys=capsys)
    assert code == 0 and out.strip() == "tiny: ok (3 files re-hashed)"
    code, out, _ = data("path", "tiny/more", capsys=capsys)
    assert out.strip() == str(tmp_path / "cache" / "tiny" / "more")
    code, out, _ = data("list", capsys=capsys)
    assert "tiny  148 B  cached  partly pinned" in out and "licence: CC0 (test)" in out and "cite: nobody" in out
    assert resolve("data:tiny/jobs.csv", "trace.path") == str(tmp_path / "cache" / "tiny" / "jobs.csv")
    assert resolve("/some/where") == "/some/where"  # anything else is left alone


def test_a_changed_byte_is_refused_in_one_line_and_not_cached(tiny, tmp_path, capsys):
    (tiny / "jobs.csv").write_bytes(A.replace(b"vcA", b"vcB", 1))
    code, out, err = data("fetch", "tiny", capsys=capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("raysim: error: dataset 'tiny': jobs.csv from ")
    assert f"not the pinned {sha(A)}: refused, nothing cached" in lines[0]
    assert "tiny/jobs.csv" not in cache_files(tmp_path)
    assert [f for f in cache_files(tmp_path) if "tmp" in f] == []
    assert store.status(datasets()["tiny"]) != "cached"


def test_an_interrupted_download_leaves_nothing_in_the_cache(tiny, tmp_path, monkeypatch):
    real = store.CopyFrom.__call__

    def half_then_ctrl_c(self, url, output_file, pooch):
        real(self, url, output_file, pooch)
        if url.endswith("vc_config.csv"):
            Path(output_file).write_bytes(VC[:5])
            raise KeyboardInterrupt

    monkeypatch.setattr(store.CopyFrom, "__call__", half_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        store.fetch(datasets()["tiny"])
    left = cache_files(tmp_path)
    assert "tiny/vc_config.csv" not in left and not [f for f in left if "tmp" in f]
    assert set(json.loads((tmp_path / "cache" / "tiny" / ".raysim-manifest.json").read_text())["files"]) == {"jobs.csv"}
    with pytest.raises(DataError, match="dataset 'tiny' is not cached"):
        resolve("data:tiny")
    monkeypatch.setattr(store.CopyFrom, "__call__", real)
    store.fetch(datasets()["tiny"])  # the next fetch completes it
    assert store.problems(datasets()["tiny"], rehash=True) == []


class _Server:
    """A local HTTP mirror: serves `root`; paths in `cut` send half their bytes and hang up."""

    def __init__(self, root: Path, cut=()):
        root, cut = Path(root), set(cut)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                path = root / self.path.lstrip("/")
                if not path.is_file():
                    self.send_error(404)
                    return
                body = path.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if self.path.lstrip("/") in cut else body)
                self.wfile.flush()
                if self.path.lstrip("/") in cut:
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_an_http_mirror_and_a_download_cut_off_midway(tiny, tmp_path, monkeypatch, capsys):
    server = _Server(tiny.parent, cut={"tiny/vc_config.csv"})
    try:
        monkeypatch.setenv("RAYSIM_DATA_MIRROR", server.url)
        code, _, err = data("fetch", "tiny", capsys=capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert err.startswith("raysim: error: dataset 'tiny': ") and "vc_config.csv" in err
        assert "tiny/vc_config.csv" not in cache_files(tmp_path) and not [f for f in cache_files(tmp_path) if "tmp" in f]
    finally:
        server.close()
    server = _Server(tiny.parent)
    try:
        monkeypatch.setenv("RAYSIM_DATA_MIRROR", server.url)
        code, out, err = data("fetch", "tiny", capsys=capsys)
        assert code == 0, err
        manifest = json.loads((tmp_path / "cache" / "tiny" / ".raysim-manifest.json").read_text())
        assert manifest["files"]["vc_config.csv"]["source"] == f"{server.url}/tiny/vc_config.csv"
    finally:
        server.close()


def test_verify_reports_deleted_files_as_missing(tiny, tmp_path, capsys):
    """A cached file deleted by hand fails `raysim data verify`, with or without names, even when it
    was the dataset's last file (its manifest still records it: it is not merely "not cached")."""
    assert data("fetch", "tiny", capsys=capsys)[0] == 0
    folder = tmp_path / "cache" / "tiny"
    (folder / "jobs.csv").unlink()
    code, out, err = data("verify", capsys=capsys)
    assert code == 2 and "tiny: jobs.csv: missing from the cache" in out and "failed verification" in err
    for path in ("vc_config.csv", "more/notes.txt"):
        (folder / path).unlink()
    for argv in ([], ["tiny"]):
        code, out, err = data("verify", *argv, capsys=capsys)
        assert code == 2, out
        assert out.splitlines() == [f"tiny: {p}: missing from the cache" for p in ("jobs.csv", "vc_config.csv",
                                                                                    "more/notes.txt")]
        assert err.count("\n") == 1 and "1 dataset(s) failed verification" in err
    code, out, _ = data("list", capsys=capsys)
    assert code == 0 and "damaged (3 recorded files missing: raysim data fetch tiny)" in out, out


def _entry(m):
    return m["files"]["jobs.csv"]


@pytest.mark.parametrize("mangle, fragment", [
    (lambda m: "not json {", "not JSON"),  # (these passed as "no dataset is cached")
    (lambda m: "", "not JSON"),
    (lambda m: [], "expected an object of files"),  # (an AttributeError traceback)
    (lambda m: m.update(files=[]), "files: expected an object"),
    (lambda m: m["files"].update({"jobs.csv": "x"}), "files['jobs.csv']: expected an object"),
    (lambda m: _entry(m).update(sha256=5), "files['jobs.csv'].sha256: expected str"),  # (a TypeError traceback)
    (lambda m: _entry(m).update(sha256=_entry(m)["sha256"][:40]), "expected 64 hex digits"),
    (lambda m: _entry(m).update(sha256="sha256:" + _entry(m)["sha256"]), "expected 64 hex digits"),
    (lambda m: _entry(m).pop("size") and None, "files['jobs.csv'].size: expected a whole number >= 0, not None"),  # (all
    (lambda m: _entry(m).update(size="96"), "files['jobs.csv'].size: expected a whole number"),  # these passed)
    (lambda m: _entry(m).update(evil=1), "files['jobs.csv']: unknown key 'evil'"),
    (lambda m: m.update(evil=1), "expected an object of files (and unpacked)"),
    (lambda m: m["files"].update({"../../outside.csv": dict(_entry(m))}), "not a path inside the dataset's folder"),
    (lambda m: m["files"].update({"/etc/hostname": dict(_entry(m))}), "not a path inside the dataset's folder"),
    (lambda m: json.dumps(m).replace('"files": {', '"files": {"jobs.csv": {}, ', 1), "'jobs.csv' is given twice"),
    (lambda m: b"\xff\xfe{}", "can't decode byte 0xff"),
])
def test_a_mangled_manifest_fails_verification_in_one_line_and_a_fetch_rewrites_it(tiny, tmp_path, capsys, mangle,
                                                                                  fragment):
    assert data("fetch", "tiny", capsys=capsys)[0] == 0
    path = tmp_path / "cache" / "tiny" / ".raysim-manifest.json"
    manifest = json.loads(path.read_text())
    (tmp_path / "outside.csv").write_bytes(A)  # (what ../../outside.csv names: its hash is jobs.csv's)
    mangled = mangle(manifest)
    mangled = json.dumps(manifest) if mangled is None else mangled if isinstance(mangled, (str, bytes)) else \
        json.dumps(mangled)
    (path.write_bytes if isinstance(mangled, bytes) else path.write_text)(mangled)
    for argv in ([], ["tiny"]):
        code, out, err = data("verify", *argv, capsys=capsys)
        assert code == 2 and out.startswith(f"tiny: {path}: not a raysim data manifest: ") and fragment in out, out
        assert out.count("\n") == 1 and "1 dataset(s) failed verification" in err
    with pytest.raises(DataError, match="is not cached: run `raysim data fetch tiny`"):
        resolve("data:tiny")  # (a mangled manifest records nothing)
    assert data("fetch", "tiny", capsys=capsys)[0] == 0
    assert data("verify", capsys=capsys)[:2] == (0, "tiny: ok (3 files re-hashed)\n")


def test_unpinned_files_are_trusted_on_first_use_then_checked(tiny, tmp_path, capsys):
    other = b"other notes\n"
    (tiny / "more" / "notes.txt").write_bytes(other)
    code, out, _ = data("fetch", "tiny", capsys=capsys)
    assert code == 0
    assert f"recorded sha256 {sha(other)} on first download, trusted on first use" in out
    assert f"WARNING: this differs from the copy raysim was tested with (sha256 {sha(NOTE)})" in out
    assert resolve("data:tiny/more/notes.txt").endswith("notes.txt")
    cached = tmp_path / "cache" / "tiny" / "more" / "notes.txt"
    cached.write_bytes(b"tampered\n")
    with pytest.raises(DataError, match=r"^dataset 'tiny' in the cache is damaged \(more/notes.txt: sha256 .* does "
                                        r"not match the recorded .*raysim data fetch tiny"):
        resolve("data:tiny")
    code, out, err = data("verify", "tiny", capsys=capsys)
    assert code == 2 and "tiny: more/notes.txt: sha256" in out and "failed verification" in err
    assert data("fetch", "tiny", capsys=capsys)[0] == 0  # fetched again, trusted again
    assert cached.read_bytes() == other


def test_unknown_names_and_missing_datasets_are_one_line(tiny, tmp_path, capsys):
    with pytest.raises(DataError, match=r"^trace.path: unknown dataset 'nope' \(known: tiny\)$"):
        resolve("data:nope", "trace.path")
    code, _, err = data("fetch", "tiny", "nope", capsys=capsys)
    assert code == 2 and err == "raysim: error: unknown dataset 'nope' (known: tiny)\n"
    assert cache_files(tmp_path) == []  # every name checked before anything is downloaded
    with pytest.raises(DataError, match=r"^estimator.path: dataset 'tiny' is not cached: run `raysim data fetch tiny` "
                                        r"\(148 B, licence: CC0 \(test\)\), or set data.auto_fetch=true$"):
        resolve("data:tiny/jobs.csv", "estimator.path")
    (tiny / "jobs.csv").unlink()
    code, _, err = data("fetch", "tiny", capsys=capsys)
    assert code == 2 and "jobs.csv is not in the mirror" in err


def test_no_public_copy_needs_a_mirror(tiny, monkeypatch):
    monkeypatch.delenv("RAYSIM_DATA_MIRROR")
    ds = datasets()["tiny"]
    assert store.source_of(ds, ds.file("jobs.csv")) == "https://example.invalid/jobs.csv"
    with pytest.raises(DataError, match="more/notes.txt has no public download .* set RAYSIM_DATA_MIRROR"):
        store.source_of(ds, ds.file("more/notes.txt"))


def test_a_run_config_resolves_data_names_and_auto_fetches(tiny, tmp_path):
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"data": {"auto_fetch": False}, "trace": {"path": "data:tiny", "vc_config": None},
                            "x": {"files": ["data:tiny/vc_config.csv", "plain"], "dir": "data:tiny/more",
                                  "inside": "${.dir}/notes.txt"}})
    with pytest.raises(DataError, match="^trace.path: dataset 'tiny' is not cached"):
        resolve_config(cfg)
    cfg.data.auto_fetch = True
    used = resolve_config(cfg)
    root = tmp_path / "cache" / "tiny"
    assert cfg.trace.path == str(root) and cfg.x.files[0] == str(root / "vc_config.csv") and cfg.x.files[1] == "plain"
    assert cfg.x.inside == str(root / "more" / "notes.txt")
    assert [(u["key"], u["dataset"]) for u in used][:2] == [("trace.path", "tiny"), ("x.files[0]", "tiny")]
    assert used[0]["files"][0] == {"file": "jobs.csv", "sha256": sha(A), "pinned": True}
    assert {"file": "more/notes.txt", "sha256": sha(NOTE), "pinned": False} in used[0]["files"]


def test_a_run_records_the_datasets_it_read(tiny, tmp_path):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["trace.path=data:tiny/jobs.csv", "runtime=local",
                                                       "trace.cache=false", "data.auto_fetch=true"])
    from raysim.run import run

    run(cfg, tmp_path / "run")
    report = json.loads((tmp_path / "run" / "trace_report.json").read_text())
    assert report["jobs"] == 2
    assert report["datasets"] == [{"key": "trace.path", "value": "data:tiny/jobs.csv", "dataset": "tiny",
                                   "path": str(tmp_path / "cache" / "tiny" / "jobs.csv"),
                                   "files": [{"file": "jobs.csv", "sha256": sha(A), "pinned": True}]}]


def test_the_shipped_registry_is_complete_and_honest():
    reg = datasets()
    for name in ("venus", "lucid_profiles", "openb", "gavel_throughputs", "summit_nodes", "helios", "philly", "pai",
                 "sia_profiles", "sia_workloads"):
        assert name in reg, name
    assert len(reg["openb"].files) == 26 and reg["openb"].pinned == "pinned"
    venus = {f.path for f in reg["venus"].files}
    assert {"cluster_full_log.csv", "vc_config.csv", "cluster_throughput.csv", "lucid_artifacts/duration_estimates_ebm.csv",
            "lucid_artifacts/throughput_forecast.csv"} <= venus
    for ds in reg.values():
        assert ds.licence and ds.citation and ds.title and ds.reads, ds.name
        for f in ds.files:
            assert not f.pinned or (f.sha256 and len(f.sha256) == 64), (ds.name, f.path)
            assert f.url is None or "/master/" not in f.url and "/main/" not in f.url, f.url  # pinned to commits
    text = (Path(store.__file__).with_name("registry.yaml")).read_text()
    assert "shared" not in text.replace("shared with", "")


def test_no_config_default_names_the_shared_folder():
    for path in Path(CONF_DIR).rglob("*.yaml"):
        text = path.read_text()
        assert "RAYSIM_SHARED" not in text and "../shared" not in text, path


# --------------------------------------------------------------------------- with ../shared: the real files

#: dataset -> folder of ../shared holding its files under the same relative paths
SHARED_COPIES = {"venus": "traces/venus_sept", "lucid_profiles": "profiles", "openb": "traces/alibaba_gpu_2023",
                 "gavel_throughputs": "references/gavel", "summit_nodes": "harvest",
                 "sia_profiles": "references/sia/profiles", "sia_workloads": "references/sia/workloads",
                 "alibaba_spot_nodes": "traces/cluster-trace-v2026-spot-gpu"}


def shared_mirror(shared_dir: Path, out: Path, names) -> Path:
    """A mirror folder (<mirror>/<dataset>/<file>) made of ../shared's copies."""
    for name in names:
        for f in datasets()[name].files:
            dst = out / name / f.path
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shared_dir / SHARED_COPIES[name] / f.path, dst)
    return out


@pytest.mark.shared
def test_the_registry_hashes_are_those_of_the_shared_copies(shared_dir):
    for name, sub in SHARED_COPIES.items():
        for f in datasets()[name].files:
            p = shared_dir / sub / f.path
            assert p.stat().st_size == f.size and store.sha256_of(p) == f.sha256, (name, f.path)


def venus_and_fgd_from_a_mirror(shared_dir, tmp_path, monkeypatch, capsys):
    """The configs of +experiment=venus_real (SRTF, Lucid's semantics) and +experiment=fgd_openb,
    their data: names fetched and verified from a mirror of ../shared into a cache under tmp_path."""
    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("RAYSIM_DATA_MIRROR", str(shared_mirror(shared_dir, tmp_path / "mirror", ["venus", "openb"])))
    code, out, err = data("fetch", "venus", "openb", capsys=capsys)
    assert code == 0, err
    assert data("verify", capsys=capsys)[1].splitlines() == ["venus: ok (6 files re-hashed)", "openb: ok (26 files re-hashed)"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        venus = compose(config_name="config", overrides=["+experiment=venus_real", "runtime=local", "policy=srtf",
                                                         "sim.compat=lucid"])
        fgd = compose(config_name="config", overrides=["+experiment=fgd_openb", "fgd.plots=false"])
    assert venus.trace.path == "data:venus" and fgd.fgd.data_dir == "data:openb"
    return venus, fgd


@pytest.mark.shared
def test_venus_real_and_fgd_openb_resolve_from_a_mirror_through_data_names(shared_dir, tmp_path, monkeypatch,
                                                                           capsys):
    """The fast stand-in of the test below (whose two runs, the whole Venus trace and FGD's
    experiment, are slow): fetched and verified from a mirror, both experiments' data: names
    resolve to the cache and name the files read, with their hashes."""
    venus, fgd = venus_and_fgd_from_a_mirror(shared_dir, tmp_path, monkeypatch, capsys)
    used = {u["key"]: u for u in resolve_config(venus)}
    assert venus.trace.path == str(tmp_path / "cache" / "venus") and used["trace.path"]["dataset"] == "venus"
    full_log = next(f for f in used["trace.path"]["files"] if f["file"] == "cluster_full_log.csv")
    assert full_log == {"file": "cluster_full_log.csv", "sha256": datasets()["venus"].file("cluster_full_log.csv").sha256,
                        "pinned": False}
    assert [u["dataset"] for u in resolve_config(fgd)] == ["openb"] and fgd.fgd.data_dir == str(tmp_path / "cache" / "openb")


@pytest.mark.shared
@pytest.mark.slow
def test_venus_real_and_fgd_openb_run_from_a_mirror_through_data_names(shared_dir, tmp_path, monkeypatch, capsys):
    from raysim.run import run

    venus, fgd = venus_and_fgd_from_a_mirror(shared_dir, tmp_path, monkeypatch, capsys)
    row = run(venus, tmp_path / "venus")
    assert (int(row["avg_jct"]), int(row["avg_queue"])) == (12609, 829)  # the reference's SRTF (docs/lucid.md)
    report = json.loads((tmp_path / "venus" / "trace_report.json").read_text())
    used = {u["key"]: u for u in report["datasets"]}
    assert used["trace.path"]["dataset"] == "venus"
    full_log = next(f for f in used["trace.path"]["files"] if f["file"] == "cluster_full_log.csv")
    assert full_log == {"file": "cluster_full_log.csv", "sha256": datasets()["venus"].file("cluster_full_log.csv").sha256,
                        "pinned": False}
    row = run(fgd, tmp_path / "fgd")
    assert row["arrivals"] > 8000 and 90 < row["allo_100"] <= 100
    assert json.loads((tmp_path / "fgd" / "trace_report.json").read_text())["datasets"][0]["dataset"] == "openb"


def targz(members: dict[str, bytes]) -> bytes:
    """A .tar.gz holding `members` (name -> bytes)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            t.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def test_archives_are_verified_then_unpacked_and_their_members_checked(tmp_path, monkeypatch):
    good, evil = targz({"trace-data/cluster_job_log": b"[]\n"}), targz({"../evil.txt": b"x"})
    reg = {"datasets": {name: {"title": name, "licence": "test", "citation": "test", "source": "test", "reads": "test",
                               "files": [{"path": "t.tar.gz", "url": None, "size": len(body), "sha256": sha(body),
                                          "pinned": True, "unpack": "tar.gz"}]}
                        for name, body in (("arch", good), ("evil", evil))}}
    (tmp_path / "registry.yaml").write_text(yaml.safe_dump(reg))
    for name, body in (("arch", good), ("evil", evil)):
        (tmp_path / "mirror" / name).mkdir(parents=True)
        (tmp_path / "mirror" / name / "t.tar.gz").write_bytes(body)
    monkeypatch.setenv("RAYSIM_DATA_REGISTRY", str(tmp_path / "registry.yaml"))
    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("RAYSIM_DATA_MIRROR", str(tmp_path / "mirror"))
    member = Path(resolve("data:arch/trace-data/cluster_job_log", auto_fetch=True))
    assert member.read_bytes() == b"[]\n"
    member.write_bytes(b"[1]\n")
    assert store.problems(datasets()["arch"])[0].startswith("trace-data/cluster_job_log: sha256 ")
    store.fetch(datasets()["arch"])  # the archive is fetched and unpacked again
    assert member.read_bytes() == b"[]\n" and store.problems(datasets()["arch"], rehash=True) == []
    with pytest.raises(DataError, match="'../evil.txt' would be written outside the dataset's folder"):
        store.fetch(datasets()["evil"])
    assert not (tmp_path / "cache" / "evil.txt").exists() and not (tmp_path / "cache" / "evil" / "t.tar.gz").exists()
