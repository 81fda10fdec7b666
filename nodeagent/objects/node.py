"""Validation of node.k8s.io/v1 RuntimeClass: pkg/apis/node/validation's ValidateRuntimeClass and
ValidateRuntimeClassUpdate with their field paths and wording, as store hooks so every writer is
checked.

Why: a RuntimeClass the real kube-apiserver refuses (a handler that is not a DNS label, a negative
overhead, an invalid toleration) must be refused here with the same text. Every error is listed
(objects/common.Errors); the overhead and toleration checks reuse the Pod's (objects/pod), which
report the first fault of each. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.objects.pod.resources import parse_requirements
from nodeagent.objects.pod.scheduling import check_toleration
from nodeagent.store import validation as meta

JSON = dict[str, Any]


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def validate_runtime_class(obj: JSON) -> JSON:
    """ValidateRuntimeClass: a DNS-label handler, the overhead as a container's limits, the scheduling's
    node selector (labels) and tolerations (each valid, none twice)."""
    errs = Errors()
    handler = obj.get("handler")
    if not handler:
        errs.append(meta.required("handler"))
    else:
        errs.check(meta.check_dns_label, "handler", str(handler))
    overhead = obj.get("overhead")
    if overhead is not None:
        errs.check(_overhead, _obj(overhead).get("podFixed") or {})
    scheduling = obj.get("scheduling")
    if scheduling is not None:
        scheduling = _obj(scheduling)
        selector = scheduling.get("nodeSelector")
        if selector is not None:
            errs.check(meta.check_labels, "scheduling.nodeSelector", _obj(selector))
        seen: set[tuple[str, str, str, str]] = set()
        for i, tol in enumerate(scheduling.get("tolerations") or []):
            path = f"scheduling.tolerations[{i}]"
            errs.check(check_toleration, path, tol)
            t = _obj(tol)
            key = (str(t.get("key") or ""), str(t.get("operator") or ""), str(t.get("value") or ""),
                   str(t.get("effect") or ""))
            if key in seen:
                errs.append(ValidationError(path, f"Duplicate value: {_go_toleration(t)}"))
            seen.add(key)
    errs.raise_all()
    return obj


def _overhead(pod_fixed: Mapping[str, Any]) -> None:
    """validateOverhead: ValidateContainerResourceRequirements of limits podFixed at `overhead`."""
    parse_requirements({"limits": pod_fixed}, "overhead", container=True)


def _go_toleration(t: Mapping[str, Any]) -> str:
    """A toleration as field.Duplicate prints it: encoding/json of the internal core.Toleration, a Go
    struct without JSON tags (every field, named as in Go)."""
    out = {name: str(t.get(name.lower()) or "") for name in ("Key", "Operator", "Value", "Effect")}
    return json.dumps({**out, "TolerationSeconds": t.get("tolerationSeconds")}, separators=(",", ":"))


def validate_runtime_class_update(new: JSON, old: JSON) -> None:
    """ValidateRuntimeClassUpdate: the handler is immutable (kube-apiserver v1.37.2's declarative
    immutability check reports the value as null, as for an IPAddress's parentRef)."""
    if new.get("handler") != old.get("handler"):
        raise ValidationError("handler", "Invalid value: null: field is immutable")


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {"RuntimeClass": {"default": validate_runtime_class, "validate_update": validate_runtime_class_update}}
