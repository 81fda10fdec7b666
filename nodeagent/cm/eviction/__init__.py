"""Eviction: the pure decision (decision.py) and the periodic manager (manager.py)."""
