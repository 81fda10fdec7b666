"""controlPlane.controllers: which embedded controllers run, spelled as kube-controller-manager's
`--controllers` flag.

Why the same spelling: whoever hands a job to the real kube-controller-manager turns the
embedded controller off and the real one on with the same names (`["*", "-deployment"]` here,
`--controllers=deployment` there). `*` turns on every controller on by default, `NAME` one
controller, `-NAME` keeps one off; the first explicit mention of a name wins; without `*` only
named ones run (upstream's IsControllerEnabled). Names are kube-controller-manager's canonical
ones or their aliases; any name kube-controller-manager knows is accepted (a controller
nodeagent does not embed is simply not there to turn off), any other is refused with its
error text. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodeagent.errors import ConfigError

ALIASES = {
    "bootstrapsigner": "bootstrap-signer-controller", "csrapproving": "certificatesigningrequest-approving-controller",
    "csrcleaner": "certificatesigningrequest-cleaner-controller",
    "csrsigning": "certificatesigningrequest-signing-controller",
    "clusterrole-aggregation": "clusterrole-aggregation-controller", "cronjob": "cronjob-controller",
    "daemonset": "daemonset-controller", "deployment": "deployment-controller", "disruption": "disruption-controller",
    "endpoint": "endpoints-controller", "endpointslice": "endpointslice-controller",
    "endpointslicemirroring": "endpointslice-mirroring-controller", "ephemeral-volume": "ephemeral-volume-controller",
    "garbagecollector": "garbage-collector-controller",
    "horizontalpodautoscaling": "horizontal-pod-autoscaler-controller", "job": "job-controller",
    "legacy-service-account-token-cleaner": "legacy-serviceaccount-token-cleaner-controller",
    "namespace": "namespace-controller", "nodeipam": "node-ipam-controller",
    "nodelifecycle": "node-lifecycle-controller", "attachdetach": "persistentvolume-attach-detach-controller",
    "persistentvolume-binder": "persistentvolume-binder-controller",
    "persistentvolume-expander": "persistentvolume-expander-controller",
    "pv-protection": "persistentvolume-protection-controller",
    "pvc-protection": "persistentvolumeclaim-protection-controller", "podgc": "pod-garbage-collector-controller",
    "replicaset": "replicaset-controller", "replicationcontroller": "replicationcontroller-controller",
    "resource-claim-controller": "resourceclaim-controller", "resourcequota": "resourcequota-controller",
    "root-ca-cert-publisher": "root-ca-certificate-publisher-controller", "serviceaccount": "serviceaccount-controller",
    "serviceaccount-token": "serviceaccount-token-controller", "statefulset": "statefulset-controller",
    "svm": "storage-version-migrator-controller", "storage-version-gc": "storageversion-garbage-collector-controller",
    "tokencleaner": "token-cleaner-controller", "ttl-after-finished": "ttl-after-finished-controller",
    "ttl": "ttl-controller",
}
"""kube-controller-manager v1.37.2's aliases (cmd/kube-controller-manager/app: each controller's `aliases`)."""

KNOWN = frozenset({
    *ALIASES.values(), "device-taint-eviction-controller",
    "kube-apiserver-serving-clustertrustbundle-publisher-controller", "podcertificaterequest-cleaner-controller",
    "podgroup-protection-controller", "resourcepoolstatusrequest-controller", "selinux-warning-controller",
    "service-cidr-controller", "taint-eviction-controller", "validatingadmissionpolicy-status-controller",
    "volumeattributesclass-protection-controller", "cloud-node-lifecycle-controller", "service-lb-controller",
    "node-route-controller",
})
"""kube-controller-manager v1.37.2's controller names (names/controller_names.go)."""

DISABLED_BY_DEFAULT = frozenset({"bootstrap-signer-controller", "token-cleaner-controller",
                                 "selinux-warning-controller"})

EMBEDDED = ("deployment-controller", "replicaset-controller", "replicationcontroller-controller",
            "daemonset-controller", "statefulset-controller",
            "job-controller", "cronjob-controller", "namespace-controller", "resourceclaim-controller",
            "node-lifecycle-controller", "device-taint-eviction-controller", "garbage-collector-controller",
            "validatingadmissionpolicy-status-controller", "ttl-controller",
            "ttl-after-finished-controller", "disruption-controller", "resourcequota-controller",
            "endpoints-controller", "endpointslice-controller")
"""The controllers nodeagent's control plane embeds (controlplane/controllers/)."""


def canonical(entry: str) -> str:
    """`entry` (with its `-` prefix, if any) with an alias replaced by the canonical name."""
    off = entry.startswith("-")
    name = entry[1:] if off else entry
    name = ALIASES.get(name, name)
    return f"-{name}" if off else name


def parse(value: object, path: str) -> tuple[str, ...]:
    """The selection, canonical names; ConfigError with kube-controller-manager's text for an unknown name."""
    if value is None:
        return ("*",)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: Invalid value: {value!r}: expected a list of controller names")
    out = []
    for i, entry in enumerate(value):
        if entry == "*":
            out.append(entry)
            continue
        name = canonical(entry)
        if name.lstrip("-") not in KNOWN:
            raise ConfigError(f"{path}[{i}]: Invalid value: {entry!r}: "
                              f'"{entry.removeprefix("-")}" is not in the list of known controllers')
        out.append(name)
    return tuple(out)


def enabled(name: str, selection: Sequence[str]) -> bool:
    """upstream's IsControllerEnabled over a canonical selection."""
    star = False
    for entry in selection:
        if entry == name:
            return True
        if entry == f"-{name}":
            return False
        if entry == "*":
            star = True
    return star and name not in DISABLED_BY_DEFAULT
