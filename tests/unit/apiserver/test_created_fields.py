"""A create's managedFields: taken as upstream's create handler takes them (from the decoded and
defaulted object, before mutating admission and PrepareForCreate, so a pod's service account volume,
tolerations and priority are nobody's), and the same whether CreatedFields remembered the set of an
equal object or the typed walk computed it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.apply import fieldmanager as ssa
from nodeagent.apiserver.apply.fieldset import FieldSet
from nodeagent.apiserver.apply.typedvalue import Comparison, TypedValueError, Typer
from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

DEFS = builtin_definitions()
CATALOG = Catalog(builtin_resources())
POD = Schema(ref="io.k8s.api.core.v1.Pod")
CM = Schema(ref="io.k8s.api.core.v1.ConfigMap")
_PODS = CATALOG.find("", "v1", "pods")
assert _PODS is not None
PODS = _PODS
NOW = "2027-01-15T08:00:00Z"


def registry() -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": "default", "namespace": "default"}})
    store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                  "value": 1000})
    return Registry(store, CATALOG, DEFS, builtin_strategies(), clock)


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"run": name}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}], **spec}}


def test_pod_create_owns_its_fields_and_defaults_not_what_admission_adds() -> None:
    """kubectl run's managedFields on kube-apiserver v1.37: the written fields and the decoding's
    defaults; the ServiceAccount admission's volume and mount, DefaultTolerationSeconds'
    tolerations and Priority's priority are in the pod but owned by nobody."""
    reg = registry()
    out = reg.create(PODS, "default", pod("web", priorityClassName="high"),
                     WriteOptions(field_manager="kubectl-run")).object
    spec = out["spec"]
    assert spec["volumes"][0]["name"].startswith("kube-api-access-")
    assert spec["containers"][0]["volumeMounts"] and spec["tolerations"] and spec["priority"] == 1000
    [entry] = out["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("kubectl-run", "Update", "v1")
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
        "f:spec": {
            "f:containers": {'k:{"name":"nginx"}': {
                ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
                "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
            "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:priorityClassName": {}, "f:restartPolicy": {},
            "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
        },
    }


def test_replicas_share_one_set_and_differ_where_their_fields_do() -> None:
    reg = registry()
    first = reg.create(PODS, "default", pod("a"), WriteOptions()).object
    second = reg.create(PODS, "default", pod("b"), WriteOptions()).object
    other = reg.create(PODS, "default", pod("c", hostname="c"), WriteOptions()).object
    fields = [o["metadata"]["managedFields"][0]["fieldsV1"] for o in (first, second, other)]
    assert fields[0] is not None and fields[1] is fields[0]  # one walk: the labels differ in value only
    assert fields[2]["f:spec"]["f:hostname"] == {} and "f:hostname" not in fields[0]["f:spec"]


OBJECTS: list[tuple[Schema, dict[str, Any]]] = [
    (POD, pod("p", volumes=[{"name": "v", "emptyDir": {}}], tolerations=[{"key": "k", "operator": "Exists"}])),
    (POD, {**pod("p"), "status": {"phase": "Pending", "qosClass": "BestEffort"}}),
    (POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "uid": "u", "generation": 3}}),
    (CM, {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "c", "namespace": "n", "annotations": {"a": "1"}},
          "data": {"x": "1", "y": "2"}}),
    (CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "empty"}}),
    (CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"n": 2**70}}),
]


def managed(obj: dict[str, Any], schema: Schema, defs: Definitions, created: ssa.CreatedFields | None) -> Any:
    out = ssa.update_managed_fields(None, copy.deepcopy(obj), manager="m", schema=schema, defs=defs,
                                    api_version=obj["apiVersion"], now=NOW, created=created)
    return out["metadata"].get("managedFields")


@pytest.mark.parametrize(("schema", "obj"), OBJECTS)
def test_remembered_sets_are_the_walked_ones(schema: Schema, obj: dict[str, Any]) -> None:
    created = ssa.CreatedFields()
    walked = managed(obj, schema, DEFS, None)
    assert managed(obj, schema, DEFS, created) == walked  # the first: walked and remembered
    again = copy.deepcopy(obj)
    again["metadata"]["name"] = "renamed"
    again["metadata"]["resourceVersion"] = "7"
    assert managed(again, schema, DEFS, created) == walked  # the stripped fields are nobody's either way


