"""core/v1 defaulting of a Pod and of a pod template's spec, as kube-apiserver decodes them.

Why: kube-apiserver runs the generated SetObjectDefaults_Pod (pkg/apis/core/v1/zz_generated.defaults.go)
on every Pod it decodes, so a created Pod comes back with its dnsPolicy, restartPolicy, schedulerName,
securityContext {}, terminationGracePeriodSeconds, each container's imagePullPolicy (by tag),
terminationMessagePath/Policy, ports' protocol, probes' timeouts and thresholds, env fieldRefs'
apiVersion, volumes' modes... Clients and controllers compare what they wrote with what they read
(a Deployment's template hash, kubectl apply's diff), so the same answer matters here. Templates
(Deployment, ReplicaSet, Job...) get SetDefaults_PodSpec and the per-container defaults, not
SetDefaults_Pod's (requests from limits, enableServiceLinks), as upstream. Pure: plain dicts, no I/O.

Differences from upstream, on purpose: ResourceList quantities are not rounded up to milli scale
(SetDefaults_ResourceList) here; gated defaults follow v1.37.2's default gates (ImageVolume's pull
policy on, H2CContainerProbe's probe protocol off).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

JSON = dict[str, Any]

DEFAULT_SCHEDULER_NAME = "default-scheduler"  # v1.DefaultSchedulerName
TERMINATION_MESSAGE_PATH = "/dev/termination-log"  # v1.TerminationMessagePathDefault
DEFAULT_GRACE_PERIOD = 30  # v1.DefaultTerminationGracePeriodSeconds
_VOLUME_MODE = 0o644  # Secret/ConfigMap/DownwardAPI/Projected VolumeSourceDefaultMode
_TOKEN_EXPIRATION = 3600  # SetDefaults_ServiceAccountTokenProjection: an hour
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)


def pod_defaults(pod: JSON) -> None:
    """SetObjectDefaults_Pod on a v1 Pod document, in place (its spec when it is an object)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and not isinstance(grace, bool) and grace < 0:
        spec["terminationGracePeriodSeconds"] = 1
    for container in _containers(spec, ("containers", "initContainers")):
        _requests_from_limits(container)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True  # v1.DefaultEnableServiceLinks
    if spec.get("hostNetwork") is True:
        for container in _containers(spec, ("containers", "initContainers")):
            for port in _objects(container.get("ports")):
                if not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort")
    pod_spec_defaults(spec)


def pod_spec_defaults(spec: JSON) -> None:
    """SetDefaults_PodSpec and what the generated defaulters add under a PodSpec (volumes, containers
    of every kind), in place: what a pod template shows once kube-apiserver decoded it."""
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    else:
        spec.pop("serviceAccount", None)
    for key, value in (("dnsPolicy", "ClusterFirst"), ("restartPolicy", "Always"),
                       ("schedulerName", DEFAULT_SCHEDULER_NAME)):
        if not spec.get(key):
            spec[key] = value
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_GRACE_PERIOD
    for volume in _objects(spec.get("volumes")):
        _volume_defaults(volume)
    for container in _containers(spec, ("initContainers", "containers", "ephemeralContainers")):
        _container_defaults(container)


def _objects(value: Any) -> Iterator[JSON]:
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict):
            yield item


def _containers(spec: JSON, keys: tuple[str, ...]) -> Iterator[JSON]:
    for key in keys:
        yield from _objects(spec.get(key))


def _requests_from_limits(container: JSON) -> None:
    """SetDefaults_Pod: a limit without its request makes the request (pods only, not templates)."""
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return
    requests = resources.get("requests")
    requests = dict(requests) if isinstance(requests, dict) else {}
    for name, value in resources["limits"].items():
        requests.setdefault(name, value)
    resources["requests"] = requests


