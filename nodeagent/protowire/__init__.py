"""Upstream's protobuf messages, one table per message, for every part of nodeagent that speaks them.

Why a leaf package: the API server decodes kube clients' protobuf bodies and the Pods API encodes
Pods as `(*v1.Pod).Marshal()` writes them; both follow the same k8s.io/api messages, so the tables
live here once (ObjectMeta, NodeSelector... are not copied per user), and the node side, which must
not import the API server, reads them from here too. Modules follow upstream's groups: meta.py,
core.py/pod.py/volume.py (core/v1), coordination.py, events.py, resource.py,
apiextensions.py (CRDs, APIService)...; packages.py joins them;
notation.py is the line notation. tests/unit/protowire checks every line against upstream's Go
types (k8s.io/api in the Go module cache). Pure: tables only, no I/O.
"""
