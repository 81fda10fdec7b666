"""Per-kind strategies: status reset on create, pod update rules, namespace defaults, ConfigMap keys,
and the field labels each kind's fieldSelector accepts (upstream's GetAttrs / field label conversions)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.strategies import Strategy, builtin_strategies
from nodeagent.errors import ValidationError
from nodeagent.pods.updates import UPDATE_FORBIDDEN
from nodeagent.util.clock import FakeClock

STRATEGIES = builtin_strategies()
CLOCK = FakeClock()
POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                       "spec": {"containers": [{"name": "c", "image": "busybox",
                                                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("Pod", {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                 "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}),
        ("Node", {"spec.unschedulable"}),
        ("Namespace", {"status.phase"}),
        ("Event", {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                   "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
                   "reason", "reportingComponent", "source", "type"}),
        ("ResourceSlice", {"spec.nodeName", "spec.driver", "spec.pool.name"}),
        ("ConfigMap", set()),
    ],
)
def test_field_labels(kind: str, fields: set[str]) -> None:
    assert set(STRATEGIES[kind].field_getters()) == {"metadata.name", "metadata.namespace"} | fields


@pytest.mark.parametrize(
    ("kind", "field", "obj", "value"),
    [
        ("Pod", "spec.nodeName", {"spec": {"nodeName": "n1"}}, "n1"),
        ("Pod", "spec.nodeName", {"spec": {}}, ""),
        ("Pod", "spec.hostNetwork", {"spec": {}}, "false"),
        ("Pod", "spec.hostNetwork", {"spec": {"hostNetwork": True}}, "true"),
        ("Node", "spec.unschedulable", {"spec": {"unschedulable": True}}, "true"),
        ("Node", "spec.unschedulable", {}, "false"),
        ("Event", "source", {"source": {"component": "kubelet"}}, "kubelet"),
        ("Event", "source", {"reportingComponent": "scheduler"}, "scheduler"),
        ("ResourceSlice", "spec.pool.name", {"spec": {"pool": {"name": "p1", "generation": 2}}}, "p1"),
        ("ResourceSlice", "spec.pool.name", {"spec": {"pool": "not-an-object"}}, ""),
        ("ConfigMap", "metadata.namespace", {"metadata": {"namespace": "ns"}}, "ns"),
    ],
)
def test_field_values(kind: str, field: str, obj: dict[str, Any], value: str) -> None:
    assert STRATEGIES[kind].field_getters()[field](obj) == value


@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceQuota", "PodSchedulingContext"])
def test_kinds_with_status_subresource_reset_status_on_create(kind: str) -> None:
    obj: dict[str, Any] = {"metadata": {"name": "x"}, "spec": {}, "status": {"anything": 1}}
    STRATEGIES[kind].prepare_for_create(obj, CLOCK)
    assert "status" not in obj


def test_generic_strategy_keeps_status_on_create() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "x"}, "status": {"a": 1}}
    Strategy("Lease").prepare_for_create(obj, CLOCK)
    assert obj["status"] == {"a": 1}


def test_pod_create_starts_pending_with_its_qos_class() -> None:
    obj = copy.deepcopy(POD)
    obj["status"] = {"phase": "Running"}
    STRATEGIES["Pod"].prepare_for_create(obj, CLOCK)
    assert obj["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}


def test_pod_validation_uses_the_node_parser() -> None:
    bad = copy.deepcopy(POD)
    bad["spec"]["containers"] = []
    with pytest.raises(ValidationError):
        STRATEGIES["Pod"].validate(bad, CLOCK)


def test_pod_update_may_change_images_and_deadline() -> None:
    new = copy.deepcopy(POD)
    new["spec"]["containers"][0]["image"] = "nginx"
    new["spec"]["activeDeadlineSeconds"] = 30
    STRATEGIES["Pod"].validate_update(new, POD, CLOCK)


def test_pod_update_of_other_spec_fields_is_forbidden() -> None:
    new = copy.deepcopy(POD)
    new["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"
    with pytest.raises(ValidationError) as err:
        STRATEGIES["Pod"].validate_update(new, POD, CLOCK)
    assert (err.value.path, err.value.detail) == ("spec", f"Forbidden: {UPDATE_FORBIDDEN}")


def test_pod_update_that_omits_the_node_keeps_the_binding() -> None:
    old = copy.deepcopy(POD)
    old["spec"]["nodeName"] = "n1"
    new = copy.deepcopy(POD)
    STRATEGIES["Pod"].validate_update(new, old, CLOCK)
    assert new["spec"]["nodeName"] == "n1"


def test_namespace_create_defaults() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "team", "labels": {"a": "b"}}}
    STRATEGIES["Namespace"].prepare_for_create(obj, CLOCK)
    assert obj["status"] == {"phase": "Active"}
    assert obj["spec"] == {"finalizers": ["kubernetes"]}
    assert obj["metadata"]["labels"] == {"a": "b", "kubernetes.io/metadata.name": "team"}


@pytest.mark.parametrize("name", ["Team", "a_b", "-a", "x" * 64])
def test_namespace_name_must_be_a_dns_label(name: str) -> None:
    with pytest.raises(ValidationError) as err:
        STRATEGIES["Namespace"].validate({"metadata": {"name": name}}, CLOCK)
    assert err.value.path == "metadata.name"


@pytest.mark.parametrize(
    ("obj", "path", "detail"),
    [
        ({"data": {"bad key": "v"}}, "data[bad key]", 'Invalid value: "bad key": a valid config key must consist of '
         "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
         "validation is '[-._a-zA-Z0-9]+')"),
        ({"data": {"k": "v"}, "binaryData": {"k": "dg=="}}, "data[k]",
         'Invalid value: "k": duplicate of key present in binaryData'),
        ({"data": {"a": "x" * 1024 * 1024}, "binaryData": {"b": "dg=="}}, "[]",
         "Too long: may not be more than 1048576 bytes"),
        ({"data": {"k": 1}}, "data[k]", None),
        ({"data": {"..": "v"}}, "data[..]", "Invalid value: \"..\": must not be '..'"),
    ],
)
def test_configmap_keys(obj: dict[str, Any], path: str, detail: str | None) -> None:
    with pytest.raises(ValidationError) as err:
        STRATEGIES["ConfigMap"].validate({"metadata": {"name": "c"}, **obj}, CLOCK)
    assert err.value.path == path
    if detail is not None:
        assert err.value.detail == detail


def test_configmap_valid_keys() -> None:
    STRATEGIES["ConfigMap"].validate({"metadata": {"name": "c"}, "data": {"a.b-C_1": "v"},
                                      "binaryData": {"bin": "dg=="}}, CLOCK)


def test_pod_create_parse_is_passed_on_not_kept() -> None:
    """prepare_for_create answers what it parsed; validate_prepared skips the parse only for that
    answer's very object, spec and metadata; the strategy keeps nothing between the calls."""
    strategy = STRATEGIES["Pod"]
    obj = copy.deepcopy(POD)
    prepared = strategy.prepare_for_create(obj, CLOCK)
    assert prepared is not None and prepared.still(obj)
    obj["spec"]["containers"].clear()  # in place: the parse answered for this spec object
    strategy.validate_prepared(obj, CLOCK, prepared)
    with pytest.raises(ValidationError):
        strategy.validate_prepared(obj, CLOCK, None)
    obj["spec"] = dict(obj["spec"])  # another spec object: parsed again
    with pytest.raises(ValidationError):
        strategy.validate_prepared(obj, CLOCK, prepared)
    assert strategy == builtin_strategies()["Pod"]  # no state: equal to a fresh one