def pull_policy(image: str) -> str:
    """SetDefaults_Container's imagePullPolicy: Always for a `latest` tag or none (parsers.ParseImageName
    defaults the tag to latest unless a digest names the image), else IfNotPresent (an image it cannot
    parse, whose error the defaulting ignores, too)."""
    name, _, digest = image.partition("@")
    path = name.rsplit("/", 1)[-1]
    if not name or path.lower() != path:
        return "IfNotPresent"  # not a reference ParseImageName parses: no tag
    tag = path.split(":", 1)[1] if ":" in path else ("" if digest else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def _container_defaults(container: JSON) -> None:
    """SetDefaults_Container and the generated defaults of its ports, env, probes and lifecycle."""
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = pull_policy(str(container.get("image") or ""))
    if not container.get("terminationMessagePath"):
        container["terminationMessagePath"] = TERMINATION_MESSAGE_PATH
    if not container.get("terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    if container.get("resources") is None:
        container["resources"] = {}  # a struct in Go: always written
    for port in _objects(container.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for env in _objects(container.get("env")):
        source = env.get("valueFrom")
        if not isinstance(source, dict):
            continue
        if isinstance(source.get("fieldRef"), dict):
            _field_ref(source["fieldRef"])
        if isinstance(source.get("fileKeyRef"), dict) and source["fileKeyRef"].get("optional") is None:
            source["fileKeyRef"]["optional"] = False
    for key in _PROBES:
        probe = container.get(key)
        if isinstance(probe, dict):
            _probe_defaults(probe)
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            handler = lifecycle.get(hook)
            if isinstance(handler, dict) and isinstance(handler.get("httpGet"), dict):
                _http_get(handler["httpGet"])


def _probe_defaults(probe: JSON) -> None:
    """SetDefaults_Probe (a zero counts as unset), then its handler's."""
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    if isinstance(probe.get("httpGet"), dict):
        _http_get(probe["httpGet"])
    if isinstance(probe.get("grpc"), dict) and probe["grpc"].get("service") is None:
        probe["grpc"]["service"] = ""


def _http_get(action: JSON) -> None:
    """SetDefaults_HTTPGetAction."""
    if not action.get("path"):
        action["path"] = "/"
    if not action.get("scheme"):
        action["scheme"] = "HTTP"


def _field_ref(ref: JSON) -> None:
    """SetDefaults_ObjectFieldSelector."""
    if not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _mode(source: JSON) -> None:
    if source.get("defaultMode") is None:
        source["defaultMode"] = _VOLUME_MODE


def _volume_defaults(volume: JSON) -> None:
    """SetDefaults_Volume (no source: an emptyDir) and each source's generated defaults."""
    if not any(volume.get(k) is not None for k in _VOLUME_SOURCES):
        volume["emptyDir"] = {}
    image = volume.get("image")
    if isinstance(image, dict) and not image.get("pullPolicy"):
        image["pullPolicy"] = pull_policy(str(image.get("reference") or ""))
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""  # v1.HostPathUnset
    for key in ("secret", "configMap"):
        if isinstance(volume.get(key), dict):
            _mode(volume[key])
    downward = volume.get("downwardAPI")
    if isinstance(downward, dict):
        _mode(downward)
        for item in _objects(downward.get("items")):
            if isinstance(item.get("fieldRef"), dict):
                _field_ref(item["fieldRef"])
    projected = volume.get("projected")
    if isinstance(projected, dict):
        _mode(projected)
        for source in _objects(projected.get("sources")):
            for item in _objects((source.get("downwardAPI") or {}).get("items")
                                 if isinstance(source.get("downwardAPI"), dict) else None):
                if isinstance(item.get("fieldRef"), dict):
                    _field_ref(item["fieldRef"])
            token = source.get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = _TOKEN_EXPIRATION
    _legacy_volume_defaults(volume)


def _legacy_volume_defaults(volume: JSON) -> None:
    """The generated defaults of the in-tree sources (iSCSI, RBD, AzureDisk, ScaleIO) and an ephemeral
    volume's claim template."""
    iscsi = volume.get("iscsi")
    if isinstance(iscsi, dict) and not iscsi.get("iscsiInterface"):
        iscsi["iscsiInterface"] = "default"
    rbd = volume.get("rbd")
    if isinstance(rbd, dict):
        for key, value in (("pool", "rbd"), ("user", "admin"), ("keyring", "/etc/ceph/keyring")):
            if not rbd.get(key):
                rbd[key] = value
    azure = volume.get("azureDisk")
    if isinstance(azure, dict):
        azure_defaults: tuple[tuple[str, Any], ...] = (("cachingMode", "ReadWrite"), ("fsType", "ext4"),
                                                       ("readOnly", False), ("kind", "Shared"))
        for key, value in azure_defaults:
            if azure.get(key) is None:
                azure[key] = value
    scale_io = volume.get("scaleIO")
    if isinstance(scale_io, dict):
        for key, value in (("storageMode", "ThinProvisioned"), ("fsType", "xfs")):
            if not scale_io.get(key):
                scale_io[key] = value
    ephemeral = volume.get("ephemeral")
    template = ephemeral.get("volumeClaimTemplate") if isinstance(ephemeral, dict) else None
    claim_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(claim_spec, dict) and not claim_spec.get("volumeMode"):
        claim_spec["volumeMode"] = "Filesystem"  # SetDefaults_PersistentVolumeClaimSpec
