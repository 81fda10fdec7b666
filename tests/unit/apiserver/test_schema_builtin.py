"""The built-in schemas: every served kind is defined and resolves; upstream's list semantics."""

from __future__ import annotations

import pytest

from nodeagent.apiserver.catalog import Resource, builtin_resources
from nodeagent.apiserver.schema.builtin import BUILTIN_GVK, builtin_definitions
from nodeagent.apiserver.schema.model import Definitions, Schema

DEFS = builtin_definitions()
CORE = "io.k8s.api.core.v1."
META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def _refs(schema: Schema | None) -> list[str]:
    if schema is None:
        return []
    out = [schema.ref] if schema.ref else []
    for child in schema.properties.values():
        out += _refs(child)
    return out + _refs(schema.items) + _refs(schema.additional_properties)


def _at(defs: Definitions, name: str, path: str) -> Schema:
    """The (unresolved) schema of a dotted field path; `[]` steps into list items."""
    node = defs.get(name)
    for part in path.split("."):
        if part == "[]":
            node = defs.resolve(node).items or Schema()
            continue
        node = defs.resolve(node).properties[part]
    return node


@pytest.mark.parametrize("resource", builtin_resources(), ids=lambda r: f"{r.group_version}/{r.plural}")
def test_every_served_resource_is_defined_with_its_gvk(resource: Resource) -> None:
    assert resource.definition in DEFS
    assert BUILTIN_GVK[resource.definition] == (resource.group, resource.version, resource.kind)
    top = DEFS.get(resource.definition)
    assert {"apiVersion", "kind", "metadata"} <= set(top.properties)
    assert DEFS.resolve(top.properties["metadata"]).properties["name"].type == "string"


def test_no_dangling_refs() -> None:
    dangling = {(name, ref) for name, schema in DEFS.items() for ref in _refs(schema) if ref not in DEFS}
    assert dangling == set()


def test_gvk_names_exist() -> None:
    assert [name for name in BUILTIN_GVK if name not in DEFS] == []


# (definition, field path, patch strategy, merge key, list type, list map keys): upstream's struct tags.
LISTS = [
    ("PodSpec", "containers", "merge", "name", "map", ("name",)),
    ("PodSpec", "initContainers", "merge", "name", "map", ("name",)),
    ("PodSpec", "ephemeralContainers", "merge", "name", "map", ("name",)),
    ("PodSpec", "volumes", "merge,retainKeys", "name", "map", ("name",)),
    ("PodSpec", "imagePullSecrets", "merge", "name", "map", ("name",)),
    ("PodSpec", "hostAliases", "merge", "ip", "map", ("ip",)),
    ("PodSpec", "tolerations", "", "", "atomic", ()),
    ("PodSpec", "readinessGates", "", "", "atomic", ()),
    ("PodSpec", "schedulingGates", "merge", "name", "map", ("name",)),
    ("PodSpec", "resourceClaims", "merge,retainKeys", "name", "map", ("name",)),
    ("PodSpec", "topologySpreadConstraints", "merge", "topologyKey", "map", ("topologyKey", "whenUnsatisfiable")),
    ("Container", "env", "merge", "name", "map", ("name",)),
    ("Container", "ports", "merge", "containerPort", "map", ("containerPort", "protocol")),
    ("Container", "volumeMounts", "merge", "mountPath", "map", ("mountPath",)),
    ("Container", "volumeDevices", "merge", "devicePath", "map", ("devicePath",)),
    ("Container", "envFrom", "", "", "atomic", ()),
    ("Container", "resources.claims", "", "", "map", ("name",)),
    ("EphemeralContainer", "env", "merge", "name", "map", ("name",)),
    ("PodStatus", "conditions", "merge", "type", "map", ("type",)),
    ("PodStatus", "podIPs", "merge", "ip", "map", ("ip",)),
    ("PodStatus", "resourceClaimStatuses", "merge,retainKeys", "name", "map", ("name",)),
    ("PodStatus", "containerStatuses", "", "", "atomic", ()),
    ("NodeStatus", "conditions", "merge", "type", "map", ("type",)),
    ("NodeStatus", "addresses", "merge", "type", "map", ("type",)),
    ("NodeSpec", "taints", "", "", "atomic", ()),
    ("NodeSpec", "podCIDRs", "merge", "", "set", ()),
    ("NamespaceStatus", "conditions", "merge", "type", "map", ("type",)),
]


