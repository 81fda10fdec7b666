"""The scale subresource of custom resources (a CRD version's `subresources.scale`): an
autoscaling/v1 Scale view of the replicas at `specReplicasPath`, `statusReplicasPath` and
`labelSelectorPath`, and the checks those paths add to every write of the custom resource.

Why apart from scale.py: k8s.io/apiextensions-apiserver's ScaleREST (pkg/registry/customresource/
etcd.go) differs from the built-in kinds' scale in every detail a client sees, so it is written
as upstream writes it:
- the view reads the paths with unstructured.NestedInt64/NestedString (a missing field is 0 or
  "", a value of another type is the accessor's error text, answered as a 500 of reason Unknown
  as kube-apiserver answers an error that is not an API status);
- GET answers 500 `the spec replicas field ".spec.replicas" does not exist` when the object has no
  replicas at the spec path; a PATCH that leaves them unset answers 400 `... cannot be empty`;
- the Scale itself is not validated (no ValidateScale): its replicas are written at the spec
  path and the custom resource's own validation (ValidateScaleSpec/ValidateScaleStatus: "should
  be a non-negative integer", "should be less than or equal to 2147483647", the accessor errors)
  refuses a bad value, naming the custom resource's kind.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.errors import APIError, bad_request
from nodeagent.apiserver.scale import SCALE_API_VERSION, SCALE_KIND
from nodeagent.apiserver.schema.gotext import field_value, go_v

Obj = dict[str, Any]
MAX_INT32 = 2**31 - 1
UNSET_REPLICAS = -(2**31)
"""What the Scale a PATCH applies to holds when the object has no spec replicas (upstream's
invalidSpecReplicas, the smallest int32): a patch that leaves it so is refused."""


@dataclass(frozen=True)
class ScalePaths:
    """A CRD version's subresources.scale, as written (`.spec.replicas`)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str = ""

    @staticmethod
    def of(scale: Mapping[str, Any]) -> ScalePaths:
        return ScalePaths(str(scale.get("specReplicasPath") or ""), str(scale.get("statusReplicasPath") or ""),
                          str(scale.get("labelSelectorPath") or ""))


class AccessorError(Exception):
    """unstructured's accessor error (`.spec.replicas accessor error: x is of the type string, expected int64`)."""


def _fields(path: str) -> list[str]:
    """splitReplicasPath: the path split on dots, its leading dot ignored."""
    return path.removeprefix(".").split(".")


