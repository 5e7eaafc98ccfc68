"""Benchmarks: each module prints its figures and writes bench/results/<name>.json."""
