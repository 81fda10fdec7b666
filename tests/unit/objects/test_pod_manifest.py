"""Pod manifest parsing, API-server defaulting and validation (paths and wording), and output."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.pod.manifest import (
    aggregate_container_requests,
    is_extended,
    pod_from_manifest,
    pod_to_manifest,
)
from nodeagent.objects.pod.model import Container
from nodeagent.pods import status as st
from nodeagent.util.clock import FakeClock

CLOCK = FakeClock(start=1_700_000_000.0)


def base() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "A", "value": "b"}],
                    "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}},
                }
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
    }


def with_(path: str, value: Any) -> dict[str, Any]:
    """base() with one dotted path set (list indexes as numbers); value None deletes the key."""
    doc = base()
    parts = path.split(".")
    cur: Any = doc
    for part in parts[:-1]:
        cur = cur[int(part)] if isinstance(cur, list) else cur.setdefault(part, {})
    last = parts[-1]
    if value is None:
        del cur[last]
    else:
        cur[last] = value
    return doc


QUANTITY = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

BAD: list[tuple[str, dict[str, Any], str]] = [
    (
        "bad cpu",
        with_("spec.containers.0.resources", {"requests": {"cpu": "abc"}}),
        f'spec.containers[0].resources.requests[cpu]: Invalid value: "abc": {QUANTITY}',
    ),
    (
        "bad name",
        with_("metadata.name", "Bad_Name"),
        'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ),
    ("no containers", with_("spec.containers", []), "spec.containers: Required value"),
    (
        "no name",
        with_("metadata.name", None),
        "metadata.name: Required value: name or generateName is required",
    ),
    (
        "duplicate",
        with_("spec.containers", [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]),
        'spec.containers[1].name: Duplicate value: "a"',
    ),
    (
        "init and regular share names",
        with_("spec.initContainers", [{"name": "app", "image": "x"}]),
        # upstream's validateInitContainers reports the init container's name (regular ones come first)
        'spec.initContainers[0].name: Duplicate value: "app"',
    ),
    (
        "request above limit",
        with_("spec.containers.0.resources", {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        'spec.containers[0].resources.requests: Invalid value: "2": must be '
        "less than or equal to cpu limit of 1",
    ),
    (
        "extended without limit",
        with_("spec.containers.0.resources", {"requests": {"example.com/gpu": "1"}}),
        "spec.containers[0].resources.limits: Required value: Limit must be "
        "set for non overcommitable resources",
    ),
    (
        "extended not integer",
        with_("spec.containers.0.resources", {"limits": {"example.com/gpu": "500m"}}),
        'spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer',
    ),
    (
        "extended request differs",
        with_(
            "spec.containers.0.resources",
            {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
        ),
        'spec.containers[0].resources.requests: Invalid value: "1": must be '
        "equal to example.com/gpu limit of 2",
    ),
    (
        "hugepages alone",
        with_("spec.containers.0.resources", {"limits": {"hugepages-2Mi": "4Mi"}}),
        "spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
    ),
    (
        "hugepages request without limit",
        with_("spec.containers.0.resources", {"requests": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}),
        "spec.containers[0].resources.limits: Required value: Limit must be "
        "set for non overcommitable resources",
    ),
    (
        "negative memory",
        with_("spec.containers.0.resources", {"requests": {"memory": "-1"}}),
        'spec.containers[0].resources.requests[memory]: Invalid value: "-1": '
        "must be greater than or equal to 0",
    ),
    (
        "non-standard name",
        with_("spec.containers.0.resources", {"requests": {"gpu": "1"}}),
        'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": '
        "must be a standard resource for containers",
    ),
    (
        "restart policy",
        with_("spec.restartPolicy", "Sometimes"),
        # validateRestartPolicy's literal list (kube-apiserver v1.37.2 answers in this order)
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "OnFailure", "Never"',
    ),
    (
        # ContainerRestartRules (on in v1.37): a regular container may set Always, Never or OnFailure
        "container restartPolicy",
        with_("spec.containers.0.restartPolicy", "Sometimes"),
        'spec.containers[0].restartPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "Never", "OnFailure"',
    ),
    (
        "init restartPolicy",
        with_("spec.initContainers", [{"name": "i", "image": "x", "restartPolicy": "Rarely"}]),
        'spec.initContainers[0].restartPolicy: Unsupported value: "Rarely": supported values: '
        '"Always", "Never", "OnFailure"',
    ),
    ("no image", with_("spec.containers.0.image", None), "spec.containers[0].image: Required value"),
    (
        "bad container name",
        with_("spec.containers.0.name", "App"),
        'spec.containers[0].name: Invalid value: "App": a lowercase RFC 1123 label must consist of',
    ),
    (
        "bad namespace",
        with_("metadata.namespace", "Prod"),
        'metadata.namespace: Invalid value: "Prod": a lowercase RFC 1123 label',
    ),
    (
        "containers not a list",
        with_("spec.containers", "app"),
        "spec.containers: Invalid type: expected array, got string",
    ),
    (
        "priority type",
        with_("spec.priority", "high"),
        "spec.priority: Invalid type: expected integer, got string",
    ),
    (
        "label value",
        with_("metadata.labels", {"app": "bad value"}),
        'metadata.labels: Invalid value: "bad value": a valid label must be an empty string',
    ),
    (
        "label type",
        with_("metadata.labels", {"app": 3}),
        "metadata.labels[app]: Invalid type: expected string",
    ),
    ("kind", with_("kind", "Deployment"), 'kind: Unsupported value: "Deployment": supported values: "Pod"'),
    ("api version", with_("apiVersion", "apps/v1"), 'apiVersion: Unsupported value: "apps/v1"'),
    ("no spec", with_("spec", None), "spec: Required value"),
    (
        "unknown claim",
        with_("spec.containers.0.resources", {"claims": [{"name": "gpu"}]}),
        'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        "pod.spec.resourceClaims which is empty",
    ),
    (
        "claim without source",
        with_("spec.resourceClaims", [{"name": "gpu"}]),
        "spec.resourceClaims[0]: Required value: must specify one of: `resourceClaimName`, "
        "`resourceClaimTemplateName`",
    ),
    (
        "pod-level unsupported",
        with_("spec.resources", {"limits": {"example.com/gpu": "1"}}),
        "spec.resources.limits[example.com/gpu]: Unsupported value: "
        '"example.com/gpu": supported values: "cpu", '
        '"memory"',
    ),
    (
        "pod-level request above limit",
        with_("spec.resources", {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        'spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
    ),
    (
        "finish-after",
        with_("metadata.annotations", {"nodeagent.dev/finish-after-seconds": "soon"}),
        'metadata.annotations[nodeagent.dev/finish-after-seconds]: Invalid value: "soon": must be a number',
    ),
    (
        "quantity type",
        with_("spec.containers.0.resources", {"limits": {"memory": [1]}}),
        f"spec.containers[0].resources.limits[memory]: Invalid value: [1]: {QUANTITY}",
    ),
    (
        "node selector value",
        with_("spec.nodeSelector", {"zone": "a b"}),
        'spec.nodeSelector: Invalid value: "a b": a valid label must be',
    ),
    (
        "node affinity without terms",
        with_("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
        "Required value: must have at least one node selector term",
    ),
    (
        "node affinity operator",
        with_("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]}}}),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        '.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
    ),
    (
        "preferred weight",
        with_("spec.affinity", {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}}),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
        "Invalid value: 0: must be in the range 1-100",
    ),
    (
        "toleration without key",
        with_("spec.tolerations", [{"operator": "Equal", "value": "x"}]),
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
        'which means "match all values and all keys"',
    ),
    (
        "toleration exists with value",
        with_("spec.tolerations", [{"key": "gpu", "operator": "Exists", "value": "x"}]),
        "spec.tolerations[0].operator: Invalid value: \"x\": value must be empty when `operator` is 'Exists'",
    ),
    (
        "toleration seconds",
        with_("spec.tolerations", [{"key": "gpu", "effect": "NoSchedule", "tolerationSeconds": 5}]),
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
        "`tolerationSeconds` is set",
    ),
    (  # issue 15: a static pod with this uid made nested cgroup folders
        "uid with a slash",
        with_("metadata.uid", "a/b/c"),
        'metadata.uid: Invalid value: "a/b/c": must not contain "/" or be "." or ".."',
    ),
    (
        "uid dot-dot",
        with_("metadata.uid", ".."),
        'metadata.uid: Invalid value: "..": must not contain "/" or be "." or ".."',
    ),
    (
        "toleration effect",
        with_("spec.tolerations", [{"key": "gpu", "effect": "Sometimes"}]),
        'spec.tolerations[0].effect: Unsupported value: "Sometimes": supported values: "NoExecute", '
        '"NoSchedule", "PreferNoSchedule"',
    ),
]


def test_every_field_error_is_reported_in_upstream_order() -> None:
    """ValidatePodCreate's whole ErrorList (kube-apiserver's 422 lists them all), not the first."""
    doc = with_("spec.containers", [{"resources": {}}, {"name": "Bad_Name", "image": "x"}, {"name": "d", "image": "y"}])
    doc["spec"]["initContainers"] = [{"name": "d", "image": "z"}]
    doc["spec"]["restartPolicy"] = "Sometimes"
    with pytest.raises(ValidationError) as err:
        pod_from_manifest(doc, clock=CLOCK)
    assert [(e.path, e.detail.split(":")[0]) for e in getattr(err.value, "errors", [])] == [
        ("spec.containers[0].name", "Required value"), ("spec.containers[0].image", "Required value"),
        ("spec.containers[1].name", "Invalid value"), ("spec.initContainers[0].name", "Duplicate value"),
        ("spec.restartPolicy", "Unsupported value")]


@pytest.mark.parametrize(("doc", "expected"), [(d, e) for _, d, e in BAD], ids=[n for n, _, _ in BAD])
def test_invalid_manifests_name_the_field(doc: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        pod_from_manifest(doc, clock=CLOCK)
    assert str(info.value).startswith(expected), str(info.value)


def test_error_carries_path() -> None:
    with pytest.raises(ValidationError) as info:
        pod_from_manifest(with_("spec.containers.0.resources", {"requests": {"cpu": "abc"}}), clock=CLOCK)
    assert info.value.path == "spec.containers[0].resources.requests[cpu]"


def test_parses_and_is_lenient_about_other_fields() -> None:
    pod = pod_from_manifest(base(), clock=CLOCK)
    assert pod.name == "web"
    assert pod.namespace == "default"
    assert pod.labels == {"app": "web"}
    assert pod.containers[0].requests == {"cpu": 500, "memory": 128 * 2**20}
    assert pod.restart_policy == "Always"
    assert pod.creation_timestamp == CLOCK.now()
    assert len(pod.uid) == 36  # uuid4 for API pods


def test_uid_and_namespace_from_metadata() -> None:
    doc = with_("metadata.uid", "1234")
    doc["metadata"]["namespace"] = "prod"
    pod = pod_from_manifest(doc, clock=CLOCK, uid="ignored")
    assert (pod.uid, pod.namespace) == ("1234", "prod")
    assert pod_from_manifest(base(), clock=CLOCK, uid="given").uid == "given"
    assert pod_from_manifest(base(), clock=CLOCK, default_namespace="kube-system").namespace == "kube-system"


def test_generate_name() -> None:
    doc = with_("metadata.name", None)
    doc["metadata"]["generateName"] = "job-"
    pod = pod_from_manifest(doc, clock=CLOCK, uid="u1")
    assert pod.name.startswith("job-") and len(pod.name) == 9
    assert pod_from_manifest(doc, clock=CLOCK, uid="u1").name == pod.name


def test_requests_default_to_limits() -> None:
    doc = with_(
        "spec.containers.0.resources", {"limits": {"cpu": "1", "memory": "1Gi", "example.com/gpu": 2}}
    )
    c = pod_from_manifest(doc, clock=CLOCK).containers[0]
    assert c.requests == {"cpu": 1000, "memory": 2**30, "example.com/gpu": 2}
    assert c.limits == c.requests


def test_init_containers_claims_and_pod_fields() -> None:
    doc = base()
    doc["spec"].update(
        initContainers=[
            {"name": "side", "image": "x", "restartPolicy": "Always"},
            {"name": "setup", "image": "y"},
        ],
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        priority=100,
        priorityClassName="high",
        nodeName="node-a",
        restartPolicy="Never",
    )
    doc["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu", "request": "r1"}]
    pod = pod_from_manifest(doc, clock=CLOCK)
    assert [c.is_sidecar for c in pod.init_containers] == [True, False]
    assert pod.containers[0].claims[0].name == "gpu" and pod.containers[0].claims[0].request == "r1"
    assert pod.resource_claims[0].resource_claim_template_name == "gpu-template"
    assert (pod.priority, pod.priority_class_name, pod.node_name, pod.restart_policy) == (
        100,
        "high",
        "node-a",
        "Never",
    )


def test_pod_level_requests_default() -> None:
    doc = with_("spec.resources", {"limits": {"cpu": "2", "memory": "1Gi"}})
    pod = pod_from_manifest(doc, clock=CLOCK)
    # cpu/memory requested by the container -> aggregate; else the limit
    assert pod.pod_requests == {"cpu": 500, "memory": 128 * 2**20}
    doc["spec"]["containers"][0]["resources"] = {}
    assert pod_from_manifest(doc, clock=CLOCK).pod_requests == {"cpu": 2000, "memory": 2**30}


def test_aggregate_requests_with_sidecars() -> None:
    regular = (Container("a", requests={"cpu": 100}), Container("b", requests={"cpu": 200}))
    init = (
        Container("i1", requests={"cpu": 500}),
        Container("s1", requests={"cpu": 50, "memory": 10}, restart_policy="Always"),
        Container("i2", requests={"cpu": 400, "memory": 5}),
    )
    # regular+sidecar = 350; init phases: 500, 50, 450 -> cpu 500; memory: max(10, 15) = 15
    assert aggregate_container_requests(regular, init) == {"cpu": 500, "memory": 15}


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("example.com/gpu", True),
        ("cpu", False),
        ("kubernetes.io/foo", False),
        ("hugepages-2Mi", False),
        ("requests.example.com/x", False),
    ],
)
def test_is_extended(name: str, extended: bool) -> None:
    assert is_extended(name) is extended


def test_input_document_is_not_modified() -> None:
    doc = base()
    before = copy.deepcopy(doc)
    pod_from_manifest(doc, clock=CLOCK)
    assert doc == before


def test_to_manifest_shape() -> None:
    pod = pod_from_manifest(with_("metadata.uid", "u-1"), clock=CLOCK)
    status = st.running_status(pod, "Burstable", CLOCK.now())
    out = pod_to_manifest(pod, status)
    assert out["metadata"]["uid"] == "u-1"
    assert out["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert out["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]
    s = out["status"]
    assert (s["phase"], s["qosClass"], s["startTime"]) == ("Running", "Burstable", "2023-11-14T22:13:20Z")
    assert [c["type"] for c in s["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert s["containerStatuses"][0]["state"] == {"running": {"startedAt": "2023-11-14T22:13:20Z"}}
    assert "allocatedResourcesStatus" not in s["containerStatuses"][0]
    done = pod_to_manifest(pod, st.finished_status(status, 3, CLOCK.now() + 5))["status"]
    assert done["phase"] == "Failed"
    assert done["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert done["containerStatuses"][0]["state"]["terminated"]["reason"] == "Error"
    assert done["containerStatuses"][0]["state"]["terminated"]["finishedAt"] == "2023-11-14T22:13:25Z"


@pytest.mark.parametrize("extra", [
    {"plain": {"a": [1, 2.5, True, None, "x"], "t": (1, 2)}},  # a null: the json module's path
    {"date": __import__("datetime").date(2024, 1, 2)},
    {"time": __import__("datetime").datetime(2024, 1, 2, 3, 4, 5)},
    {"nan": float("nan"), "inf": float("inf")},
    {"big": 2**70, "small": -(2**70)},
    {"keys": {1: "int", False: "bool", None: "none", 2.5: "float"}},
    {"set": {1}, "bytes": b"\x00"},
    {"unicode": "é\u2028\x00", "nested": [[{"k": [1.0, 1e300, -0.0]}]]},
])
def test_manifest_copy_is_the_json_module_round_trip(extra: dict[str, Any]) -> None:
    """The parsed pod's manifest is the document as a json.dumps(default=str)/json.loads round trip
    gives it, whichever copy made it (orjson's fast one or the json module's)."""
    import json

    doc = base()
    doc["metadata"]["annotations"] = {"x": "y"}
    doc["spec"]["extra"] = extra
    pod = pod_from_manifest(doc, clock=CLOCK, uid="u1")
    expected = json.loads(json.dumps(doc, default=str))
    expected["metadata"].update(uid="u1", namespace="default", creationTimestamp=pod.manifest["metadata"]
                                ["creationTimestamp"])
    assert json.dumps(pod.manifest, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert pod.manifest["spec"]["extra"] is not extra
