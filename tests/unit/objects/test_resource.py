"""resource.k8s.io admission: field paths and wording of the API server, limits, gates, CEL."""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as r
from nodeagent.store import validation as meta

HAVE_CEL = importlib.util.find_spec("nodeagent.cel.selectors") is not None
needs_cel = pytest.mark.skipif(not HAVE_CEL, reason="nodeagent.cel.selectors is not written yet")

ON = {r.GATE_PRIORITIZED_LIST: True, r.GATE_CONTROL_PLANE_CONTROLLER: True}
NO_LIST = {r.GATE_PRIORITIZED_LIST: False}

Doc = dict[str, Any]


def claim() -> Doc:
    """The KEP-4816 example: a nic plus a gpu with three alternatives, a pcieRoot constraint."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c1", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}},
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {"name": "big-gpu", "deviceClassName": "big-gpu.example.com"},
                            {"name": "mid-gpu", "deviceClassName": "mid-gpu.example.com"},
                            {"name": "small-gpu", "deviceClassName": "small-gpu.example.com", "count": 2},
                        ],
                    },
                ],
                "constraints": [{"requests": ["nic", "gpu"], "matchAttribute": "dra.example.com/pcieRoot"}],
                "config": [
                    {"requests": ["gpu/small-gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}
                ],
            }
        },
    }


def beta_claim() -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c1"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "deviceClassName": "gpu.example.com",
                        "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                        "adminAccess": False,
                    },
                    {"name": "all", "deviceClassName": "nic.example.com", "allocationMode": "All"},
                ]
            }
        },
    }


def device_class() -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
            "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"k": "v"}}}],
        },
    }


def slice_() -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpu"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {
                        "model": {"string": "big"},
                        "dra.example.com/pcieRoot": {"string": "pci-0"},
                        "index": {"int": 0},
                        "driverVersion": {"version": "1.2.3"},
                    },
                    "capacity": {"memory": {"value": "40Gi"}},
                }
            ],
        },
    }


def psc() -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "PodSchedulingContext",
        "metadata": {"name": "pod-1", "namespace": "ns"},
        "spec": {"selectedNode": "node-1", "potentialNodes": ["node-1", "node-2"]},
        "status": {"resourceClaims": [{"name": "gpu", "unsuitableNodes": ["node-2"]}]},
    }


def node() -> Doc:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1", "labels": {"zone": "a"}},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": 110}, "allocatable": {"cpu": "3500m"}},
    }


def allocated_claim() -> Doc:
    doc = claim()
    doc["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "nic", "driver": "nic.example.com", "pool": "node-1", "device": "nic-0"},
                    {"request": "gpu/small-gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
                ],
                "config": [
                    {
                        "source": "FromClaim",
                        "requests": ["gpu/small-gpu"],
                        "opaque": {"driver": "gpu.example.com", "parameters": {}},
                    }
                ],
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "pod-1", "uid": "u1"}],
    }
    return doc


BASES: dict[str, Callable[[], Doc]] = {
    "ResourceClaim": claim,
    "BetaClaim": beta_claim,
    "AllocatedClaim": allocated_claim,
    "DeviceClass": device_class,
    "ResourceSlice": slice_,
    "PodSchedulingContext": psc,
    "Node": node,
}
KIND_OF = {"BetaClaim": "ResourceClaim", "AllocatedClaim": "ResourceClaim"}


def setp(doc: Doc, path: str, value: Any) -> Doc:
    """Set one dotted path (list indexes as numbers); `...` deletes the key."""
    parts = path.split(".")
    cur: Any = doc
    for part in parts[:-1]:
        cur = cur[int(part)] if isinstance(cur, list) else cur.setdefault(part, {})
    last = parts[-1]
    if value is ...:
        del cur[last]
    elif isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return doc


def sub(name: str) -> Doc:
    return {"name": name, "deviceClassName": "c"}


def exact_req(name: str, **body: Any) -> Doc:
    return {"name": name, "exactly": {"deviceClassName": "c", **body}}


REQ0 = "spec.devices.requests.0"
GPU = "spec.devices.requests.1"
DEV0 = "spec.devices.0"
SEL_CEL = {"cel": {"expression": "true"}}

# (base, [(path, value), ...], gates, error path, message prefix)
BAD: list[tuple[str, list[tuple[str, Any]], dict[str, bool], str, str]] = [
    # requests: shape
    (
        "ResourceClaim",
        [(f"{GPU}.firstAvailable", [sub(f"s{i}") for i in range(9)])],
        {},
        "spec.devices.requests[1].firstAvailable",
        "Too many: 9: must have at most 8 items",
    ),
    (
        "ResourceClaim",
        [(f"{GPU}.name", "nic")],
        {},
        "spec.devices.requests[1].name",
        'Duplicate value: "nic"',
    ),
    (
        "ResourceClaim",
        [(f"{GPU}.exactly", {"deviceClassName": "c"})],
        {},
        "spec.devices.requests[1]",
        'Invalid value: "null": exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set',
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly", ...)],
        {},
        "spec.devices.requests[0]",
        "Required value: exactly one of `exactly` or `firstAvailable` is required",
    ),
    (
        "ResourceClaim",
        [(f"{GPU}.firstAvailable.0.firstAvailable", [sub("x")])],
        {},
        "spec.devices.requests[1].firstAvailable[0].firstAvailable",
        "Forbidden: a subrequest cannot have firstAvailable: nesting is not allowed",
    ),
    (
        "ResourceClaim",
        [(f"{GPU}.firstAvailable.1.name", "big-gpu")],
        {},
        "spec.devices.requests[1].firstAvailable[1].name",
        'Duplicate value: "big-gpu"',
    ),
    (
        "ResourceClaim",
        [(f"{GPU}.firstAvailable.0.adminAccess", True)],
        {},
        "spec.devices.requests[1].firstAvailable[0].adminAccess",
        'unknown field "adminAccess"',
    ),
    (
        "ResourceClaim",
        [(f"{GPU}.firstAvailable.2.count", 0)],
        {},
        "spec.devices.requests[1].firstAvailable[2].count",
        "Invalid value: 0: must be greater than zero",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.count", -1)],
        {},
        "spec.devices.requests[0].exactly.count",
        "Invalid value: -1: must be greater than zero",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.allocationMode", "Some")],
        {},
        "spec.devices.requests[0].exactly.allocationMode",
        'Unsupported value: "Some": supported values: "All", "ExactCount"',
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.allocationMode", "All"), (f"{REQ0}.exactly.count", 2)],
        {},
        "spec.devices.requests[0].exactly.count",
        "Invalid value: 2: must not be specified when allocationMode is 'All'",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.deviceClassName", "")],
        {},
        "spec.devices.requests[0].exactly.deviceClassName",
        "Required value",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.deviceClassName", "Bad_Class")],
        {},
        "spec.devices.requests[0].exactly.deviceClassName",
        'Invalid value: "Bad_Class": a lowercase RFC 1123 subdomain',
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.name", "GPU")],
        {},
        "spec.devices.requests[0].name",
        'Invalid value: "GPU": a lowercase RFC 1123 label',
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.name", "")],
        {},
        "spec.devices.requests[0].name",
        "Required value",
    ),
    (
        "ResourceClaim",
        [("spec.devices.requests", [exact_req(f"r{i}") for i in range(33)]), ("spec.devices.constraints", ...)],
        {},
        "spec.devices.requests",
        "Too many: 33: must have at most 32 items",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.selectors", [SEL_CEL] * 33)],
        {},
        "spec.devices.requests[0].exactly.selectors",
        "Too many: 33: must have at most 32 items",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.selectors", [{"cel": {"expression": ""}}])],
        {},
        "spec.devices.requests[0].exactly.selectors[0].cel.expression",
        # kube-apiserver compiles "" as any expression (validateCELExpression): cel-go's syntax error
        "Invalid value: \"\": compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>'",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.selectors", [{}])],
        {},
        "spec.devices.requests[0].exactly.selectors[0].cel",
        "Required value",
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.firstAvaliable", [])],
        {},
        "spec.devices.requests[0].exactly.firstAvaliable",
        'unknown field "firstAvaliable"',
    ),
    (
        "ResourceClaim",
        [(f"{REQ0}.exactly.capacity", {"requests": {"memory": "1 Gi"}})],
        {},
        "spec.devices.requests[0].exactly.capacity.requests[memory]",
        "Invalid value: \"1 Gi\": quantities must match the regular expression",
    ),
    # gates
    (
        "ResourceClaim",
        [],
        NO_LIST,
        "spec.devices.requests[1].firstAvailable",
        "Forbidden: the DRAPrioritizedList feature gate is disabled",
    ),
    (
        "ResourceClaim",
        [("spec.controllerName", "gpu.example.com")],
        {},
        "spec.controllerName",
        "Forbidden: requires the DRAControlPlaneController feature gate",
    ),
    (
        "ResourceClaim",
        [("spec.controllerName", "Not A Driver")],
        ON,
        "spec.controllerName",
        'Invalid value: "Not A Driver": a lowercase RFC 1123 subdomain',
    ),
    # constraints
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.requests", ["nic", "tpu"])],
        {},
        "spec.devices.constraints[0].requests[1]",
        'Invalid value: "tpu": must be the name of a request in the claim or the name of a request and a '
        "subrequest separated by '/'",
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.requests", ["gpu/huge-gpu"])],
        {},
        "spec.devices.constraints[0].requests[0]",
        'Invalid value: "gpu/huge-gpu": must be the name of a request',
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.requests", ["a/b/c"])],
        {},
        "spec.devices.constraints[0].requests[0]",
        'Invalid value: "a/b/c": must be the name of a request',
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.requests", ["nic", "nic"])],
        {},
        "spec.devices.constraints[0].requests[1]",
        'Duplicate value: "nic"',
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.matchAttribute", "pcieRoot")],
        {},
        "spec.devices.constraints[0].matchAttribute",
        'Invalid value: "pcieRoot": must include a domain',
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.matchAttribute", "dra.example.com/pcie-root")],
        {},
        "spec.devices.constraints[0].matchAttribute",
        'Invalid value: "pcie-root": a valid C identifier must start with alphabetic character',
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.matchAttribute", ...)],
        {},
        "spec.devices.constraints[0]",
        "Required value: exactly one of `matchAttribute` or `distinctAttribute` is required",
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints.0.distinctAttribute", "dra.example.com/x")],
        {},
        "spec.devices.constraints[0]",
        'Invalid value: "null": at most one of `matchAttribute` or `distinctAttribute` may be set',
    ),
    (
        "ResourceClaim",
        [("spec.devices.constraints", [{"matchAttribute": "a.b/c"}] * 33)],
        {},
        "spec.devices.constraints",
        "Too many: 33: must have at most 32 items",
    ),
    # config
    (
        "ResourceClaim",
        [("spec.devices.config.0.requests", ["gpu/tiny-gpu"])],
        {},
        "spec.devices.config[0].requests[0]",
        'Invalid value: "gpu/tiny-gpu": must be the name of a request',
    ),
    (
        "ResourceClaim",
        [("spec.devices.config.0.opaque.parameters", [1, 2])],
        {},
        "spec.devices.config[0].opaque.parameters",
        'Invalid value: "<value omitted>": parameters must be a valid JSON object',
    ),
    (
        "ResourceClaim",
        [("spec.devices.config.0.opaque.parameters", ...)],
        {},
        "spec.devices.config[0].opaque.parameters",
        "Required value",
    ),
    (
        "ResourceClaim",
        [("spec.devices.config.0.opaque.parameters", {"x": "y" * 11000})],
        {},
        "spec.devices.config[0].opaque.parameters",
        "Too long: may not be more than 10240 bytes",
    ),
    (
        "ResourceClaim",
        [("spec.devices.config.0.opaque", ...)],
        {},
        "spec.devices.config[0].opaque",
        "Required value",
    ),
    (
        "ResourceClaim",
        [("spec.devices.config.0.opaque.driver", "")],
        {},
        "spec.devices.config[0].opaque.driver",
        "Required value",
    ),
    (
        "ResourceClaim",
        [("spec.devices.config", [{"opaque": {"driver": "d.example.com", "parameters": {}}}] * 33)],
        {},
        "spec.devices.config",
        "Too many: 33: must have at most 32 items",
    ),
    # metadata
    ("ResourceClaim", [("metadata.name", ...)], {}, "metadata.name", "Required value: name or generateName"),
    ("ResourceClaim", [("metadata.name", "UPPER")], {}, "metadata.name", 'Invalid value: "UPPER"'),
    ("ResourceClaim", [("metadata.labels", {"a": "b c"})], {}, "metadata.labels", 'Invalid value: "b c"'),
    ("ResourceClaim", [("apiVersion", "resource.k8s.io/v2")], {}, "apiVersion", 'Unsupported value: "resource'),
    ("DeviceClass", [("metadata.namespace", "ns")], {}, "metadata.namespace", "Forbidden: not allowed on this type"),
    # v1beta1 request shape
    (
        "BetaClaim",
        [(f"{REQ0}.firstAvailable", [sub("a")])],
        {},
        "spec.devices.requests[0]",
        'Invalid value: "null": exactly one of `deviceClassName` or `firstAvailable` must be specified',
    ),
    (
        "BetaClaim",
        [(f"{REQ0}.deviceClassName", ...), (f"{REQ0}.firstAvailable", [sub("a")])],
        {},
        "spec.devices.requests[0].selectors",
        "Invalid value: ",
    ),
    (
        "BetaClaim",
        [(f"{REQ0}.deviceClassName", ...)],
        {},
        "spec.devices.requests[0]",
        "Required value: exactly one of `deviceClassName` or `firstAvailable` must be specified",
    ),
    (
        "BetaClaim",
        [(f"{REQ0}.exactly", {"deviceClassName": "c"})],
        {},
        "spec.devices.requests[0].deviceClassName",
        "Forbidden: must not be set beside `exactly`",
    ),
    (
        "BetaClaim",
        [("spec.devices.requests.1.count", 3)],
        {},
        "spec.devices.requests[1].count",
        "Invalid value: 3: must not be specified when allocationMode is 'All'",
    ),
    (
        "BetaClaim",
        [(f"{REQ0}.count", "2")],
        {},
        "spec.devices.requests[0].count",
        "Invalid type: expected integer, got string",
    ),
    # status
    (
        "AllocatedClaim",
        [("status.allocation.devices.results", [{"request": "nic", "driver": "d", "pool": "p", "device": "x"}] * 33)],
        {},
        "status.allocation.devices.results",
        "Too many: 33: must have at most 32 items",
    ),
    (
        "AllocatedClaim",
        [("status.reservedFor", [{"resource": "pods", "name": "p", "uid": f"u{i}"} for i in range(257)])],
        {},
        "status.reservedFor",
        "Too many: 257: must have at most 256 items",
    ),
    (
        "AllocatedClaim",
        [("status.reservedFor", [{"resource": "pods", "name": "p", "uid": "u"}] * 2)],
        {},
        "status.reservedFor[1].uid",
        'Duplicate value: "u"',
    ),
    (
        "AllocatedClaim",
        [("status.reservedFor.0.uid", ...)],
        {},
        "status.reservedFor[0].uid",
        "Required value",
    ),
    (
        "AllocatedClaim",
        [("status.allocation", ...)],
        {},
        "status.reservedFor",
        "Forbidden: may not be specified when `allocated` is not set",
    ),
    (
        "AllocatedClaim",
        [("status.allocation.devices.results.1.request", "gpu/huge-gpu")],
        {},
        "status.allocation.devices.results[1].request",
        'Invalid value: "gpu/huge-gpu": must be the name of a request',
    ),
    (
        "AllocatedClaim",
        [("status.allocation.devices.results.1.device", "GPU_0")],
        {},
        "status.allocation.devices.results[1].device",
        'Invalid value: "GPU_0": a lowercase RFC 1123 label',
    ),
    (
        "AllocatedClaim",
        [("status.allocation.devices.config.0.source", "FromPod")],
        {},
        "status.allocation.devices.config[0].source",
        'Unsupported value: "FromPod": supported values: "FromClaim", "FromClass"',
    ),
    (
        "AllocatedClaim",
        [("status.allocation.nodeSelector.nodeSelectorTerms", [])],
        {},
        "status.allocation.nodeSelector.nodeSelectorTerms",
        "Required value: must have at least one node selector term",
    ),
    (
        "AllocatedClaim",
        [("status.deallocationRequested", True)],
        ON,
        "status.deallocationRequested",
        "Forbidden: deallocation cannot be requested while `reservedFor` is set",
    ),
    (
        "AllocatedClaim",
        [("status.deallocationRequested", True), ("status.reservedFor", ...)],
        {},
        "status.deallocationRequested",
        "Forbidden: requires the DRAControlPlaneController feature gate",
    ),
    (
        "AllocatedClaim",
        [("status.allocation.controller", "gpu.example.com")],
        {},
        "status.allocation.controller",
        "Forbidden: requires the DRAControlPlaneController feature gate",
    ),
    # DeviceClass
    (
        "DeviceClass",
        [("spec.selectors", [SEL_CEL] * 33)],
        {},
        "spec.selectors",
        "Too many: 33: must have at most 32 items",
    ),
    (
        "DeviceClass",
        [("spec.config", [{"opaque": {"driver": "d.example.com", "parameters": {}}}] * 33)],
        {},
        "spec.config",
        "Too many: 33: must have at most 32 items",
    ),
    (
        "DeviceClass",
        [("spec.config.0.requests", ["a"])],
        {},
        "spec.config[0].requests",
        'unknown field "requests"',
    ),
    (
        "DeviceClass",
        [("spec.extendedResourceName", "gpu")],
        {},
        "spec.extendedResourceName",
        'Invalid value: "gpu": must be a valid extended resource name',
    ),
    (
        "DeviceClass",
        [("spec.suitableNodes", {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]})],
        {},
        "spec.suitableNodes.nodeSelectorTerms[0].matchExpressions[0].operator",
        'Invalid value: "Near": not a valid selector operator',
    ),
    (
        "DeviceClass",
        [("spec.suitableNodes", {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]})],
        {},
        "spec.suitableNodes.nodeSelectorTerms[0].matchExpressions[0].values",
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ),
    # ResourceSlice
    (
        "ResourceSlice",
        [("spec.devices", [{"name": f"d{i}"} for i in range(129)])],
        {},
        "spec.devices",
        "Too many: 129: must have at most 128 items",
    ),
    (
        "ResourceSlice",
        [("spec.devices", [{"name": "d"}, {"name": "d"}])],
        {},
        "spec.devices[1].name",
        'Duplicate value: "d"',
    ),
    (
        "ResourceSlice",
        [("spec.nodeName", ...)],
        {},
        "spec",
        "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
    ),
    (
        "ResourceSlice",
        [("spec.nodeName", ...)],
        {"DRAPartitionableDevices": False},
        "spec",
        "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required",
    ),
    (
        "ResourceSlice",
        [("spec.allNodes", True)],
        {},
        "spec",
        'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, '
        "`perDeviceNodeSelection` is required, but multiple fields are set",
    ),
    (
        "ResourceSlice",
        [
            ("spec.nodeName", ...),
            ("spec.nodeSelector", {"nodeSelectorTerms": [{"matchExpressions": []}, {"matchExpressions": []}]}),
        ],
        {},
        "spec.nodeSelector.nodeSelectorTerms",
        'Invalid value: "<value omitted>": must have exactly one node selector term',
    ),
    ("ResourceSlice", [("spec.driver", "")], {}, "spec.driver", "Required value"),
    ("ResourceSlice", [("spec.driver", "x" * 64)], {}, "spec.driver", "Too long: may not be more than 63 bytes"),
    (
        "ResourceSlice",
        [("spec.pool.resourceSliceCount", 0)],
        {},
        "spec.pool.resourceSliceCount",
        "Invalid value: 0: must be greater than zero",
    ),
    (
        "ResourceSlice",
        [("spec.pool.generation", -1)],
        {},
        "spec.pool.generation",
        "Invalid value: -1: must be greater than or equal to zero",
    ),
    ("ResourceSlice", [("spec.pool.name", "")], {}, "spec.pool.name", "Required value"),
    (
        "ResourceSlice",
        [(f"{DEV0}.name", "gpu.0")],
        {},
        "spec.devices[0].name",
        'Invalid value: "gpu.0": a lowercase RFC 1123 label',
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes.model", {"string": "a", "int": 1})],
        {},
        "spec.devices[0].attributes[model]",
        'Invalid value: "<value omitted>": exactly one value must be specified',
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes.model", {})],
        {},
        "spec.devices[0].attributes[model]",
        "Required value: exactly one value must be specified",
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes.model", {"string": "x" * 65})],
        {},
        "spec.devices[0].attributes[model].string",
        "Too long: may not be more than 64 bytes",
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes.driverVersion", {"version": "1.2"})],
        {},
        "spec.devices[0].attributes[driverVersion].version",
        'Invalid value: "1.2": must be a string compatible with semver.org spec 2.0.0',
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes.a_very_long_attribute_name_over_32_chars", {"int": 1})],
        {},
        "spec.devices[0].attributes[a_very_long_attribute_name_over_32_chars]",
        "Too long: may not be more than 32 bytes",
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes.1st", {"int": 1})],
        {},
        "spec.devices[0].attributes[1st]",
        'Invalid value: "1st": a valid C identifier',
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes.a/b/c", {"int": 1})],
        {},
        "spec.devices[0].attributes[a/b/c]",
        'Invalid value: "a/b/c": must be either a C identifier or a domain followed by a slash followed by a C '
        "identifier",
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes./x", {"int": 1})],
        {},
        "spec.devices[0].attributes[/x]",
        "Required value: the domain must not be empty",
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.capacity.memory", {"value": "40 Gi"})],
        {},
        "spec.devices[0].capacity[memory].value",
        'Invalid value: "40 Gi": quantities must match the regular expression',
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.attributes", {f"a{i}": {"int": i} for i in range(32)})],
        {},
        "spec.devices[0]",
        "Invalid value: 33: the total number of attributes and capacities must not exceed 32",
    ),
    (
        "ResourceSlice",
        [(f"{DEV0}.taints", [{"key": "x", "effect": "PreferNoSchedule"}])],
        {},
        "spec.devices[0].taints[0].effect",
        'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"',
    ),
    # PodSchedulingContext
    (
        "PodSchedulingContext",
        [("spec.potentialNodes", [f"n{i}" for i in range(129)])],
        ON,
        "spec.potentialNodes",
        "Too many: 129: must have at most 128 items",
    ),
    (
        "PodSchedulingContext",
        [("status.resourceClaims.0.unsuitableNodes", [f"n{i}" for i in range(129)])],
        ON,
        "status.resourceClaims[0].unsuitableNodes",
        "Too many: 129: must have at most 128 items",
    ),
    (
        "PodSchedulingContext",
        [("spec.potentialNodes", ["n1", "n1"])],
        ON,
        "spec.potentialNodes[1]",
        'Duplicate value: "n1"',
    ),
    (
        "PodSchedulingContext",
        [("status.resourceClaims", [{"name": "a"}, {"name": "a"}])],
        ON,
        "status.resourceClaims[1]",
        'Duplicate value: "a"',
    ),
    (
        "PodSchedulingContext",
        [("spec.selectedNode", "Node_1")],
        ON,
        "spec.selectedNode",
        'Invalid value: "Node_1": a lowercase RFC 1123 subdomain',
    ),
    (
        "PodSchedulingContext",
        [],
        {},
        "kind",
        "Forbidden: PodSchedulingContext requires the DRAControlPlaneController feature gate",
    ),
    # Node
    (
        "Node",
        [("status.capacity.cpu", "four")],
        {},
        "status.capacity[cpu]",
        'Invalid value: "four": quantities must match',
    ),
    (
        "Node",
        [("status.allocatable.memory", "-1Gi")],
        {},
        "status.allocatable[memory]",
        'Invalid value: "-1Gi": must be greater than or equal to 0',
    ),
    ("Node", [("metadata.labels", {"-bad": "x"})], {}, "metadata.labels", 'Invalid value: "-bad"'),
]


def _id(case: tuple[str, list[tuple[str, Any]], dict[str, bool], str, str]) -> str:
    return f"{case[0]}:{case[3]}:{case[4][:30]}"


@pytest.mark.parametrize("case", BAD, ids=[_id(c) for c in BAD])
def test_bad_objects_name_the_path(case: tuple[str, list[tuple[str, Any]], dict[str, bool], str, str]) -> None:
    base, changes, gates, path, message = case
    doc = BASES[base]()
    for p, v in changes:
        setp(doc, p, v)
    with pytest.raises(ValidationError) as info:
        r.validate(KIND_OF.get(base, base), doc, gates=gates)
    if info.value.path == "" and str(info.value).startswith("["):  # every error is reported, as upstream
        assert str(info.value).startswith(f"[{path}: {message}"), str(info.value)
        return
    assert info.value.path == path, str(info.value)
    assert info.value.detail.startswith(message), str(info.value)
    assert str(info.value).startswith(f"{path}: ")


def test_at_least_thirty_bad_cases() -> None:
    assert len(BAD) >= 30


@pytest.mark.parametrize("base", sorted(BASES))
def test_good_objects_validate_and_are_idempotent(base: str) -> None:
    kind = KIND_OF.get(base, base)
    doc = BASES[base]()
    before = copy.deepcopy(doc)
    out = r.validate(kind, doc, gates=ON)
    assert doc == before, "the input is not modified"
    assert r.validate(kind, out, gates=ON) == out


# --- limits at the boundary are fine ------------------------------------------------------------


def test_limits_at_the_boundary_pass() -> None:
    doc = claim()
    doc["spec"]["devices"]["requests"][1]["firstAvailable"] = [sub(f"s{i}") for i in range(8)]
    doc["spec"]["devices"]["config"] = []
    r.validate("ResourceClaim", doc)
    doc = claim()
    doc["spec"]["devices"]["requests"] = [exact_req(f"r{i}", selectors=[SEL_CEL] * 32) for i in range(32)]
    doc["spec"]["devices"]["constraints"] = [{"matchAttribute": "a.b/c"}] * 32
    doc["spec"]["devices"]["config"] = [{"opaque": {"driver": "d.example.com", "parameters": {}}}] * 32
    r.validate("ResourceClaim", doc)
    s = slice_()
    s["spec"]["devices"] = [{"name": f"d{i}"} for i in range(128)]
    r.validate("ResourceSlice", s)
    p = psc()
    p["spec"]["potentialNodes"] = [f"n{i}" for i in range(128)]
    p["status"]["resourceClaims"][0]["unsuitableNodes"] = [f"n{i}" for i in range(128)]
    r.validate("PodSchedulingContext", p, gates=ON)
    a = allocated_claim()
    a["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": f"u{i}"} for i in range(256)]
    a["status"]["allocation"]["devices"]["results"] = [
        {"request": "nic", "driver": "d", "pool": "p", "device": f"x{i}"} for i in range(32)
    ]
    r.validate("ResourceClaim", a)


# --- normalisation ------------------------------------------------------------------------------


def test_v1beta1_request_shape_is_moved_under_exactly_with_defaults() -> None:
    out = r.validate("ResourceClaim", beta_claim())
    assert out["apiVersion"] == "resource.k8s.io/v1"
    assert out["metadata"]["namespace"] == "default"
    assert out["spec"]["devices"]["requests"] == [
        {
            "name": "gpu",
            "exactly": {
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                "allocationMode": "ExactCount",
                "count": 1,
                "adminAccess": False,
            },
        },
        {"name": "all", "exactly": {"deviceClassName": "nic.example.com", "allocationMode": "All"}},
    ]


def test_v1beta1_first_available_is_kept_and_subrequests_defaulted() -> None:
    doc = beta_claim()
    doc["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [sub("a"), {**sub("b"), "count": 2}]}]
    out = r.validate("ResourceClaim", doc)
    assert out["spec"]["devices"]["requests"][0] == {
        "name": "gpu",
        "firstAvailable": [
            {"name": "a", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1},
            {"name": "b", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 2},
        ],
    }


def test_v1beta1_errors_name_the_path_as_written() -> None:
    doc = beta_claim()
    doc["spec"]["devices"]["requests"][0]["selectors"] = [{"cel": {"expression": ""}}]
    with pytest.raises(ValidationError) as info:
        r.validate("ResourceClaim", doc)
    assert info.value.path == "spec.devices.requests[0].selectors[0].cel.expression"


def test_v1beta1_slice_basic_is_flattened_and_bare_capacity_wrapped() -> None:
    doc = slice_()
    doc["apiVersion"] = "resource.k8s.io/v1beta1"
    doc["spec"]["devices"] = [
        {"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a"}}, "capacity": {"memory": "1Gi"}}},
        {"name": "gpu-1", "basic": {"capacity": {"memory": {"value": 2}}}},
    ]
    out = r.validate("ResourceSlice", doc)
    assert out["apiVersion"] == "resource.k8s.io/v1"
    assert out["spec"]["devices"] == [
        {"name": "gpu-0", "attributes": {"model": {"string": "a"}}, "capacity": {"memory": {"value": "1Gi"}}},
        {"name": "gpu-1", "capacity": {"memory": {"value": "2"}}},
    ]


def test_v1beta1_slice_errors_name_basic() -> None:
    doc = slice_()
    doc["apiVersion"] = "resource.k8s.io/v1beta1"
    doc["spec"]["devices"] = [{"name": "gpu-0", "basic": {"attributes": {"model": {"int": "x"}}}}]
    with pytest.raises(ValidationError) as info:
        r.validate("ResourceSlice", doc)
    assert info.value.path == "spec.devices[0].basic.attributes[model].int"


def test_template_spec_is_normalised_and_paths_are_spec_spec() -> None:
    doc: Doc = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com"}]}},
        },
    }
    out = r.validate("ResourceClaimTemplate", doc)
    assert out["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    assert out["spec"]["metadata"] == {"labels": {"app": "x"}}
    doc["spec"]["spec"]["devices"]["requests"][0]["count"] = 0
    with pytest.raises(ValidationError) as info:
        r.validate("ResourceClaimTemplate", doc)
    assert info.value.path == "spec.spec.devices.requests[0].count"


def test_node_quantities_become_strings() -> None:
    out = r.validate("Node", node())
    assert out["status"]["capacity"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}


def test_generate_name_is_accepted_without_name() -> None:
    doc = claim()
    doc["metadata"] = {"generateName": "pod-1-gpu-", "namespace": "ns"}
    assert r.validate("ResourceClaim", doc)["metadata"]["generateName"] == "pod-1-gpu-"


# --- gates --------------------------------------------------------------------------------------


def test_prioritized_list_gate_on_by_default_and_off_only_rejects_first_available() -> None:
    r.validate("ResourceClaim", claim())  # default gates: on
    doc = claim()
    doc["spec"]["devices"]["requests"] = doc["spec"]["devices"]["requests"][:1]
    doc["spec"]["devices"]["constraints"] = []
    doc["spec"]["devices"]["config"] = []
    r.validate("ResourceClaim", doc, gates=NO_LIST)


def test_control_plane_controller_gate_allows_classic_fields() -> None:
    doc = allocated_claim()
    doc["spec"]["controllerName"] = "gpu.example.com"
    doc["status"]["allocation"]["controller"] = "gpu.example.com"
    out = r.validate("ResourceClaim", doc, gates=ON)
    assert out["spec"]["controllerName"] == "gpu.example.com"
    doc["status"]["reservedFor"] = []
    doc["status"]["deallocationRequested"] = True
    assert r.validate("ResourceClaim", doc, gates=ON)["status"]["deallocationRequested"] is True


# --- CEL ----------------------------------------------------------------------------------------


@needs_cel
@pytest.mark.parametrize(
    ("kind", "build", "path"),
    [
        ("ResourceClaim", claim, "spec.devices.requests[0].exactly.selectors[0].cel.expression"),
        ("ResourceClaim", beta_claim, "spec.devices.requests[0].selectors[0].cel.expression"),
        ("DeviceClass", device_class, "spec.selectors[0].cel.expression"),
    ],
)
def test_bad_cel_expression_is_rejected_with_the_compilers_message(
    kind: str, build: Callable[[], Doc], path: str
) -> None:
    from nodeagent.cel.selectors import CelError, compile_selector

    bad = 'device.driver == "a" &&'
    with pytest.raises(CelError) as compiled:
        compile_selector(bad)
    doc = build()
    if kind == "DeviceClass":
        doc["spec"]["selectors"] = [{"cel": {"expression": bad}}]
    elif doc["apiVersion"].endswith("v1beta1"):
        doc["spec"]["devices"]["requests"][0]["selectors"] = [{"cel": {"expression": bad}}]
    else:
        doc["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": bad}}]
    with pytest.raises(ValidationError) as info:
        r.validate(kind, doc)
    assert info.value.path == path
    # kube-apiserver's text (dracel): "compilation failed: " and cel-go's issues, snippet lines " | "
    detail = compiled.value.detail.replace("\n| ", "\n | ")
    assert info.value.detail == f"Invalid value: {meta.quote(bad)}: compilation failed: {detail}"


@needs_cel
def test_cel_undeclared_variable_in_a_subrequest() -> None:
    doc = claim()
    doc["spec"]["devices"]["requests"][1]["firstAvailable"][2]["selectors"] = [{"cel": {"expression": "gpu.x"}}]
    with pytest.raises(ValidationError) as info:
        r.validate("ResourceClaim", doc)
    assert info.value.path == "spec.devices.requests[1].firstAvailable[2].selectors[0].cel.expression"
    assert "undeclared reference to 'gpu'" in info.value.detail


@needs_cel
def test_good_cel_with_quantity_compiles() -> None:
    doc = claim()
    expr = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
    doc["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": expr}}]
    r.validate("ResourceClaim", doc)


def test_too_long_cel_expression_is_not_compiled() -> None:
    doc = device_class()
    doc["spec"]["selectors"] = [{"cel": {"expression": "true || " * 2000}}]
    with pytest.raises(ValidationError) as info:
        r.validate("DeviceClass", doc)
    assert str(info.value) == "spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"


# --- updates ------------------------------------------------------------------------------------


def test_claim_spec_is_immutable_and_allocation_too() -> None:
    old = r.validate("ResourceClaim", allocated_claim())
    new = copy.deepcopy(old)
    new["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    with pytest.raises(ValidationError, match=r"^spec: Invalid value: .*field is immutable"):
        r.validate_update("ResourceClaim", new, old)
    new = copy.deepcopy(old)
    new["status"]["allocation"]["devices"]["results"][0]["device"] = "nic-1"
    with pytest.raises(ValidationError, match=r"^status.allocation: .*field is immutable"):
        r.validate_update("ResourceClaim", new, old)
    new = copy.deepcopy(old)
    del new["status"]["allocation"]
    del new["status"]["reservedFor"]
    r.validate_update("ResourceClaim", new, old)  # deallocation is fine


def test_no_new_reservations_while_deallocation_is_requested() -> None:
    old = r.validate("ResourceClaim", allocated_claim())
    new = copy.deepcopy(old)
    new["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    new["status"]["reservedFor"].append({"resource": "pods", "name": "p2", "uid": "u2"})
    with pytest.raises(ValidationError, match="new entries may not be added"):
        r.validate_update("ResourceClaim", new, old)
    new["status"]["reservedFor"] = []
    r.validate_update("ResourceClaim", new, old)


def test_slice_driver_pool_and_node_are_immutable() -> None:
    old = r.validate("ResourceSlice", slice_())
    for key, value in (("driver", "other.example.com"), ("nodeName", "node-2")):
        new = copy.deepcopy(old)
        new["spec"][key] = value
        with pytest.raises(ValidationError) as info:
            r.validate_update("ResourceSlice", new, old)
        assert info.value.path == f"spec.{key}"
    new = copy.deepcopy(old)
    new["spec"]["pool"]["generation"] = 2
    r.validate_update("ResourceSlice", new, old)


# --- kinds and hooks ----------------------------------------------------------------------------


def test_kinds_table() -> None:
    by = {k.kind: k for k in r.KINDS}
    assert by["ResourceClaim"].namespaced and not by["ResourceSlice"].namespaced
    assert by["ResourceClaim"].api_versions[0] == "resource.k8s.io/v1"
    assert "resource.k8s.io/v1beta1" in by["DeviceClass"].api_versions
    assert by["PodSchedulingContext"].api_versions == ("resource.k8s.io/v1alpha3",)
    assert by["Node"].api_versions == ("v1",) and by["Node"].resource == "nodes"
    assert by["ResourceClaim"].resource == "resourceclaims.resource.k8s.io"
    with pytest.raises(ValidationError, match=r"^kind: Unsupported value"):
        r.validate("Widget", {})


def test_hooks_default_validates_and_converts() -> None:
    hooks = r.hooks(ON)
    assert set(hooks) == {k.kind for k in r.KINDS}
    out = hooks["ResourceClaim"]["default"](beta_claim())
    assert out["apiVersion"] == "resource.k8s.io/v1"
    assert hooks["ResourceClaim"]["default"](out) == out  # idempotent on the stored shape
    assert "validate" not in hooks["ResourceClaim"]  # default already validates: no second pass
    hooks["ResourceClaim"]["validate_update"](out, out)


def test_store_registry_accepts_the_hooks() -> None:
    kinds = pytest.importorskip("nodeagent.store.kinds", reason="the store is not written yet")
    registry = kinds.builtin_kinds().with_hooks(r.hooks(ON))
    info = registry.get("ResourceClaim")
    assert info.default(beta_claim())["apiVersion"] == "resource.k8s.io/v1"


# --- pods referencing requests ------------------------------------------------------------------


def pod(request: str, group: str = "containers") -> Doc:
    """A pod whose second container (or first init container) uses claim `res` with `request`."""
    user = {"name": "b", "image": "x", "resources": {"claims": [{"name": "res", "request": request}]}}
    spec: Doc = {"resourceClaims": [{"name": "res", "resourceClaimName": "c1"}]}
    spec["containers"] = [{"name": "a", "image": "x"}]
    spec.setdefault(group, []).append(user)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_container_may_reference_a_main_request() -> None:
    r.validate_pod_claim_references(pod("gpu"), {"res": claim()})
    r.validate_pod_claim_references(pod("nic"), {"res": claim()["spec"]})
    r.validate_pod_claim_references(pod(""), {"res": claim()})
    r.validate_pod_claim_references(pod("anything"), {})  # claim unknown yet: not checked


@pytest.mark.parametrize(
    ("request_", "group", "path", "message"),
    [
        (
            "big-gpu",
            "containers",
            "spec.containers[1].resources.claims[0].request",
            'Invalid value: "big-gpu": must be the name of a request in the claim, not a subrequest',
        ),
        (
            "gpu/big-gpu",
            "initContainers",
            "spec.initContainers[0].resources.claims[0].request",
            'Invalid value: "gpu/big-gpu": must be the name of a request in the claim, not a subrequest',
        ),
        (
            "tpu",
            "containers",
            "spec.containers[1].resources.claims[0].request",
            'Invalid value: "tpu": must be the name of a request in the claim',
        ),
    ],
)
def test_container_may_not_reference_a_subrequest(request_: str, group: str, path: str, message: str) -> None:
    doc = pod(request_, group)
    template = {"kind": "ResourceClaimTemplate", "spec": {"spec": claim()["spec"]}}
    with pytest.raises(ValidationError) as info:
        r.validate_pod_claim_references(doc, {"res": template})
    assert info.value.path == path
    assert info.value.detail.startswith(message)
