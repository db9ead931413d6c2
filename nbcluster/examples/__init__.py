"""Example data and models shared by tests, tutorials and benchmarks (no downloads)."""
