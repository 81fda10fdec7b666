"""CPU manager: static/none policies (policy.py, pure) and the manager that persists them."""
