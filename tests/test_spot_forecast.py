"""A spot quota from a forecast of high-priority demand (`spot.quota_from`, raysim.run.spot_forecast,
docs/spot.md): the quota's changes hand-computed from a file, the oracle and the estimator, a spot
job that waits for the quota to rise, one the fall does not evict, and bad input refused in one line."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from simutil import assert_same_on_ray, batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)
from test_spot import configured, run_cli, trace_with_classes

from raysim.errors import ConfigError, TraceError
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.run.spot_forecast import DAY_S, demand_steps, forecast_peaks, quota_steps
from raysim.sim import SimParams, VCSimulator
from raysim.sim.spot import Spot

HP, SPOT = 0, 1


def steps(source, jobs, gpus=16, horizon=600, interval=300, scale=1.0):
    """The quota's changes of one VC of `gpus` GPUs whose HP jobs are `jobs` (submit, duration, GPUs)."""
    submit, duration, asks = (np.array(c, dtype=np.int64) for c in zip(*jobs))
    grid, peaks = forecast_peaks(source, *demand_steps(submit, duration, asks), horizon, interval, int(submit.min()))
    return quota_steps(gpus, grid, peaks, scale)


def test_the_oracle_leaves_out_the_peak_demand_of_the_next_horizon():
    # an HP job of 6 GPUs over [1000, 2000): every window [t, t + 600) from t = 600 to 1800 meets it
    assert steps("oracle", [(1000, 1000, 6)]) == ((600, 10), (2100, 16))
    # GFS's safety factor: half the GPUs left, rounded down; 11 GPUs asked: floor(0.5 x 5) = 2
    assert steps("oracle", [(1000, 1000, 11)], scale=0.5) == ((600, 2), (2100, 8))


def test_the_estimator_reads_the_demand_now_and_a_day_earlier():
    # now: 6 from the first grid time in [1000, 2000) (1200) to the first after it (2100); a day
    # later the window [t - 1 day, t - 1 day + 600) meets [1000, 2000) from t = 87000 to 88200
    assert steps("estimate", [(1000, 1000, 6)]) == ((900, 16), (1200, 10), (2100, 16), (DAY_S + 600, 10),
                                                    (DAY_S + 2100, 16))


