"""A namespace's service-account companions and the ServiceAccount admission of pods, as upstream.

Why: in a cluster every namespace holds the `default` ServiceAccount (kube-controller-manager's
serviceaccount controller) and the `kube-root-ca.crt` ConfigMap (its root-ca-cert-publisher), and
kube-apiserver's ServiceAccount admission plugin gives every pod created without one the `default`
service account and a projected `kube-api-access-XXXXX` volume (token, CA bundle, namespace) mounted
in each container. Clients and tools read those fields (kubectl, a driver's own e2e checks, the
comparisons with kube-apiserver in tests/integration/test_workloads_real_vs_embedded.py).

Upstream: plugin/pkg/admission/serviceaccount (Admit + Validate on create; mirror pods are not
changed and may reference no service account, secret or token projection),
pkg/controller/serviceaccount (ServiceAccounts: [{Name: default}]) and
pkg/controller/certificates/rootcacertpublisher (data ca.crt, the description annotation).
Pure: the store reads and the name generator come in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.objects.pod.admission import forbidden

DEFAULT = "default"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
                       "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
                       "guaranteed across distributions of Kubernetes clusters.")
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_SECONDS = 3607
"""serviceaccount.WarnOnlyBoundTokenExpirationSeconds: the extended token kube-apiserver issues."""
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

ServiceAccountOf = Callable[[str, str], Mapping[str, Any] | None]
"""(namespace, name) -> the stored ServiceAccount, None when there is none."""


def default_service_account(namespace: str) -> dict[str, Any]:
    """The serviceaccount controller's object: a name and nothing else."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT, "namespace": namespace}}


def root_ca_configmap(namespace: str, ca_pem: str) -> dict[str, Any]:
    """The root-ca-cert-publisher's ConfigMap (its annotation and the one key)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": namespace,
                         "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
            "data": {"ca.crt": ca_pem}}


def token_volume_source() -> dict[str, Any]:
    """TokenVolumeSource: the projected source kube-apiserver writes (defaultMode 0644 explicit)."""
    return {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}


def admit_create(pod: dict[str, Any], namespace: str, account_of: ServiceAccountOf,
                 generate_name: Callable[[str], str], *, strict: bool = True) -> None:
    """The plugin's Admit and Validate on a pod create; raises its Forbidden texts.

    `strict` False (a pod the process's own controllers create, which may run with no API server and
    so no serviceaccount controller): a missing account leaves the pod as it is instead of refusing it."""
    spec = pod.setdefault("spec", {})
    if MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
        _validate_mirror(pod, spec)
        return
    name = str(spec.get("serviceAccountName") or DEFAULT)
    account = account_of(namespace, name)
    if account is None:
        if not strict:
            return
        raise forbidden(pod, f"error looking up service account {namespace}/{name}: "
                             f'serviceaccount "{name}" not found')
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = DEFAULT
        spec["serviceAccount"] = DEFAULT  # DeprecatedServiceAccount kept in sync, as the plugin does
    if _automount(account, spec):
        _mount_token(spec, generate_name)
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": s.get("name", "")} for s in account["imagePullSecrets"]]


def _automount(account: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """shouldAutomount: the pod's preference, else the account's, else true."""
    for value in (spec.get("automountServiceAccountToken"), account.get("automountServiceAccountToken")):
        if value is not None:
            return bool(value)
    return True


def _mount_token(spec: dict[str, Any], generate_name: Callable[[str], str]) -> None:
    """mountServiceAccountToken: every (init) container without a mount at the token path gets one of
    the existing kube-api-access volume, else of a new one with a generated name."""
    found = spec.get("volumes")
    volumes: list[Any] = found if isinstance(found, list) else []
    existing = next((v.get("name") for v in volumes if isinstance(v, Mapping)
                     and str(v.get("name") or "").startswith(VOLUME_PREFIX)), None)
    volume_name = str(existing) if existing is not None else generate_name(VOLUME_PREFIX)
    needed = False
    for key in ("initContainers", "containers"):
        for ctr in spec.get(key) or ():
            if not isinstance(ctr, dict):
                continue
            given = ctr.get("volumeMounts")
            mounts: list[Any] = given if isinstance(given, list) else []
            if any(isinstance(m, Mapping) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            ctr["volumeMounts"] = [*mounts, {"name": volume_name, "readOnly": True, "mountPath": MOUNT_PATH}]
            needed = True
    if existing is None and needed:
        spec["volumes"] = [*volumes, {"name": volume_name, "projected": token_volume_source()}]


def _validate_mirror(pod: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    if spec.get("serviceAccountName"):
        raise forbidden(pod, "a mirror pod may not reference service accounts")
    if _references_secrets(spec):
        raise forbidden(pod, "a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or ():
        for source in ((volume.get("projected") or {}).get("sources") or ()) if isinstance(volume, Mapping) else ():
            if isinstance(source, Mapping) and source.get("serviceAccountToken") is not None:
                raise forbidden(pod, "a mirror pod may not use ServiceAccountToken volume projections")


def _references_secrets(spec: Mapping[str, Any]) -> bool:
    """VisitPodSecretNames, for the kinds of reference a static pod could hold."""
    if spec.get("imagePullSecrets"):
        return True
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        if volume.get("secret") is not None:
            return True
        for source in (volume.get("projected") or {}).get("sources") or ():
            if isinstance(source, Mapping) and source.get("secret") is not None:
                return True
        for plugin in ("azureFile", "cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos", "csi"):
            body = volume.get(plugin)
            if isinstance(body, Mapping) and (body.get("secretRef") or body.get("secretName")
                                              or body.get("nodePublishSecretRef")):
                return True
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for ctr in spec.get(key) or ():
            if not isinstance(ctr, Mapping):
                continue
            if any(isinstance(e, Mapping) and (e.get("secretRef") is not None) for e in ctr.get("envFrom") or ()):
                return True
            if any(isinstance(e, Mapping) and ((e.get("valueFrom") or {}).get("secretKeyRef") is not None)
                   for e in ctr.get("env") or ()):
                return True
    return False
