"""Server-side printing: columns and cells as upstream's printers compute them."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver import tables
from nodeagent.apiserver.catalog import Resource, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.store.meta import rfc3339
from nodeagent.util.timefmt import human_duration

NOW = 1_750_000_000.0
RESOURCES = {(r.group, r.version, r.kind): r for r in builtin_resources()}


def ago(seconds: float) -> str:
    return rfc3339(NOW - seconds)


def res(kind: str, group: str = "", version: str = "v1") -> Resource:
    return RESOURCES[(group, version, kind)]


def cells(resource: Resource, obj: dict[str, Any], **kw: Any) -> list[Any]:
    row: list[Any] = tables.table(resource, [obj], now=NOW, **kw)["rows"][0]["cells"]
    return row


def columns(resource: Resource, **kw: Any) -> list[tuple[str, str, str, int]]:
    out = tables.table(resource, [], now=NOW, **kw)["columnDefinitions"]
    return [(c["name"], c["type"], c["format"], c["priority"]) for c in out]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-3, "<invalid>"), (-1.5, "0s"), (0, "0s"), (5, "5s"), (119, "119s"), (120, "2m"), (182, "3m2s"),
        (599, "9m59s"), (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"),
        (8 * 3600 - 60, "7h59m"), (8 * 3600, "8h"), (47 * 3600, "47h"), (48 * 3600, "2d"),
        (51 * 3600, "2d3h"), (8 * 86400 - 3600, "7d23h"), (12 * 86400, "12d"), (729 * 86400, "729d"),
        (730 * 86400, "2y"), (731 * 86400, "2y1d"), (8 * 365 * 86400, "8y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


# --- Pod -----------------------------------------------------------------------------------------


def pod(status: dict[str, Any], *, spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "creationTimestamp": ago(300), **meta},
        "spec": spec or {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
        "status": status,
    }


RUNNING = {"running": {"startedAt": ago(100)}}


@pytest.mark.parametrize(
    ("status", "meta", "expected"),
    [
        ({"phase": "Pending"}, {}, ["0/2", "Pending", "0"]),
        ({"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": True, "restartCount": 3, "state": RUNNING},
            {"name": "b", "restartCount": 3, "state": RUNNING}]}, {}, ["1/2", "Running", "6"]),
        ({"phase": "Pending", "containerStatuses": [
            {"name": "a", "state": {"waiting": {"reason": "ContainerCreating"}}}]}, {},
         ["0/2", "ContainerCreating", "0"]),
        ({"phase": "Running", "containerStatuses": [
            {"name": "a", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(302 - 2)}}}]}, {},
         ["0/2", "CrashLoopBackOff", "2 (5m ago)"]),
        ({"phase": "Running", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 1}}}]}, {}, ["0/2", "ExitCode:1", "0"]),
        ({"phase": "Running", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}, {}, ["0/2", "Signal:9", "0"]),
        ({"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}, {},
         ["0/2", "Completed", "0"]),
        ({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}], "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "b", "ready": True, "state": RUNNING}]}, {}, ["1/2", "Running", "0"]),
        ({"phase": "Running", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "b", "ready": True, "state": RUNNING}]}, {}, ["1/2", "NotReady", "0"]),
        ({"phase": "Running", "containerStatuses": [{"name": "a", "ready": True, "state": RUNNING}]},
         {"deletionTimestamp": ago(1)}, ["1/2", "Terminating", "0"]),
        ({"phase": "Running", "reason": "NodeLost"}, {"deletionTimestamp": ago(1)}, ["0/2", "Unknown", "0"]),
        ({"phase": "Failed", "reason": "Evicted"}, {"deletionTimestamp": ago(1)}, ["0/2", "Evicted", "0"]),
        ({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                              "reason": "SchedulingGated"}]}, {}, ["0/2", "SchedulingGated", "0"]),
        # walked from the last container to the first: the first one's reason is shown
        ({"phase": "Pending", "containerStatuses": [
            {"name": "a", "state": {"waiting": {"reason": "ErrImagePull"}}},
            {"name": "b", "state": {"terminated": {"exitCode": 3}}}]}, {}, ["0/2", "ErrImagePull", "0"]),
        # what is no object or of the wrong type counts for nothing (the fast walk reads as common.get)
        ({"phase": "Running", "containerStatuses": [
            "x", {"name": "a", "restartCount": True, "state": "s", "lastState": {"terminated": "t"}},
            {"name": "b", "ready": True, "restartCount": 2, "state": {"waiting": None, "running": {}}}]}, {},
         ["1/2", "Running", "2"]),
    ],
)
def test_pod_ready_status_restarts(status: dict[str, Any], meta: dict[str, Any], expected: list[Any]) -> None:
    assert cells(res("Pod"), pod(status, **meta))[1:4] == expected


INIT_SPEC = {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]}


@pytest.mark.parametrize(
    ("init", "expected"),
    [
        ([], "Init:0/2"),
        ([{"name": "i1", "state": {"running": {}}}], "Init:0/2"),
        ([{"name": "i1", "state": {"terminated": {"exitCode": 0}}}, {"name": "i2", "state": {"running": {}}}],
         "Init:1/2"),
        ([{"name": "i1", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}], "Init:CrashLoopBackOff"),
        ([{"name": "i1", "state": {"waiting": {"reason": "PodInitializing"}}}], "Init:0/2"),
        ([{"name": "i1", "state": {"terminated": {"exitCode": 2}}}], "Init:ExitCode:2"),
        ([{"name": "i1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}], "Init:Error"),
    ],
)
def test_pod_init_containers(init: list[dict[str, Any]], expected: str) -> None:
    status: dict[str, Any] = {"phase": "Pending", "initContainerStatuses": init}
    if not init:
        status["initContainerStatuses"] = [{"name": "i1", "state": {"waiting": {}}}]
    assert cells(res("Pod"), pod(status, spec=INIT_SPEC))[2] == expected


def test_pod_sidecar_counts_as_a_container() -> None:
    spec = {"initContainers": [{"name": "side", "restartPolicy": "Always"}], "containers": [{"name": "a"}]}
    status = {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
              "initContainerStatuses": [{"name": "side", "started": True, "ready": True, "restartCount": 1,
                                         "state": RUNNING}],
              "containerStatuses": [{"name": "a", "ready": True, "state": RUNNING}]}
    assert cells(res("Pod"), pod(status, spec=spec))[1:4] == ["2/2", "Running", "1"]


def test_pod_full_row_and_wide_columns() -> None:
    p = pod({"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}], "nominatedNodeName": "",
             "conditions": [{"type": "example.com/gate", "status": "True"}],
             "containerStatuses": [{"name": "a", "ready": True, "state": RUNNING}]},
            spec={"containers": [{"name": "a"}], "nodeName": "n1",
                  "readinessGates": [{"conditionType": "example.com/gate"}, {"conditionType": "other"}]})
    assert cells(res("Pod"), p) == ["p", "1/1", "Running", "0", "5m", "10.0.0.5", "n1", "<none>", "1/2"]
    assert columns(res("Pod")) == [
        ("Name", "string", "name", 0), ("Ready", "string", "", 0), ("Status", "string", "", 0),
        ("Restarts", "string", "", 0), ("Age", "string", "", 0), ("IP", "string", "", 1), ("Node", "string", "", 1),
        ("Nominated Node", "string", "", 1), ("Readiness Gates", "string", "", 1),
    ]


def test_pod_row_conditions_for_finished_pods() -> None:
    row = tables.table(res("Pod"), [pod({"phase": "Succeeded"})], now=NOW)["rows"][0]
    assert row["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                  "message": "The pod has completed successfully."}]
    assert "conditions" not in tables.table(res("Pod"), [pod({"phase": "Running"})], now=NOW)["rows"][0]


# --- Node, Namespace, small kinds ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "unschedulable", "status"),
    [
        ([{"type": "Ready", "status": "True"}], False, "Ready"),
        ([{"type": "Ready", "status": "False"}], False, "NotReady"),
        ([{"type": "Ready", "status": "Unknown"}], True, "NotReady,SchedulingDisabled"),
        ([], False, "Unknown"),
        ([{"type": "MemoryPressure", "status": "False"}], True, "Unknown,SchedulingDisabled"),
    ],
)
def test_node_status(conditions: list[dict[str, Any]], unschedulable: bool, status: str) -> None:
    node = {"metadata": {"name": "n1"}, "spec": {"unschedulable": unschedulable}, "status": {"conditions": conditions}}
    assert cells(res("Node"), node)[1] == status


def test_node_row() -> None:
    node = {
        "metadata": {"name": "n1", "creationTimestamp": ago(51 * 3600),
                     "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x",
                                "kubernetes.io/role": "worker"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.1.1.1"}],
                   "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian GNU/Linux 12 (bookworm)"}},
    }
    assert cells(res("Node"), node) == [
        "n1", "Ready", "control-plane,worker", "2d3h", "v1.33.0", "10.1.1.1", "<none>",
        "Debian GNU/Linux 12 (bookworm)", "<unknown>", "<unknown>",
    ]


@pytest.mark.parametrize(
    ("kind", "group", "obj", "expected"),
    [
        ("Namespace", "", {"metadata": {"name": "ns", "creationTimestamp": ago(4 * 3600)},
                           "status": {"phase": "Active"}}, ["ns", "Active", "4h"]),
        ("ConfigMap", "", {"metadata": {"name": "cm", "creationTimestamp": ago(5)},
                           "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}, ["cm", 3, "5s"]),
        ("ServiceAccount", "", {"metadata": {"name": "default", "creationTimestamp": ago(60)}}, ["default", 0, "60s"]),
        ("Lease", "coordination.k8s.io", {"metadata": {"name": "n1", "creationTimestamp": ago(12 * 86400)},
                                          "spec": {"holderIdentity": "n1"}}, ["n1", "n1", "12d"]),
        ("ResourceQuota", "", {"metadata": {"name": "q", "creationTimestamp": ago(30)},
                               "status": {"hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "1Gi",
                                                   "requests.gpu.example.com/devices": "4"},
                                          "used": {"pods": "1", "requests.cpu": "500m"}}},
         ["q", "30s", "pods: 1/10, requests.cpu: 500m/2, requests.gpu.example.com/devices: 0/4",
          "limits.memory: 0/1Gi"]),
        ("Namespace", "", {"metadata": {"name": "old"}}, ["old", "", "<unknown>"]),
    ],
)
def test_small_kinds(kind: str, group: str, obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells(res(kind, group), obj) == expected


# --- Event ---------------------------------------------------------------------------------------

EVENT = {
    "apiVersion": "v1", "kind": "Event",
    "metadata": {"name": "p.1", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
    "reason": "Pulled", "message": "  Pulled image \n", "type": "Normal",
    "source": {"component": "kubelet", "host": "n1"},
    "firstTimestamp": ago(600), "lastTimestamp": ago(60), "count": 4,
}


def test_event_row_and_columns() -> None:
    assert cells(res("Event"), EVENT) == [
        "60s", "Normal", "Pulled", "pod/p", "spec.containers{a}", "kubelet, n1", "Pulled image", "10m", 4, "p.1",
    ]
    assert [(n, p) for n, _, _, p in columns(res("Event"))] == [
        ("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1), ("Source", 1),
        ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1),
    ]


def test_new_api_event_uses_event_time_series_and_reporting_controller() -> None:
    event = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
        "regarding": {"kind": "Node"}, "reason": "Ready", "note": "ok", "type": "Normal",
        "eventTime": ago(200), "reportingController": "nodeagent", "reportingInstance": "n1",
        "series": {"count": 7, "lastObservedTime": ago(3)},
    }
    assert cells(res("Event", "events.k8s.io"), event) == [
        "3s", "Normal", "Ready", "node", "", "nodeagent, n1", "ok", "3m20s", 7, "e",
    ]
    singleton = {**event, "series": None}
    assert cells(res("Event", "events.k8s.io"), singleton)[0] == "3m20s"
    assert cells(res("Event", "events.k8s.io"), singleton)[8] == 1


# --- resource.k8s.io -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "status", "state"),
    [
        ({}, {}, "pending"),
        ({}, {"allocation": {"devices": {"results": []}}}, "allocated"),
        ({}, {"allocation": {}, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}, "allocated,reserved"),
        ({"deletionTimestamp": ago(1)}, {}, "deleted"),
        ({"deletionTimestamp": ago(1)}, {"allocation": {}, "reservedFor": [{"name": "p"}]},
         "deleted,allocated,reserved"),
    ],
)
@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_resource_claim_state(meta: dict[str, Any], status: dict[str, Any], state: str, version: str) -> None:
    claim = {"metadata": {"name": "c", "creationTimestamp": ago(5), **meta}, "spec": {}, "status": status}
    assert cells(res("ResourceClaim", "resource.k8s.io", version), claim) == ["c", state, "5s"]


@pytest.mark.parametrize(
    ("kind", "version", "obj", "expected"),
    [
        ("DeviceClass", "v1", {"metadata": {"name": "gpu", "creationTimestamp": ago(7)}}, ["gpu", "7s"]),
        ("ResourceClaimTemplate", "v1beta1", {"metadata": {"name": "t", "creationTimestamp": ago(7)}}, ["t", "7s"]),
        ("ResourceSlice", "v1", {"metadata": {"name": "s", "creationTimestamp": ago(7)},
                                 "spec": {"nodeName": "n1", "driver": "gpu.example.com", "pool": {"name": "n1"}}},
         ["s", "n1", "gpu.example.com", "n1", "7s"]),
        ("ResourceSlice", "v1", {"metadata": {"name": "s"}, "spec": {"allNodes": True, "driver": "d",
                                                                     "pool": {"name": "p"}}},
         ["s", "", "d", "p", "<unknown>"]),
        ("PodSchedulingContext", "v1alpha3", {"metadata": {"name": "p"}, "spec": {"selectedNode": "n2"}},
         ["p", "n2", "<unknown>"]),
    ],
)
def test_resource_kinds(kind: str, version: str, obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells(res(kind, "resource.k8s.io", version), obj) == expected


def test_resource_slice_columns() -> None:
    assert [c[0] for c in columns(res("ResourceSlice", "resource.k8s.io"))] == ["Name", "Node", "Driver", "Pool",
                                                                                 "Age"]


# --- custom resources and the default convertor --------------------------------------------------

WIDGET = Resource("example.com", "v1", "widgets", "Widget", True, "com.example.v1.Widget")
WIDGET_OBJ = {
    "apiVersion": "example.com/v1", "kind": "Widget",
    "metadata": {"name": "w", "creationTimestamp": ago(90), "labels": {"app.kubernetes.io/name": "shop"}},
    "spec": {"replicas": 3, "ratio": 2.5, "paused": True, "selector": {"b": 1, "a": 2}, "started": ago(600)},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}
COLUMNS: list[dict[str, Any]] = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
     "description": "Whether it is ready"},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1},
    {"name": "Ratio As Int", "type": "integer", "jsonPath": ".spec.ratio"},
    {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
    {"name": "Selector", "type": "string", "jsonPath": ".spec.selector"},
    {"name": "App", "type": "string", "jsonPath": ".metadata.labels['app.kubernetes.io/name']"},
    {"name": "Started", "type": "date", "jsonPath": ".spec.started"},
    {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
    {"name": "Wrong Type", "type": "boolean", "jsonPath": ".spec.replicas"},
]


def test_custom_resource_columns() -> None:
    out = tables.table(WIDGET, [WIDGET_OBJ], now=NOW, printer_columns=COLUMNS)
    assert out["rows"][0]["cells"] == ["w", 3, "True", 2.5, 2, True, '{"a":2,"b":1}', "shop", "10m", None, None]
    defs = out["columnDefinitions"]
    assert defs[1] == {"name": "Replicas", "type": "integer", "format": "", "priority": 0,
                       "description": "Custom resource definition column (in JSONPath format): .spec.replicas"}
    assert defs[2]["description"] == "Whether it is ready"
    assert defs[3]["priority"] == 1


@pytest.mark.parametrize("declared", [[], None])
def test_custom_resource_without_columns_shows_age(declared: list[dict[str, Any]] | None) -> None:
    out = tables.table(WIDGET, [WIDGET_OBJ], now=NOW, printer_columns=declared)
    assert [c["name"] for c in out["columnDefinitions"]] == ["Name", "Age"]
    assert out["columnDefinitions"][1]["type"] == "date"
    assert out["rows"][0]["cells"] == ["w", "90s"]


def test_custom_resource_invalid_column_ends_the_list() -> None:
    cols = [COLUMNS[0], {"name": "Bad", "type": "string", "jsonPath": ".spec[0"}, COLUMNS[1]]
    out = tables.table(WIDGET, [WIDGET_OBJ], now=NOW, printer_columns=cols)
    assert [c["name"] for c in out["columnDefinitions"]] == ["Name", "Replicas"]


@pytest.mark.parametrize(("value", "cell"), [("", "<unknown>"), ("yesterday", "<invalid>")])
def test_custom_date_column_edge_cases(value: str, cell: str) -> None:
    obj = {"metadata": {"name": "w"}, "spec": {"started": value}}
    out = tables.table(WIDGET, [obj], now=NOW, printer_columns=[COLUMNS[7]])
    assert out["rows"][0]["cells"] == ["w", cell]


def test_default_convertor_for_crds() -> None:
    crd = res("CustomResourceDefinition", "apiextensions.k8s.io")
    obj = {"metadata": {"name": "widgets.example.com", "creationTimestamp": "2025-06-15T10:20:30.5Z"}}
    assert columns(crd) == [("Name", "string", "name", 0), ("Created At", "date", "", 0)]
    assert cells(crd, obj) == ["widgets.example.com", "2025-06-15T10:20:30Z"]
    assert cells(crd, {"metadata": {"name": "x"}}) == ["x", "0001-01-01T00:00:00Z"]


# --- the Table envelope ----------------------------------------------------------------------------

CM = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "cm", "namespace": "default", "resourceVersion": "42", "uid": "u1"}, "data": {}}


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        ("Metadata", {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": CM["metadata"]}),
        ("", {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": CM["metadata"]}),
        ("Object", CM),
        ("None", None),
    ],
)
def test_include_object(include: str, expected: Any) -> None:
    out = tables.table(res("ConfigMap"), [CM], now=NOW, include_object=include)
    assert out["rows"][0]["object"] == expected


def test_unknown_include_object_is_a_bad_request() -> None:
    with pytest.raises(APIError) as err:
        tables.table(res("ConfigMap"), [CM], now=NOW, include_object="Everything")
    assert (err.value.code, err.value.message) == (400, 'unrecognized includeObject value: "Everything"')


def test_table_metadata() -> None:
    single = tables.table(res("ConfigMap"), [CM], now=NOW)
    assert single["kind"] == "Table" and single["apiVersion"] == "meta.k8s.io/v1"
    assert single["metadata"] == {"resourceVersion": "42"}
    listed = tables.table(res("ConfigMap"), [CM, CM], now=NOW,
                          list_meta={"resourceVersion": "50", "continue": "abc", "remainingItemCount": 3})
    assert listed["metadata"] == {"resourceVersion": "50", "continue": "abc", "remainingItemCount": 3}
    assert len(listed["rows"]) == 2
    empty = tables.table(res("ConfigMap"), [], now=NOW, list_meta={"resourceVersion": "7", "continue": ""})
    assert empty["metadata"] == {"resourceVersion": "7"} and empty["rows"] == []
    assert tables.table(res("ConfigMap"), [CM], now=NOW, no_headers=True)["columnDefinitions"] is None
