"""raysim: a trace-driven, distributed simulator of GPU datacenters running deep-learning training jobs."""

__version__ = "0.1.0"
