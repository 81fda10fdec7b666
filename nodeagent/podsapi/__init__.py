"""The kubelet Pods API (KEP-4188): the node's pods served on <root>/pods-api/pods-api.sock.

Layout, as in the other subsystems: `model` (events, diff, errors) and `podproto` (the Pod's
generated.proto encoding, over the message tables shared in nodeagent.protowire) are pure;
`watch` fans events out to streams; `source` keeps the current pods and turns pod-manager
changes into events; `provider` reads the pod manager; `service` is the thin gRPC adapter.
"""
