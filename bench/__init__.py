"""Benchmarks: each script prints figures measured in one run against a baseline on the same machine."""
