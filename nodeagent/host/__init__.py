"""Host seam: facts (model.py), the real probe (probe.py, psutil/sysfs) and a fake (fake.py)."""
