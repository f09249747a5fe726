"""Traces: the Arrow job schema, readers and the seeded synthetic generator."""
