"""Builders that wire the daemon's subsystems together, one module per area.

Exists so daemon.py keeps only the lifecycle (lock, start order, READY, shutdown):
each module here constructs one area's objects from the config and the pieces it
depends on, starts what must run, and records in `Running` what must be stopped.
These modules sit at the daemon's level: they may import every subsystem, and no
subsystem may import them (the import-linter contracts in pyproject.toml).
"""
