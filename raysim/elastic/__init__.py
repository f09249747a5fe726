"""Elastic jobs: goodput models, job progress and the policies that resize jobs (Pollux, Sia)."""
