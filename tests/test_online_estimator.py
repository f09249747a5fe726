"""Duration estimates learned during the run: no future information, deterministic, runtime-independent."""

import numpy as np
import pytest
from test_invariants import synthetic_trace

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.run.simulate import simulate
from raysim.models.online import PeriodicDurationEstimator
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams

WEEK = 7 * 86_400


def long_trace():
    trace, _ = synthetic_trace(seed=9, n=900)
    # spread the jobs over three weeks
    import pyarrow as pa

    submit = np.sort(np.random.default_rng(1).integers(0, 3 * WEEK, trace.table.num_rows))
    table = trace.table.set_column(trace.table.schema.get_field_index("submit_time"), "submit_time", pa.array(submit))
    return type(trace)(table, trace.vc_nodes, trace.report, trace.source)


def test_only_jobs_finished_before_the_period_train_its_model():
    trace = long_trace()
    submit = trace.table.column("submit_time").to_numpy()
    lo, hi = np.searchsorted(submit, [WEEK, 2 * WEEK])
    seq = np.arange(lo)
    end = submit[:lo] + 100
    est_a = PeriodicDurationEstimator(trace.table, "0", kind="lightgbm")
    a = est_a.fill(lo, hi, seq, end).copy()
    # jobs "finishing" at or after the period start must not change anything
    late = np.arange(lo, hi)
    est_b = PeriodicDurationEstimator(trace.table, "0", kind="lightgbm")
    b = est_b.fill(lo, hi, np.concatenate([seq, late]), np.concatenate([end, np.full(len(late), WEEK)]))
    assert np.array_equal(a, b)
    assert est_a.fits[0]["trained_on"] == int((end < WEEK).sum())
    assert (a >= 0).all()


def test_a_window_may_not_span_two_periods():
    trace = long_trace()
    est = PeriodicDurationEstimator(trace.table, "0", kind="lightgbm")
    with pytest.raises(ValueError, match="span two estimator periods"):
        est.fill(0, trace.table.num_rows, np.empty(0, np.int64), np.empty(0, np.int64))


@pytest.mark.parametrize("window_s", [86_400, WEEK])
def test_results_do_not_depend_on_the_window_size(window_s):
    trace = long_trace()
    spec = RunSpec("qssf", "consolidate", SimParams.for_mode("clean"), layout_from_vc_nodes(trace.vc_nodes, 8))

    def run(w):
        est = PeriodicDurationEstimator(trace.table, "0", kind="lightgbm")
        jobs, _ = simulate(trace, spec, None, window_s=w, estimator=est)
        return jobs, est

    base, est_base = run(86_400)
    jobs, est = run(window_s)
    assert jobs.equals(base)
    assert [f["trained_on"] for f in est.fits] == [f["trained_on"] for f in est_base.fits]
    assert len(est.fits) == 3 and est.fits[0]["trained_on"] == 0
