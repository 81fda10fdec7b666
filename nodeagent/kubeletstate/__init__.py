"""The kubelet's state files for node agents to read.

cpu_manager_state, memory_manager_state, device-plugins/kubelet_internal_checkpoint and
dra_manager_state, in the v1.37.2 kubelet's format (formats.py, gohash.py), kept in step with
nodeagent's managers (exporter.py). nodeagent's state database stays the source of truth.
"""
