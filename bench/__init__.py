"""Benchmarks (not tests): `python -m bench.worker [--quick]`; see bench/README.md."""
