"""Benchmarks that print tables: `python -m bench.<name> --help` (docs/benchmarks.md)."""
