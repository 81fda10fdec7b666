"""Plugins that talk to nodeagent (or a real kubelet) over the kubelet's node-local gRPC APIs.

Each plugin is a standalone program with its own entry point; tests may also run them
in-process. They follow the upstream contracts, so they work against a real kubelet.
"""
