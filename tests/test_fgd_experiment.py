"""+experiment=fgd_openb: the Hydra route into one inflation run, its files, and the sweep summary."""

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.errors import ConfigError
from raysim.paths import CONF_DIR
from raysim.run import run
from raysim.report.fgd import summarize_fgd_sweep

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"openb-node-{i:04d},32000,131072,{g},{m}\n" for i, (g, m) in enumerate([(8, "V100M16"), (4, "T4"), (2, "T4")] * 10))
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" + \
    "".join(f"openb-pod-{i:04d},{c},1024,{n},{m},,LS,Running,{i},1000,{i}\n"
            for i, (c, n, m) in enumerate([(2000, 1, 500), (4000, 1, 1000), (8000, 2, 1000), (1000, 1, 250),
                                           (6000, 4, 1000), (3000, 1, 700), (500, 0, 0)]))


def composed(tmp_path, *overrides):
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(NODES)
    (tmp_path / "openb_pod_list_default.csv").write_text(PODS)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=["+experiment=fgd_openb", f"fgd.data_dir={tmp_path}",
                                                        *overrides])


def test_one_run_writes_the_reference_layout(tmp_path):
    cfg = composed(tmp_path, "fgd.policy=bestfit", "seed=3")
    row = run(cfg, tmp_path / "out")
    allo = pd.read_csv(tmp_path / "out" / "allo.csv")
    assert list(allo.columns[:5]) == ["workload", "sc_policy", "tune", "seed", "total_gpus"]
    assert list(allo.columns[5:]) == [str(p) for p in range(131)]
    assert (allo.at[0, "sc_policy"], allo.at[0, "seed"], allo.at[0, "total_gpus"]) == ("05-BestFit", 3, 140)
    assert row["allo_130"] == allo.at[0, "130"] and 0 < row["allo_130"] <= 100
    assert allo.iloc[0, 5:].notna().all()  # every percent 0..130 has a value
    assert (tmp_path / "out" / "frag_ratio.csv").exists() and (tmp_path / "out" / "plots" / "fgd_curves.png").exists()
    html = (tmp_path / "out" / "report.html").read_text()  # the run's page: its summary row and its curves
    assert 'id="fgd_allo"' in html and 'id="fgd_frag_ratio"' in html and "05-BestFit" in html
    from raysim.report.cli import main as report

    (tmp_path / "out" / "report.html").unlink()
    assert report([str(tmp_path / "out")]) == 0 and (tmp_path / "out" / "report.html").exists()


def test_a_tune_beyond_ten_times_the_cluster_is_one_line(tmp_path):
    """fgd.tune=1e300 drew pods until memory ran out; it stops at 10 (the curves end at 1.3)."""
    cfg = composed(tmp_path, "fgd.tune=1e300")
    with pytest.raises(ConfigError, match=r"^fgd\.tune: must be at most 10 \(value 1e\+300\)$"):
        run(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_sweep_summary_averages_seeds_per_policy(tmp_path):
    sweep = tmp_path / "sweep"
    for i, (policy, seed) in enumerate([("fgd", 1), ("fgd", 2), ("random", 1)]):
        run(composed(tmp_path, f"fgd.policy={policy}", f"seed={seed}"), sweep / str(i))
    table = summarize_fgd_sweep(sweep)
    assert table.set_index("sc_policy")["seeds"].to_dict() == {"06-FGD": 2, "01-Random": 1}
    allo = pd.read_csv(sweep / "analysis_allo_discrete.csv")
    assert len(allo) == 3 and (sweep / "fgd_sweep.md").exists() and (sweep / "plots" / "fgd_curves.png").exists()


def test_raysim_report_summarises_an_fgd_sweep(tmp_path, capsys):
    """`raysim report <multirun>` on an FGD sweep: sweep_summary.csv/.md, the FGD curves and plots,
    and the table printed as sweep_summary.md shows it, with its units."""
    from raysim.report.cli import main as report

    sweep = tmp_path / "sweep"
    for i, policy in enumerate(["fgd", "bestfit"]):
        run(composed(tmp_path, f"fgd.policy={policy}", "seed=1"), sweep / str(i))
    capsys.readouterr()
    assert report([str(sweep)]) == 0
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert sorted(table.sc_policy) == ["05-BestFit", "06-FGD"]
    assert (sweep / "sweep_summary.md").exists() and (sweep / "plots" / "fgd_curves.png").exists()
    assert (sweep / "plots" / "sweep_metrics.png").exists()
    printed = capsys.readouterr().out
    assert printed.startswith("| run | workload | sc_policy | seed | arrivals | failed | allo_100 |")
    assert "allo_100, allo_130: % of GPUs allocated; frag_ratio_100, frag_ratio_130: % of idle" in printed
    assert printed.split("\n\n")[0] in (sweep / "sweep_summary.md").read_text()
    html = (sweep / "report.html").read_text()  # the sweep's page: its table, bars per result, the curves
    for chart in ("metric_allo_100", "metric_frag_ratio_130", "fgd_allo", "fgd_frag_ratio"):
        assert f'id="{chart}"' in html
    assert f"{table.allo_130[0]:.3g}" in html
