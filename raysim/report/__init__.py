"""Results of a run: job and time-series tables, summaries, plots and sweep comparisons."""
