"""Conformance suites ("sanity", like CSI's csi-sanity) for DRA drivers and device plugins.

The suites play the kubelet's side of the node-local sockets against one plugin, case by
named case, and report PASS / FAIL / SKIP on the terminal and as JUnit XML. They reuse the
daemon's own clients (dra/client.py, devices/plugin_client.py) but never the daemon itself.
"""