def _go_type(value: Any) -> str:
    """%T of a decoded JSON value (ints are int64, as the API server decodes with PreserveInts)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "[]interface {}" if isinstance(value, list) else "map[string]interface {}"


def _nested(obj: Mapping[str, Any], fields: list[str]) -> tuple[Any, bool]:
    """NestedFieldNoCopy: the value and whether it was found; a step that is not an object is an error."""
    value: Any = obj
    for i, name in enumerate(fields):
        if value is None:
            return None, False
        if not isinstance(value, Mapping):
            where = "." + ".".join(fields[: i + 1])
            raise AccessorError(f"{where} accessor error: {go_v(value)} is of the type {_go_type(value)}, "
                                "expected map[string]interface{}")
        if name not in value:
            return None, False
        value = value[name]
    return value, True


def nested_int(obj: Mapping[str, Any], path: str) -> tuple[int, bool]:
    """NestedInt64 (a JSON integer; a float, even 2.0, is not one, as Go decodes it)."""
    fields = _fields(path)
    value, found = _nested(obj, fields)
    if not found:
        return 0, False
    if isinstance(value, bool) or not isinstance(value, int):
        raise AccessorError(f"{'.' + '.'.join(fields)} accessor error: {go_v(value)} is of the type "
                            f"{_go_type(value)}, expected int64")
    return value, True


def nested_string(obj: Mapping[str, Any], path: str) -> str:
    """NestedString ("" when not found)."""
    fields = _fields(path)
    value, found = _nested(obj, fields)
    if not found:
        return ""
    if not isinstance(value, str):
        raise AccessorError(f"{'.' + '.'.join(fields)} accessor error: {go_v(value)} is of the type "
                            f"{_go_type(value)}, expected string")
    return value


def _unknown(err: Exception) -> APIError:
    """An error that is not an API status, as kube-apiserver answers it (500, reason Unknown)."""
    return APIError(500, "", str(err))


def view(obj: Mapping[str, Any], paths: ScalePaths) -> tuple[Obj, bool]:
    """scaleFromCustomResource: the Scale and whether the spec replicas were found."""
    try:
        spec_replicas, found = nested_int(obj, paths.spec_replicas)
        status_replicas, _ = nested_int(obj, paths.status_replicas)
        selector = nested_string(obj, paths.label_selector) if paths.label_selector else ""
    except AccessorError as err:
        raise _unknown(err) from None
    md = obj.get("metadata") or {}
    out_md = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md}
    # Go's int32(...) conversion wraps a value out of range, as upstream's does
    spec_replicas = (spec_replicas + 2**31) % 2**32 - 2**31
    status_replicas = (status_replicas + 2**31) % 2**32 - 2**31
    status: Obj = {"replicas": status_replicas}
    if selector:
        status["selector"] = selector
    scale: Obj = {"kind": SCALE_KIND, "apiVersion": SCALE_API_VERSION, "metadata": out_md,
                  "spec": {"replicas": spec_replicas} if spec_replicas else {}, "status": status}
    return scale, found


def get(obj: Mapping[str, Any], paths: ScalePaths) -> Obj:
    """ScaleREST.Get: the Scale, or a 500 when the object has no spec replicas."""
    scale, found = view(obj, paths)
    if not found:
        cause = f'the spec replicas field "{paths.spec_replicas}" does not exist'
        raise APIError(500, "InternalError", f"Internal error occurred: {cause}",
                       details={"causes": [{"message": cause}]})
    return scale


def patch_base(obj: Mapping[str, Any], paths: ScalePaths) -> Obj:
    """The Scale an update applies to: UNSET_REPLICAS when the object has none."""
    scale, found = view(obj, paths)
    if not found:
        scale["spec"] = {"replicas": UNSET_REPLICAS}
    return scale


def with_replicas(obj: Mapping[str, Any], paths: ScalePaths, replicas: int) -> Obj:
    """The custom resource with the Scale's replicas at the spec path (SetNestedField: missing
    objects on the way are created; a step that is not an object is an error)."""
    if replicas == UNSET_REPLICAS:
        raise bad_request(f'the spec replicas field "{paths.spec_replicas}" cannot be empty')
    out = dict(obj)
    cur = out
    fields = _fields(paths.spec_replicas)
    for i, name in enumerate(fields[:-1]):
        child = cur.get(name)
        if child is None:
            child = {}
        elif not isinstance(child, Mapping):
            where = "." + ".".join(fields[: i + 1])
            raise _unknown(ValueError(f"value cannot be set because {where} is not a map[string]interface{{}}"))
        child = dict(child)
        cur[name] = child
        cur = child
    cur[fields[-1]] = replicas
    return out


def _check_replicas(obj: Mapping[str, Any], path: str) -> list[tuple[str, str]]:
    try:
        value, _ = nested_int(obj, path)
    except AccessorError as err:
        return [(path, f"Invalid value: 0: {err}")]
    if value < 0:
        return [(path, f"Invalid value: {value}: should be a non-negative integer")]
    if value > MAX_INT32:
        return [(path, f"Invalid value: {value}: should be less than or equal to {MAX_INT32}")]
    return []


def checks(obj: Mapping[str, Any], paths: ScalePaths) -> list[tuple[str, str]]:
    """ValidateScaleSpec and ValidateScaleStatus on a write of the custom resource; the paths are
    the field paths as written in the CRD (field.NewPath(".spec.replicas"))."""
    errors = _check_replicas(obj, paths.spec_replicas) + _check_replicas(obj, paths.status_replicas)
    if paths.label_selector:
        try:
            nested_string(obj, paths.label_selector)
        except AccessorError as err:
            errors.append((paths.label_selector, f"Invalid value: {field_value('')}: {err}"))
    return errors
