"""DeviceClass and ResourceSlice creation reports every validation error at once, as upstream's
ValidateDeviceClass / ValidateResourceSlice return a field.ErrorList and the API server's 422
lists them all (`... is invalid: [path: detail, path: detail]`, one cause each), in upstream's
order; a single error keeps its own text. Through the generic registry, in process."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
CATALOG = Catalog(builtin_resources())
W = WriteOptions()


def _res(plural: str) -> Resource:
    found = CATALOG.find("resource.k8s.io", "v1", plural)
    assert found is not None
    return found


SLICES, CLASSES = _res("resourceslices"), _res("deviceclasses")


@pytest.fixture(scope="module")
def reg() -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    return Registry(store, Catalog(builtin_resources()), builtin_definitions(), builtin_strategies(), clock)


def _failure(reg: Registry, res: Resource, body: Obj) -> APIError:
    with pytest.raises(APIError) as err:
        reg.create(res, "", body, W)
    return err.value


def _slice(**spec: Any) -> Obj:
    base: Obj = {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}
    base.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "x"}, "spec": base}


def _class(**spec: Any) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"}, "spec": spec}


BAD_NAME = ("Invalid value: \"GPU_0\": a lowercase RFC 1123 label must consist of lower case alphanumeric "
            "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
            "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def test_slice_lists_every_error_in_upstream_order(reg: Registry) -> None:
    body = _slice(pool={"generation": 1, "resourceSliceCount": 1},
                  devices=[{"name": "GPU_0"}, {"name": "gpu-1", "attributes": {"a": {}}},
                           {"name": "gpu-2", "capacity": {"mem": {}}}])
    err = _failure(reg, SLICES, body)
    assert err.code == 422
    paths = [c["field"] for c in err.details["causes"]]
    assert paths == ["spec.pool.name", "spec.devices[0].name", "spec.devices[1].attributes[a]",
                     "spec.devices[2].capacity[mem].value"]
    assert err.message.startswith('ResourceSlice.resource.k8s.io "x" is invalid: [spec.pool.name: Required value, '
                                  f"spec.devices[0].name: {BAD_NAME}, ")
    assert err.message.endswith("spec.devices[2].capacity[mem].value: Required value]")


def test_slice_errors_within_one_device_are_all_reported(reg: Registry) -> None:
    body = _slice(devices=[{"name": "GPU_0", "attributes": {"a": {"int": 1, "bool": True}},
                            "capacity": {"mem": {"value": "1x"}}}])
    err = _failure(reg, SLICES, body)
    assert [c["field"] for c in err.details["causes"]] == [
        "spec.devices[0].name", "spec.devices[0].attributes[a]", "spec.devices[0].capacity[mem].value"]


def test_slice_with_one_error_keeps_its_text(reg: Registry) -> None:
    err = _failure(reg, SLICES, _slice(devices=[{"name": "GPU_0"}]))
    assert err.message == f'ResourceSlice.resource.k8s.io "x" is invalid: spec.devices[0].name: {BAD_NAME}'
    assert len(err.details["causes"]) == 1


def test_slice_node_selection_and_duplicate_devices_together(reg: Registry) -> None:
    body = _slice(nodeName=None, devices=[{"name": "gpu-0"}, {"name": "gpu-0"}])
    err = _failure(reg, SLICES, body)
    assert [(c["field"], c["reason"]) for c in err.details["causes"]] == [
        ("spec", "FieldValueRequired"), ("spec.devices[1].name", "FieldValueDuplicate")]


def test_device_class_lists_every_error(reg: Registry) -> None:
    body = _class(selectors=[{"cel": {"expression": "device.driver == "}}, {"cel": {"expression": ""}},
                             {"cel": {"expression": 'device.driver == "a"'}}],
                  config=[{"opaque": {"driver": "Bad_Driver", "parameters": {}}}, {}],
                  extendedResourceName="no")
    err = _failure(reg, CLASSES, body)
    assert err.code == 422
    assert [c["field"] for c in err.details["causes"]] == [
        "spec.selectors[0].cel.expression", "spec.selectors[1].cel.expression", "spec.config[0].opaque.driver",
        "spec.config[1].opaque", "spec.extendedResourceName"]
    assert err.message.startswith('DeviceClass.resource.k8s.io "c" is invalid: [spec.selectors[0].cel.expression: '
                                  'Invalid value: "device.driver == ": ')
    assert ("spec.selectors[1].cel.expression: Invalid value: \"\": compilation failed: ERROR: <input>:1:0: Syntax "
            "error: mismatched input '<EOF>'") in err.message
    assert err.message.endswith('spec.extendedResourceName: Invalid value: "no": must be a valid extended '
                                "resource name]")


def test_device_class_valid_is_stored(reg: Registry) -> None:
    out = reg.create(CLASSES, "", _class(selectors=[{"cel": {"expression": 'device.driver == "a"'}}]), W)
    assert out.object["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "a"'}}]
