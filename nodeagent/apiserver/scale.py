"""The scale subresource (deployments/scale, replicasets/scale, statefulsets/scale,
replicationcontrollers/scale): an
autoscaling/v1 Scale view of a scalable object's spec.replicas.

Why apart from the registry: the view is upstream's scaleFrom<Kind> (name, namespace, uid,
resourceVersion and creationTimestamp of the object; spec.replicas; status.replicas and the
selector's string), and its checks are ValidateScale's (the Scale's own error texts, Scale.autoscaling),
both pure; the registry writes the change through the kind's own update path. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.errors import APIError, bad_request, invalid
from nodeagent.objects.workloads import selector_string

SCALE_GROUP, SCALE_VERSION, SCALE_KIND = "autoscaling", "v1", "Scale"
SCALE_API_VERSION = f"{SCALE_GROUP}/{SCALE_VERSION}"
SCALE_DEFINITION = "io.k8s.api.autoscaling.v1.Scale"
Obj = dict[str, Any]


def of(obj: Mapping[str, Any]) -> Obj:
    """The Scale of a scalable object (upstream's scaleFromDeployment and its kin)."""
    md = obj.get("metadata") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out_md = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md}
    replicas = spec.get("replicas")
    scale: Obj = {"kind": SCALE_KIND, "apiVersion": SCALE_API_VERSION, "metadata": out_md,
                  "spec": {"replicas": replicas} if isinstance(replicas, int) and replicas else {},
                  "status": {"replicas": int(status.get("replicas") or 0)}}
    selector = spec.get("selector")
    if obj.get("kind") == "ReplicationController" and isinstance(selector, Mapping):
        selector = {"matchLabels": selector}  # scaleFromRC: labels.SelectorFromSet of the map selector
    selector = selector_string(selector)
    if selector:
        scale["status"]["selector"] = selector
    return scale


def check_body(body: Any, name: str) -> Obj:
    """A Scale sent by a client: the right kind and version, the URL's name."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request was in an unknown format - accepted media types include: "
                          "application/json, application/yaml")
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if api_version and api_version != SCALE_API_VERSION:
        raise bad_request(f"the API version in the data ({api_version}) does not match the expected API version "
                          f"({SCALE_API_VERSION})")
    if kind and kind != SCALE_KIND:
        raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({SCALE_KIND})")
    given = body.get("metadata")
    md: Obj = given if isinstance(given, dict) else {}
    if md.get("name") and md["name"] != name:
        raise bad_request(f"the name of the object ({md['name']}) does not match the name on the URL ({name})")
    return body


def replicas(scale: Mapping[str, Any], name: str, *, validate: bool = True) -> int:
    """ValidateScale: spec.replicas a non-negative integer (absent is 0, as Go decodes it);
    `validate` False: decoded only (a custom resource's scale, which its own checks answer)."""
    spec = scale.get("spec") or {}
    value = spec.get("replicas", 0) if isinstance(spec, Mapping) else 0
    if value is None:
        value = 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise bad_request(f'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
                          f"{type(value).__name__} into Go struct field ScaleSpec.spec.replicas of type int32")
    if value < 0 and validate:
        raise invalid(SCALE_GROUP, SCALE_KIND, name,
                      [("spec.replicas", f"Invalid value: {value}: must be greater than or equal to 0")])
    return value


def apply_unsupported() -> APIError:
    """Server-side apply of a Scale: not served here (see README's differences)."""
    return APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media "
                    "types include: application/json-patch+json, application/merge-patch+json, "
                    "application/strategic-merge-patch+json")
