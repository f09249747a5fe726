"""Hydra launcher that runs a multirun's jobs as parallel Ray tasks (`hydra/launcher=raysim_ray`)."""