def test_pod_creates_of_equal_pods_parse_once_and_still_check_their_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica (same pod but its names, uid, volumes and mounts) takes the QoS class of the first
    parse and gets only the name checks, which refuse what the whole parse refuses, in its words; a
    pod with other resources is parsed again."""
    from nodeagent.apiserver import strategies
    from nodeagent.objects.pod.manifest import pod_from_manifest as real

    calls: list[str] = []

    def counting(doc: Any, **kw: Any) -> Any:
        calls.append(doc["metadata"].get("name", ""))
        return real(doc, **kw)

    monkeypatch.setattr(strategies, "pod_from_manifest", counting)
    strategy = builtin_strategies()["Pod"]

    def replica(name: str, **extra: Any) -> dict[str, Any]:
        obj = copy.deepcopy(POD)
        obj["metadata"]["name"] = name
        obj["metadata"].update(extra)
        obj["spec"]["volumes"] = [{"name": f"kube-api-access-{name[:5]}", "projected": {"sources": []}}]
        return obj

    for name in ("a", "b"):
        obj = replica(name)
        strategy.prepare_for_create(obj, CLOCK)
        assert obj["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    assert calls == ["a"]
    for bad in (replica("Not_A_Name"), replica("ok", namespace="Bad_NS"), replica("", uid="a/b")):
        with pytest.raises(ValidationError) as remembered:
            strategy.prepare_for_create(bad, CLOCK)
        with pytest.raises(ValidationError) as parsed:
            builtin_strategies()["Pod"].prepare_for_create(copy.deepcopy(bad), CLOCK)
        assert (remembered.value.path, str(remembered.value)) == (parsed.value.path, str(parsed.value))
    other = replica("c")
    del other["spec"]["containers"][0]["resources"]
    strategy.prepare_for_create(other, CLOCK)
    assert other["status"]["qosClass"] == "BestEffort" and calls[-1] == "c"
