"""Admission by ValidatingAdmissionPolicy: matching.py (pure: which requests a policy or binding
selects) and dispatch.py (the plugin: policies, bindings and params from the store, CEL through
nodeagent/cel/admission.py, Deny/Warn/Audit)."""