def test_a_set_is_remembered_per_schema_and_kind_flavour() -> None:
    """The same text walked with another schema, or as a custom resource (whose nested structs are
    owned with "."), is walked again."""
    created = ssa.CreatedFields()
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}}
    assert managed(obj, POD, DEFS, created) is None  # a pod has no data: nothing owned, remembered so
    as_cm = managed(obj, CM, DEFS, created)
    assert as_cm is not None and as_cm[0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    nested = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
              "spec": {"securityContext": {"runAsUser": 1}}}
    flavours = [ssa.update_managed_fields(None, copy.deepcopy(nested), manager="m", schema=POD, defs=DEFS,
                                          api_version="v1", now=NOW, created=created, builtin_kind=b)
                for b in (True, False)]
    assert flavours[0]["metadata"]["managedFields"] != flavours[1]["metadata"]["managedFields"]


class FailingTyper(Typer):
    """A typer whose walk refuses every object (as upstream's typed conversion can)."""

    walks = 0

    def compare(self, lhs: Any, rhs: Any, s: Schema | None) -> Comparison:
        self.walks += 1
        raise TypedValueError(["spec: refused"])


def test_a_refused_object_gets_no_fields_and_is_not_remembered() -> None:
    """As upstream's UpdateNoErrors: a create whose object the typed walk refuses is stored without
    managedFields, and walked again next time."""
    created, typer = ssa.CreatedFields(), FailingTyper(DEFS)
    for walks in (1, 2):
        with pytest.raises(TypedValueError):
            created.fields(typer, pod("p"), POD, FieldSet())
        assert typer.walks == walks


def test_the_table_is_bounded() -> None:
    created = ssa.CreatedFields(size=2)
    typer = Typer(DEFS)
    for i in range(5):
        created.fields(typer, {"metadata": {"labels": {f"l{i}": "v"}}}, CM, FieldSet())
        assert len(created._table) <= 2


EVENT = Schema(ref="io.k8s.api.events.v1.Event")
STS = Schema(ref="io.k8s.api.apps.v1.StatefulSet")


def event(pod: str, uid: str, note: str, count: int = 0) -> dict[str, Any]:
    """The Scheduled Event the embedded scheduler writes for each pod (events_v1.py's shape)."""
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{pod}.18c3a", "namespace": "default"},
            "eventTime": "2027-01-15T08:00:00.123456Z", "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-bench", "action": "Binding", "reason": "Scheduled",
            "regarding": {"kind": "Pod", "namespace": "default", "name": pod, "uid": uid, "apiVersion": "v1"},
            "note": note, "type": "Normal", "deprecatedCount": count}


def test_objects_differing_in_strings_share_one_walk() -> None:
    """Two Events of one controller differ in names, uids, times and messages only: the second is not
    walked again, and its set is the one the walk gives it."""
    created = ssa.CreatedFields()
    first = managed(event("a", "u-1", "Successfully assigned default/a to node-1"), EVENT, DEFS, created)
    second_obj = event("b", "u-2", "Successfully assigned default/b to node-7")
    second = managed(second_obj, EVENT, DEFS, created)
    assert second == managed(second_obj, EVENT, DEFS, None) == first
    assert first[0]["fieldsV1"]["f:regarding"] == {} and first[0]["fieldsV1"]["f:note"] == {}
    assert len(created._table) == 1


@pytest.mark.parametrize(("schema", "a", "b"), [
    # a string at its Go zero value is nobody's (the walk compares with the empty Go object)
    (STS, {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
           "spec": {"serviceName": "", "selector": {"matchLabels": {"a": "b"}}}},
     {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
      "spec": {"serviceName": "web", "selector": {"matchLabels": {"a": "b"}}}}),
    # an associative list's keys are in the set: lists are kept whole
    (POD, pod("p", containers=[{"name": "a", "image": "i"}]), pod("p", containers=[{"name": "b", "image": "i"}])),
])
def test_values_the_set_depends_on_are_kept_apart(schema: Schema, a: dict[str, Any], b: dict[str, Any]) -> None:
    """Whichever is walked first, each object gets the set its own walk gives (and they differ)."""
    walked = [managed(o, schema, DEFS, None) for o in (a, b)]
    assert walked[0] != walked[1]
    for order in ((a, b), (b, a)):
        created = ssa.CreatedFields()
        for o in order:
            assert managed(o, schema, DEFS, created) == walked[0 if o is a else 1]
