"""Small hand-computed cases for every baseline policy, in both semantic modes."""

from simutil import run_vc


def rows(res):
    return list(zip(res["start_time"].tolist(), res["end_time"].tolist(), res["queue"].tolist(),
                    res["preemptions"].tolist()))


def test_fifo_runs_in_submit_order_when_capacity_frees():
    # one node: A holds all 8 GPUs until 10, B and C wait and start together at 10
    _, res = run_vc([(0, 10, 8), (1, 5, 1), (2, 3, 1)], "fifo")
    assert rows(res) == [(0, 10, 0, 0), (10, 15, 9, 0), (10, 13, 8, 0)]


def test_fifo_head_of_line_blocking():
    # B (8 GPUs) cannot start while A holds 4; C (1 GPU) would fit but waits behind B
    _, res = run_vc([(0, 10, 4), (1, 10, 8), (2, 5, 1)], "fifo")
    assert rows(res) == [(0, 10, 0, 0), (10, 20, 9, 0), (20, 25, 18, 0)]


def test_sjf_orders_by_true_duration():
    # at t=2 the queue is C (5 s) then B (10 s): C fits and starts, B waits for A to end
    _, res = run_vc([(0, 10, 4), (1, 10, 8), (2, 5, 1)], "sjf")
    assert rows(res) == [(0, 10, 0, 0), (10, 20, 9, 0), (2, 7, 0, 0)]


def test_qssf_orders_by_estimate_times_gpus():
    # A blocks the node; B (est 100 x 8) and C (est 10 x 8) wait; C has the lower priority value
    jobs = [(0, 10, 8, 1), (1, 5, 8, 100.0), (2, 5, 8, 10.0)]
    _, res = run_vc(jobs, "qssf", compat="clean")
    assert rows(res) == [(0, 10, 0, 0), (15, 20, 14, 0), (10, 15, 8, 0)]


def test_qssf_lucid_sorts_new_arrivals_by_gpus_only():
    # both jobs arrive at t=0 into an empty queue: Lucid orders them by GPU count (2 before 8)
    # although the 8-GPU job has the better priority; clean semantics use the priority at once
    jobs = [(0, 10, 8, 1.0), (0, 10, 2, 1000.0)]
    _, lucid = run_vc(jobs, "qssf", compat="lucid")
    _, clean = run_vc(jobs, "qssf", compat="clean")
    assert rows(lucid) == [(10, 20, 10, 0), (0, 10, 0, 0)]
    assert rows(clean) == [(0, 10, 0, 0), (10, 20, 10, 0)]


def test_srtf_preempts_longer_job_and_charges_overhead():
    # A (100 s) runs; B (20 s) arrives at 10 and preempts it; A resumes with 90 + 40 s left
    jobs = [(0, 100, 8), (10, 20, 8)]
    _, lucid = run_vc(jobs, "srtf", compat="lucid")
    # Lucid counts down from the second after placement: ends are one second late
    assert rows(lucid) == [(0, 162, 21, 1), (10, 31, 0, 0)]
    _, clean = run_vc(jobs, "srtf", compat="clean")
    assert rows(clean) == [(0, 160, 20, 1), (10, 30, 0, 0)]


def test_srtf_equal_remaining_tie_rule():
    # at t=50, A (running since 0, 100 s) and B (pending, 50 s) both have 50 s left. Lucid puts the
    # pending job first and preempts A for it; clean semantics keep A running.
    jobs = [(0, 100, 8), (50, 50, 8)]
    _, lucid = run_vc(jobs, "srtf", compat="lucid")
    assert lucid["preemptions"].tolist() == [1, 0]
    _, clean = run_vc(jobs, "srtf", compat="clean")
    assert clean["preemptions"].tolist() == [0, 0]


def test_tiresias_demotes_after_threshold_at_60s_boundaries():
    # A (1 GPU, 20000 s) reaches 18000 GPU-s at t=18001; at t=18060 it drops to the low queue and
    # B (8 GPUs, waiting since 30) preempts it. B ends, A resumes at the next 60-s boundary.
    jobs = [(0, 20000, 1), (30, 100, 8)]
    _, res = run_vc(jobs, "tiresias", compat="lucid")
    assert rows(res) == [(0, 20161, 120, 1), (18060, 18161, 18030, 0)]
    _, clean = run_vc(jobs, "tiresias", compat="clean")
    # clean: A ends 1 s earlier each run; remaining at preemption = 20000 - 18060 = 1940 (+40)
    assert rows(clean) == [(0, 18160 + 20 + 1980, 120, 1), (18060, 18160, 18030, 0)]


def test_tiresias_only_schedules_on_60s_boundaries():
    _, res = run_vc([(5, 10, 1)], "tiresias", compat="clean")
    assert rows(res) == [(60, 70, 55, 0)]
