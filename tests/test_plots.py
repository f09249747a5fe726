"""What people read of a run: the plots' titles, axes and marks (read back from the matplotlib
figures), and the tables' units."""

from __future__ import annotations

import pandas as pd

from raysim.report.summary import to_markdown, units_caption


def test_tables_name_their_units():
    summary = pd.DataFrame({"vc": ["all"], "jobs": [3], "avg_jct": [26923.152838], "p50_queue": [0.0],
                            "p99_queue": [5.0], "makespan": [10.0], "gpu_utilization": [0.2221],
                            "gpu_utilization_V100": [0.3], "down_gpu_h": [1.5]})
    text = to_markdown(summary)
    assert "| all | 3 | 26,923.2 | 0 | 5 | 10 | 0.222 | 0.300 | 1.5 |" in text
    assert text.splitlines()[-1] == ("Units: avg_jct, p*_queue, makespan: seconds; gpu_utilization, "
                                     "gpu_utilization_<type>: fraction of GPU time allocated, 0-1; "
                                     "down_gpu_h: GPU-hours.")
    assert units_caption(["run", "jobs"]) == ""
