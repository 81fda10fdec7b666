"""Eviction: the pure decision (decision.py) and the periodic manager (manager.py); its admit handler,
which the pods' admission chain runs, is nodeagent/pods/eviction_admit.py."""