@pytest.mark.parametrize(("definition", "path", "strategy", "key", "list_type", "keys"), LISTS)
def test_core_list_semantics(definition: str, path: str, strategy: str, key: str, list_type: str,
                             keys: tuple[str, ...]) -> None:
    node = _at(DEFS, CORE + definition, path)
    assert (node.patch_strategy, node.patch_merge_key, node.list_type, node.list_map_keys) == (
        strategy, key, list_type, keys)


@pytest.mark.parametrize(("definition", "path", "strategy", "key", "list_type", "keys"), [
    (META + "ObjectMeta", "ownerReferences", "merge", "uid", "map", ("uid",)),
    (META + "ObjectMeta", "finalizers", "merge", "", "set", ()),
    (META + "ObjectMeta", "managedFields", "", "", "atomic", ()),
    ("io.k8s.api.resource.v1.ResourceClaim", "status.reservedFor", "merge", "uid", "map", ("uid",)),
    ("io.k8s.api.resource.v1.ResourceClaim", "status.devices", "", "", "map", ("driver", "device", "pool", "shareID")),
    ("io.k8s.api.resource.v1beta1.ResourceClaim", "spec.devices.requests", "", "", "atomic", ()),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", "status.conditions",
     "", "", "map", ("type",)),
])
def test_other_list_semantics(definition: str, path: str, strategy: str, key: str, list_type: str,
                              keys: tuple[str, ...]) -> None:
    node = _at(DEFS, definition, path)
    assert (node.patch_strategy, node.patch_merge_key, node.list_type, node.list_map_keys) == (
        strategy, key, list_type, keys)


def test_pod_spec_fields_users_write() -> None:
    spec = DEFS.get(CORE + "PodSpec").properties
    for field in ("containers", "initContainers", "ephemeralContainers", "volumes", "affinity", "tolerations",
                  "topologySpreadConstraints", "resourceClaims", "schedulingGates", "overhead", "os", "dnsConfig",
                  "hostAliases", "readinessGates", "securityContext", "nodeSelector", "priorityClassName"):
        assert field in spec, field
    container = DEFS.get(CORE + "Container").properties
    for field in ("livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "securityContext", "resources",
                  "env", "envFrom", "volumeMounts", "ports", "resizePolicy", "restartPolicy"):
        assert field in container, field
    volume = DEFS.get(CORE + "Volume").properties
    for field in ("emptyDir", "hostPath", "configMap", "secret", "projected", "persistentVolumeClaim",
                  "downwardAPI", "csi", "ephemeral"):
        assert field in volume and DEFS.resolve(volume[field]).properties, field
    status = DEFS.get(CORE + "ContainerStatus").properties
    assert "allocatedResourcesStatus" in status and "lastState" in status
    assert DEFS.get(CORE + "PodSpec").required == ("containers",)


def test_quantity_and_ports_accept_numbers_or_strings() -> None:
    limits = _at(DEFS, CORE + "ResourceRequirements", "limits")
    assert DEFS.resolve(limits.additional_properties).int_or_string
    port = _at(DEFS, CORE + "HTTPGetAction", "port")
    assert DEFS.resolve(port).int_or_string


@pytest.mark.parametrize(("version", "request_fields", "device_fields"), [
    ("v1", {"name", "exactly", "firstAvailable"}, {"name", "attributes", "capacity", "taints"}),
    ("v1beta2", {"name", "exactly", "firstAvailable"}, {"name", "attributes", "capacity", "taints"}),
    ("v1beta1", {"name", "deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
                 "firstAvailable"}, {"name", "basic"}),
])
def test_dra_version_shapes(version: str, request_fields: set[str], device_fields: set[str]) -> None:
    p = f"io.k8s.api.resource.{version}."
    assert request_fields <= set(DEFS.get(p + "DeviceRequest").properties)
    assert set(DEFS.get(p + "Device").properties) >= device_fields
    if version == "v1beta1":
        assert "exactly" not in DEFS.get(p + "DeviceRequest").properties
        assert {"attributes", "capacity"} <= set(DEFS.get(p + "BasicDevice").properties)
    else:
        assert "basic" not in DEFS.get(p + "Device").properties
        assert DEFS.get(p + "ExactDeviceRequest").required == ("deviceClassName",)


def test_json_schema_props_is_recursive_through_refs() -> None:
    props = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
    node = DEFS.get(props)
    assert node.properties["properties"].additional_properties == Schema(ref=props)
    assert DEFS.resolve(node.properties["not"]).properties == node.properties
    assert node.properties["x-kubernetes-validations"].list_map_keys == ("rule",)


def test_every_field_has_a_description() -> None:
    missing = [f"{name}.{field}" for name, schema in DEFS.items() for field, sub in schema.properties.items()
               if not sub.description]
    assert missing == []