@pytest.mark.parametrize("source", ["oracle", "estimate"])
def test_the_changes_are_those_of_every_grid_time(source):
    """Computed at the grid times where the demand may change only, the quota is the one of every grid time."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        jobs = [(int(s), int(d), int(g)) for s, d, g in zip(rng.integers(0, 900, 6), rng.integers(0, 400, 6),
                                                             rng.integers(1, 9, 6))]
        horizon, interval = int(rng.integers(1, 200)), int(rng.integers(1, 100))
        changes = steps(source, jobs, horizon=horizon, interval=interval)

        def demand(t):
            return sum(g for s, d, g in jobs if s <= t < s + d)

        def quota(t):
            if source == "oracle":
                peak = max(demand(x) for x in range(t, t + horizon))
            else:
                peak = max(demand(t), max(demand(x) for x in range(t - DAY_S, t - DAY_S + horizon)))
            return 16 - min(peak, 16)

        times = np.array([t for t, _ in changes])
        for t in range(changes[0][0], DAY_S + 1500, interval):
            if 1500 < t < DAY_S:
                continue
            assert changes[int(np.searchsorted(times, t, side="right")) - 1][1] == quota(t)


def simulated(jobs, classes, quota, nodes=1):
    """Results per job of one VC of `nodes` 8-GPU nodes under FIFO with the spot quota `quota`."""
    params = SimParams.for_mode("clean")
    sim = VCSimulator("vc", pools(nodes), make_policy("fifo", params=params), make_placer("consolidate", params=params),
                      params, extensions=[Spot(quota=quota)])
    cols = batch(jobs)
    cols["spot"] = np.array(classes, dtype=np.int64)
    sim.add_jobs(cols)
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}, sim.events


def test_a_spot_job_waits_for_the_quota_to_rise_and_a_fall_evicts_nobody():
    # the quota: 2 GPUs from 0, 8 from 1200, 0 from 3000
    quota = ((0, 2), (1200, 8), (3000, 0))
    r, events = simulated([(0, 100, 2), (100, 500, 4), (2000, 2000, 4), (3500, 10, 1)], [SPOT] * 4, quota)
    # job 0 fits the 2 GPUs; job 1 (4) waits on a free node until the quota rises at 1200; job 2
    # starts at 2000 and runs on past the fall at 3000 (not evicted); job 3 waits past the run's
    # end of the quota's changes (0 GPUs: it never starts)
    assert r["start_time"][:3] == [0, 1200, 2000] and r["end_time"][:3] == [100, 1700, 4000]
    assert r["evictions"] == [0, 0, 0, 0] and r["start_time"][3] == r["end_time"][3] == -1
    assert events == 7  # (0, 100, 1200: the rise, 1700, 2000, 3500, 4000; none at the fall)


def test_no_wake_at_a_rise_nobody_waits_for():
    _, with_rise = simulated([(0, 100, 2), (5000, 10, 2)], [SPOT, SPOT], ((0, 2), (1200, 8), (1500, 2)))
    _, fixed = simulated([(0, 100, 2), (5000, 10, 2)], [SPOT, SPOT], 2)
    assert with_rise == fixed == 4


# ----------------------------------------------------------------------------------- the command line
#: One 8-GPU node: spot jobs of 2 GPUs at 0 (100 s) and of 4 GPUs at 100 (500 s), an HP job of 2 at 50.
JOBS = [(0, 100, 2), (50, 3000, 2), (100, 500, 4)]


def forecast_file(tmp_path, rows: str) -> str:
    path = tmp_path / "forecast.csv"
    path.write_text("vc,time,hp_gpus\n" + rows)
    return str(path)


def test_a_file_forecast_holds_a_spot_job_until_the_quota_rises(tmp_path):
    trace = trace_with_classes(tmp_path, ["spot", "hp", "spot"], JOBS)
    # HP demand 6 until 1000, then 0: windows [t, t + 300) meet it until t = 900, so the quota is 2
    # GPUs until 1200 and 8 from then on; the spot job of 4 waits beside 4 free GPUs until 1200
    forecast = forecast_file(tmp_path, "a,0,6\na,1000,0.0\n")
    out = run_cli(tmp_path, trace, "spot.quota_from=file", f"spot.quota_file={forecast}", "spot.quota_horizon_s=300")
    jobs = pq.read_table(out / "jobs.parquet").to_pandas()
    assert jobs.start_time.tolist() == [0, 50, 1200] and jobs.end_time.tolist() == [100, 3050, 1700]
    # without the forecast it starts at once
    jobs = pq.read_table(run_cli(tmp_path, trace) / "jobs.parquet").to_pandas()
    assert jobs.start_time.tolist() == [0, 50, 100]


def test_the_oracle_and_the_estimator_from_the_command_line(tmp_path):
    # the HP job (2 GPUs, [50, 3050)); the spot job of 4 GPUs arrives at 400
    trace = trace_with_classes(tmp_path, ["spot", "hp", "spot"], [(0, 100, 2), (50, 3000, 2), (400, 500, 4)])
    # the oracle: 6 GPUs until 3300 (every window [t, t + 3600) before meets the HP job), 2 + 4 fit
    out = run_cli(tmp_path, trace, "spot.quota_from=oracle")
    assert pq.read_table(out / "jobs.parquet").column("start_time").to_pylist() == [0, 50, 400]
    # the estimator sees the HP job from the grid time 300 to 3000: half of 8 - 2, 3 GPUs, until 3300
    out = run_cli(tmp_path, trace, "spot.quota_from=estimate", "spot.quota_scale=0.5")
    assert pq.read_table(out / "jobs.parquet").column("start_time").to_pylist() == [0, 50, 3300]


@pytest.mark.parametrize("rows, says", [
    ("a,0,6\na,100,-1\n",
     r"forecast.csv, row 2 \(line 3\), column 'hp_gpus': not a number of GPUs >= 0 \(value '-1'\)"),
    ("a,0,6\nb,100,1\n", r"forecast.csv, row 2 \(line 3\), column 'vc': not a VC of the run \(one of a\)"),
    ("a,0.5,6\n", r"forecast.csv, row 1 \(line 2\), column 'time': not a whole number of seconds"),
    ("a,0,6\na,0,2\n", r"forecast.csv, row 2 \(line 3\), column 'time': a second row for this VC and time"),
    ("a,,6\n", r"row 1 \(line 2\), column 'time'"),
])
def test_a_bad_forecast_row_is_one_line_naming_file_row_and_column(tmp_path, rows, says):
    trace = trace_with_classes(tmp_path, ["spot", "hp", "spot"], JOBS)
    with pytest.raises(TraceError, match=says) as err:
        run_cli(tmp_path, trace, "spot.quota_from=file", f"spot.quota_file={forecast_file(tmp_path, rows)}")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("overrides, key, says", [
    (["spot.quota_from=forecast"], "spot.quota_from", ""),
    (["spot.quota_from=file"], "spot.quota_file", "needs one"),
    (["spot.quota_file=x.csv"], "spot.quota_file", "goes with spot.quota_from=file"),
    (["spot.quota_from=oracle", "spot.quota_gpus=4"], "spot.quota_gpus", "does not go with spot.quota_from=oracle"),
    (["spot.quota_interval_s=60"], "spot.quota_interval_s", "forecast quota only"),
    (["spot.quota_from=oracle", "spot.quota_interval_s=0"], "spot.quota_interval_s", ""),
    (["spot.quota_from=oracle", "spot.quota_horizon_s=100000"], "spot.quota_horizon_s", ""),
    (["spot.quota_from=oracle", "spot.quota_scale=1.5"], "spot.quota_scale", ""),
    (["spot.quota_from=oracle", "spot.quota_scale=0.25"], "spot.quota_scale",
     "VC a's spot quota is 2 GPUs once its forecast is over, below its largest spot job's 4"),
])
def test_bad_forecast_settings_are_one_line_naming_the_key(tmp_path, overrides, key, says):
    trace = trace_with_classes(tmp_path, ["spot", "hp", "spot"], JOBS)
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, trace, *overrides)
    assert err.value.key == key and says in str(err.value) and "\n" not in str(err.value)


def test_a_missing_vc_in_the_file_is_one_line(tmp_path):
    trace = trace_with_classes(tmp_path, ["spot", "hp", "spot"], JOBS)
    (tmp_path / "vc_config.csv").write_text(",num\na,1\nb,1\n")
    with pytest.raises(TraceError, match="column 'vc': no rows for VC b"):
        run_cli(tmp_path, trace, "spot.quota_from=file", "spot.quota_file=" + forecast_file(tmp_path, "a,0,1\n"))


@pytest.mark.slow
@pytest.mark.parametrize("source", ["oracle", "estimate"])
def test_ray_gives_the_local_results(ray_local, tmp_path, source):  # noqa: F811
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config

    rng = np.random.default_rng(11)
    jobs = [(int(s), int(rng.integers(100, 5000)), int(rng.choice([1, 2, 4])))
            for s in np.sort(rng.integers(0, 200_000, 200))]
    trace = trace_with_classes(tmp_path, [rng.choice(["hp", "spot"]) for _ in jobs], jobs)
    (tmp_path / "vc_config.csv").write_text(",num\na,1\nb,1\n")
    text = (tmp_path / "jobs.csv").read_text().splitlines()
    (tmp_path / "jobs.csv").write_text("\n".join([text[0]] + [line.replace(",a,", ",b,", 1) if i % 2 else line
                                                              for i, line in enumerate(text[1:])]) + "\n")
    cfg = configured(trace, f"spot.quota_from={source}", "spot.quota_scale=0.5", "runtime.window_s=3600")
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    assert_same_on_ray(tmp_path, loaded, spec, extra, files=("jobs.parquet",))
    fixed = dict(spec.spot.quota)
    assert set(fixed) == {"a", "b"} and all(len(changes) > 2 for changes in fixed.values())
