"""The node's side of the Kubernetes API, one module per kubelet role.

- loop.py: NodeSync, the sync loop that owns the pod watch and drives the roles (kubelet.go syncLoop);
- nodestatus.py: node registration and node status (kubelet_node_status.go);
- podsource.py: the API pod source and, with no scheduler, self-binding (config/apiserver.go, config.go);
- status.py: the status manager, pod statuses and the final DELETE (status/status_manager.go);
- mirror.py: mirror pods of static pods (pod/mirror_client.go).
The package keeps the name of the module it was split from: its parts log under nodeagent.nodesync.
"""
