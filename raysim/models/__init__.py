"""Models raysim uses inside simulations: duration estimates (file-based for now)."""
