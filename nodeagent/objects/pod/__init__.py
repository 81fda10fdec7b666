"""The Pod: its model (model.py), how a v1 manifest becomes it (manifest.py, with fields.py's typed
accessors, containers.py, resources.py and scheduling.py for the parts of the spec), how it is written
back as v1 JSON (output.py), and what a pod status write must satisfy (status_checks.py)."""
