"""nodeagent: the kubelet's side of every node-local gRPC API, on a fake node."""

__version__ = "0.1.0"
