"""The node's one client of the Kubernetes API (ports.py), in process over the object store
(inprocess.py, the default) or over the network from a kubeconfig (remote.py)."""
