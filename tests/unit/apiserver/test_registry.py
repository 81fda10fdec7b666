"""The generic registry against upstream's registry/generic Store: CRUD, selectors, pagination,
preconditions, status subresources, dry run, propagation, namespaces, binding, conversion,
field validation, patches and apply, all in process over an in-memory store."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import BodyFacts, DeleteOptions, WriteOptions
from nodeagent.apiserver.registry import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, BindingGates, Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.schema.fields import decode_json
from nodeagent.apiserver.selection import decode_continue, parse_field_selector, parse_label_selector
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.controlplane.controllers.garbagecollector import GarbageCollector
from nodeagent.controlplane.controllers.namespace import NamespaceController
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
CATALOG = Catalog(builtin_resources())
DEFS = builtin_definitions()
W = WriteOptions()


def res(plural: str, group: str = "", version: str = "v1") -> Resource:
    found = CATALOG.find(group, version, plural)
    assert found is not None
    return found


CM, PODS, NS = res("configmaps"), res("pods"), res("namespaces")
CLAIMS = res("resourceclaims", "resource.k8s.io")
SLICES_V1, SLICES_B1 = res("resourceslices", "resource.k8s.io"), res("resourceslices", "resource.k8s.io", "v1beta1")


@pytest.fixture
def reg() -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    # what the serviceaccount controller keeps (namespace_companions.py): the ServiceAccount admission needs it
    store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": "default", "namespace": "default"}})
    return Registry(store, Catalog(builtin_resources()), DEFS, builtin_strategies(), clock)


def failure(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as err:
        call()
    return err.value


def cm(name: str, namespace: str = "default", labels: dict[str, str] | None = None, **data: str) -> Obj:
    md: Obj = {"name": name, "namespace": namespace}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": dict(data)}


def pod(name: str = "p", image: str = "busybox") -> Obj:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": image}]}}


def names(items: list[Obj]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


def make_namespace(reg: Registry, name: str) -> None:
    reg.create(NS, "", {"metadata": {"name": name}}, W)


# --- create and read ---------------------------------------------------------------------


def test_create_then_get_fills_system_fields(reg: Registry) -> None:
    out = reg.create(CM, "default", {"metadata": {"name": "a"}, "data": {"k": "v"}}, W)
    assert out.created
    md = out.object["metadata"]
    assert (out.object["apiVersion"], out.object["kind"], md["namespace"]) == ("v1", "ConfigMap", "default")
    assert md["uid"] and md["creationTimestamp"] and int(md["resourceVersion"]) == reg.store.resource_version
    assert reg.get(CM, "default", "a") == out.object


def test_get_missing_is_404_with_upstream_details(reg: Registry) -> None:
    err = failure(lambda: reg.get(CLAIMS, "default", "nope"))
    assert (err.code, err.reason, err.message) == (404, "NotFound", 'resourceclaims.resource.k8s.io "nope" not found')
    assert err.details == {"name": "nope", "group": "resource.k8s.io", "kind": "resourceclaims"}


def test_create_sets_system_fields_the_client_cannot(reg: Registry) -> None:
    body = {"metadata": {"name": "a", "uid": "mine", "resourceVersion": "77",
                         "creationTimestamp": "2000-01-01T00:00:00Z"}}
    md = reg.create(CM, "default", body, W).object["metadata"]
    assert md["uid"] != "mine" and md["resourceVersion"] != "77" and md["creationTimestamp"] != "2000-01-01T00:00:00Z"


def test_create_twice_is_409_already_exists(reg: Registry) -> None:
    reg.create(CM, "default", cm("a"), W)
    err = failure(lambda: reg.create(CM, "default", cm("a"), W))
    assert (err.code, err.reason, err.message) == (409, "AlreadyExists", 'configmaps "a" already exists')


def test_generate_name(reg: Registry) -> None:
    made = reg.create(CM, "default", {"metadata": {"generateName": "gen-"}}, W).object["metadata"]
    assert made["name"].startswith("gen-") and len(made["name"]) == len("gen-") + 5
    assert made["generateName"] == "gen-"
    assert reg.get(CM, "default", made["name"])["metadata"]["uid"] == made["uid"]


@pytest.mark.parametrize(
    ("body", "url_ns", "message"),
    [
        ({"apiVersion": "v2", "metadata": {"name": "a"}}, "default",
         "the API version in the data (v2) does not match the expected API version (v1)"),
        ({"kind": "Secret", "metadata": {"name": "a"}}, "default",
         "the kind in the data (Secret) does not match the expected kind (ConfigMap)"),
        ({"metadata": {"name": "a", "namespace": "other"}}, "default",
         "the namespace of the provided object does not match the namespace sent on the request"),
    ],
)
def test_create_body_mismatch_is_400(reg: Registry, body: Obj, url_ns: str, message: str) -> None:
    err = failure(lambda: reg.create(CM, url_ns, body, W))
    assert (err.code, err.reason, err.message) == (400, "BadRequest", message)


def test_create_into_missing_namespace_is_404(reg: Registry) -> None:
    err = failure(lambda: reg.create(CM, "x", cm("a", "x"), W))
    assert (err.code, err.message) == (404, 'namespaces "x" not found')
    assert err.details == {"name": "x", "kind": "namespaces"}
    assert reg.store.peek("ConfigMap", "x", "a") is None


def test_cluster_scoped_create_drops_a_namespace(reg: Registry) -> None:
    out = reg.create(NS, "", {"metadata": {"name": "team", "namespace": "whatever"}}, W).object
    assert "namespace" not in out["metadata"]
    assert out["status"] == {"phase": "Active"} and out["spec"] == {"finalizers": ["kubernetes"]}
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}


# --- list ----------------------------------------------------------------------------------


@pytest.fixture
def spread(reg: Registry) -> Registry:
    make_namespace(reg, "team")
    for name, ns, tier in (("a", "team", "web"), ("b", "default", "db"), ("c", "team", "db"), ("d", "default", "web"),
                           ("e", "team", "web")):
        reg.create(CM, ns, cm(name, ns, {"tier": tier}), W)
    return reg


@pytest.mark.parametrize(
    ("namespace", "labels", "fields", "expected"),
    [
        ("", "", "", ["b", "d", "a", "c", "e"]),  # sorted by namespace, then name
        ("team", "", "", ["a", "c", "e"]),
        ("", "tier=web", "", ["d", "a", "e"]),
        ("", "tier!=web", "", ["b", "c"]),
        ("", "tier in (db)", "metadata.namespace=team", ["c"]),
        ("team", "", "metadata.name!=c", ["a", "e"]),
        ("", "", "metadata.name==d", ["d"]),
        ("", "missing", "", []),
    ],
)
def test_list_by_namespace_labels_and_fields(spread: Registry, namespace: str, labels: str, fields: str,
                                             expected: list[str]) -> None:
    getters = spread.behaviour(CM).strategy.field_getters()
    sel = parse_label_selector(labels) if labels else None
    fsel = parse_field_selector(fields, getters, "ConfigMap", "v1") if fields else None
    items, rv, token, remaining = spread.list(CM, namespace, sel, fsel)
    assert names(items) == expected
    assert (rv, token, remaining) == (spread.store.resource_version, "", None)


def test_list_limit_and_continue_walks_every_item_at_one_version(spread: Registry) -> None:
    first, rv, token, remaining = spread.list(CM, "", None, None, limit=2)
    assert names(first) == ["b", "d"] and remaining == 3
    assert decode_continue(token).key == ("default", "d") and decode_continue(token).rv == rv
    spread.create(CM, "default", cm("zz"), W)  # later writes do not move the page's resourceVersion
    second, rv2, token2, remaining2 = spread.list(CM, "", None, None, limit=2, continue_token=token)
    assert names(second) == ["zz", "a"] and rv2 == rv and remaining2 == 2
    third, rv3, token3, remaining3 = spread.list(CM, "", None, None, limit=3, continue_token=token2)
    assert names(third) == ["c", "e"] and (rv3, token3, remaining3) == (rv, "", None)


def test_list_limit_with_selector_counts_only_matches(spread: Registry) -> None:
    items, _rv, token, remaining = spread.list(CM, "", parse_label_selector("tier=web"), None, limit=1)
    assert names(items) == ["d"] and token and remaining == 2


def test_list_bad_continue_is_400(spread: Registry) -> None:
    err = failure(lambda: spread.list(CM, "", None, None, limit=1, continue_token="!!!"))
    assert (err.code, err.message) == (400, "continue key is not valid: incorrect encoded start resourceVersion "
                                             "(version meta.k8s.io/v1)")


# --- update --------------------------------------------------------------------------------


def test_update_with_stale_resource_version_is_409(reg: Registry) -> None:
    made = reg.create(CM, "default", cm("a", k="1"), W).object
    reg.update(CM, "default", "a", "", {**made, "data": {"k": "2"}}, W)
    err = failure(lambda: reg.update(CM, "default", "a", "", {**made, "data": {"k": "3"}}, W))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == ('Operation cannot be fulfilled on configmaps "a": the object has been modified; please '
                           "apply your changes to the latest version and try again")
    assert err.details == {"name": "a", "kind": "configmaps"}
    assert reg.get(CM, "default", "a")["data"] == {"k": "2"}


def test_update_without_resource_version_is_unconditional(reg: Registry) -> None:
    reg.create(CM, "default", cm("a", k="1"), W)
    out = reg.update(CM, "default", "a", "", cm("a", k="2"), W).object
    assert out["data"] == {"k": "2"} and not out.get("created")


def test_update_missing_is_404_and_name_mismatch_is_400(reg: Registry) -> None:
    assert failure(lambda: reg.update(CM, "default", "a", "", cm("a"), W)).code == 404
    reg.create(CM, "default", cm("a"), W)
    err = failure(lambda: reg.update(CM, "default", "a", "", cm("b"), W))
    assert (err.code, err.message) == (400, "the name of the object (b) does not match the name on the URL (a)")


def test_status_write_keeps_spec_and_spec_write_keeps_status(reg: Registry) -> None:
    made = reg.create(PODS, "default", pod(), W).object
    assert made["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    status_write = copy.deepcopy(made)
    status_write["status"]["phase"] = "Running"
    status_write["spec"]["containers"][0]["image"] = "nginx"
    status_write["metadata"]["labels"] = {"written": "yes"}
    out = reg.update(PODS, "default", "p", "status", status_write, W).object
    assert out["spec"]["containers"][0]["image"] == "busybox"
    assert out["status"]["phase"] == "Running"
    # podStatusStrategy takes the new object's metadata (not ResetObjectMetaForStatus): the labels are written
    assert out["metadata"]["labels"] == {"written": "yes"}
    spec_write = copy.deepcopy(out)
    spec_write["status"] = {"phase": "Failed"}
    spec_write["spec"]["containers"][0]["image"] = "nginx"
    out = reg.update(PODS, "default", "p", "", spec_write, W).object
    assert out["spec"]["containers"][0]["image"] == "nginx"
    assert out["status"]["phase"] == "Running"


def test_status_write_of_a_kind_that_resets_metadata_keeps_the_stored_labels(reg: Registry) -> None:
    """resourceclaimStatusStrategy calls ResetObjectMetaForStatus: labels, annotations and
    finalizers sent through /status are not written."""
    claim = {"metadata": {"name": "rc", "labels": {"a": "1"}}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
    made = reg.create(CLAIMS, "default", claim, W).object
    status_write = copy.deepcopy(made)
    status_write["metadata"].update(labels={"a": "2"}, annotations={"x": "y"}, finalizers=["example.com/f"])
    out = reg.update(CLAIMS, "default", "rc", "status", status_write, W).object
    assert out["metadata"]["labels"] == {"a": "1"}
    assert "annotations" not in out["metadata"] and "finalizers" not in out["metadata"]


def test_create_of_a_kind_with_status_subresource_drops_status(reg: Registry) -> None:
    claim = {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
             "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}}
    out = reg.create(CLAIMS, "default", claim, W).object
    assert "status" not in out


def test_kind_without_status_subresource_writes_status_with_spec(reg: Registry) -> None:
    ev = res("events")
    body = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R"}
    made = reg.create(ev, "default", body, W).object
    out = reg.update(ev, "default", "e", "", {**made, "reason": "S"}, W).object
    assert out["reason"] == "S"


# --- dry run -------------------------------------------------------------------------------


def test_dry_run_changes_nothing_and_returns_the_object(reg: Registry) -> None:
    dry = WriteOptions(dry_run=True)
    rv = reg.store.resource_version
    made = reg.create(CM, "default", cm("a", k="v"), dry)
    assert made.object["data"] == {"k": "v"} and made.object["metadata"]["uid"]
    assert reg.store.peek("ConfigMap", "default", "a") is None and reg.store.resource_version == rv
    gen = reg.create(CM, "default", {"metadata": {"generateName": "g-"}}, dry).object
    assert gen["metadata"]["name"].startswith("g-")
    real = reg.create(CM, "default", cm("b", k="1"), W).object
    rv = reg.store.resource_version
    assert reg.update(CM, "default", "b", "", cm("b", k="2"), dry).object["data"] == {"k": "2"}
    assert reg.patch(CM, "default", "b", "", MERGE_PATCH, {"data": {"k": "3"}}, dry).object["data"] == {"k": "3"}
    gone = reg.delete(CM, "default", "b", DeleteOptions(dry_run=True))
    assert gone["metadata"]["uid"] == real["metadata"]["uid"]
    assert reg.delete_collection(CM, "default", None, None, DeleteOptions(dry_run=True))
    assert reg.get(CM, "default", "b") == real and reg.store.resource_version == rv


def test_dry_run_create_has_no_resource_version(reg: Registry) -> None:
    """Upstream's DryRunnableStorage.Create copies the prepared object, whose resourceVersion is unset."""
    made = reg.create(CM, "default", cm("a"), WriteOptions(dry_run=True)).object
    assert "resourceVersion" not in made["metadata"]


# --- delete --------------------------------------------------------------------------------


def test_delete_answer_is_a_status_or_the_object_as_the_kind_s_store_returns(reg: Registry) -> None:
    """Upstream's finalizeDelete: a ConfigMap's store (no ReturnDeletedObject) answers a Status naming
    the object, its Kind field holding the resource; a ResourceClaim's store answers the object; a
    deletion kept pending by a finalizer answers the object whatever the kind; dry run answers the same."""
    uid = reg.create(CM, "default", cm("a"), W).object["metadata"]["uid"]
    want = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "a", "kind": "configmaps", "uid": uid}}
    assert reg.delete_answer(CM, "default", "a", DeleteOptions(dry_run=True)) == want
    assert reg.delete_answer(CM, "default", "a", DeleteOptions()) == want
    kept = cm("f")
    kept["metadata"]["finalizers"] = ["example.com/keep"]
    reg.create(CM, "default", kept, W)
    pending = reg.delete_answer(CM, "default", "f", DeleteOptions())
    assert pending["kind"] == "ConfigMap" and pending["metadata"]["deletionTimestamp"]
    claim = {"metadata": {"name": "c", "namespace": "default"}, "spec": {}}
    reg.create(CLAIMS, "default", claim, W)
    assert reg.delete_answer(CLAIMS, "default", "c", DeleteOptions())["kind"] == "ResourceClaim"
    rbac = res("clusterroles", "rbac.authorization.k8s.io")
    assert not rbac.returns_deleted and res("devicetaintrules", "resource.k8s.io", "v1beta2").returns_deleted
    assert not res("devicetaintrules", "resource.k8s.io").returns_deleted


def test_delete_returns_the_object_and_removes_it(reg: Registry) -> None:
    reg.create(CM, "default", cm("a"), W)
    assert reg.delete(CM, "default", "a", DeleteOptions())["metadata"]["name"] == "a"
    assert failure(lambda: reg.get(CM, "default", "a")).code == 404
    assert failure(lambda: reg.delete(CM, "default", "a", DeleteOptions())).message == 'configmaps "a" not found'


def test_delete_uid_precondition(reg: Registry) -> None:
    uid = reg.create(CM, "default", cm("a"), W).object["metadata"]["uid"]
    err = failure(lambda: reg.delete(CM, "default", "a", DeleteOptions(uid="other")))
    assert (err.code, err.reason) == (409, "Conflict")
    # rest.BeforeDelete's check, which names the kind where the storage layer would name the resource
    assert err.message == (f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (other) '
                           f"does not match the UID in record ({uid}). The object might have been deleted and then "
                           "recreated")
    assert reg.delete(CM, "default", "a", DeleteOptions(uid=uid))["metadata"]["uid"] == uid


def test_delete_resource_version_precondition(reg: Registry) -> None:
    rv = reg.create(CM, "default", cm("a"), W).object["metadata"]["resourceVersion"]
    err = failure(lambda: reg.delete(CM, "default", "a", DeleteOptions(resource_version="1")))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == ('Operation cannot be fulfilled on ConfigMap "a": the ResourceVersion in the precondition '
                           f"(1) does not match the ResourceVersion in record ({rv}). The object might have been "
                           "modified")
    assert reg.store.peek("ConfigMap", "default", "a") is not None
    reg.delete(CM, "default", "a", DeleteOptions(resource_version=rv))
    assert reg.store.peek("ConfigMap", "default", "a") is None


def owned_pair(reg: Registry) -> None:
    owner = reg.create(CM, "default", cm("owner"), W).object
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "u-keep"}
    reg.create(CM, "default", {"metadata": {"name": "dep", "ownerReferences": [ref, other]}}, W)


def test_orphan_leaves_the_finalizer_and_the_collector_removes_the_owner_reference(reg: Registry) -> None:
    """Upstream's store only marks the owner (deletionTimestamp, the `orphan` finalizer); the garbage
    collector then drops the owner's reference from the dependents and the finalizer, and it goes."""
    owned_pair(reg)
    out = reg.delete(CM, "default", "owner", DeleteOptions(propagation="Orphan"))
    assert out["metadata"]["finalizers"] == ["orphan"] and out["metadata"]["deletionTimestamp"]
    assert len(reg.get(CM, "default", "dep")["metadata"]["ownerReferences"]) == 2
    gc = GarbageCollector(reg.store, FakeClock())
    gc.load([reg.store.get("ConfigMap", "default", "owner")])  # the owner's event only ("keep" is dangling)
    gc.work(10)
    assert reg.store.peek("ConfigMap", "default", "owner") is None
    dep = reg.get(CM, "default", "dep")
    assert [r["uid"] for r in dep["metadata"]["ownerReferences"]] == ["u-keep"]


def test_background_deletes_dependents(reg: Registry) -> None:
    owner = reg.create(CM, "default", cm("owner"), W).object
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    reg.create(CM, "default", {"metadata": {"name": "dep", "ownerReferences": [ref]}}, W)
    reg.delete(CM, "default", "owner", DeleteOptions(propagation="Background"))
    assert reg.store.peek("ConfigMap", "default", "dep") is None


def test_delete_collection_by_selector(spread: Registry) -> None:
    out = spread.delete_collection(CM, "team", parse_label_selector("tier=web"), None, DeleteOptions())
    assert names(out) == ["a", "e"]
    assert names(spread.list(CM, "", None, None)[0]) == ["b", "d", "c"]


def test_namespace_deletion_removes_its_content(spread: Registry) -> None:
    """The delete marks the namespace Terminating; the namespace controller empties it and lets it go."""
    marked = spread.delete(NS, "", "team", DeleteOptions())
    assert marked["status"]["phase"] == "Terminating" and marked["metadata"]["deletionTimestamp"]
    assert "deletionGracePeriodSeconds" not in marked["metadata"]
    assert spread.delete(NS, "", "team", DeleteOptions())["metadata"]["deletionTimestamp"] == \
        marked["metadata"]["deletionTimestamp"]  # kept while spec.finalizers holds `kubernetes`
    assert NamespaceController(spread.store, spread.clock).sync("team")
    assert names(spread.list(CM, "", None, None)[0]) == ["b", "d"]
    assert spread.store.peek("Namespace", "", "team") is None


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_system_namespaces_cannot_be_deleted(reg: Registry, name: str) -> None:
    if name != "default":
        make_namespace(reg, name)
    reg.create(CM, name, cm("a", name), W)
    err = failure(lambda: reg.delete(NS, "", name, DeleteOptions()))
    assert (err.code, err.reason) == (403, "Forbidden")
    assert err.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    assert reg.store.peek("ConfigMap", name, "a") is not None


# --- pods/binding --------------------------------------------------------------------------


def test_binding_sets_node_and_scheduled_condition(reg: Registry) -> None:
    reg.create(PODS, "default", pod(), W)
    reg.bind("default", "p", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                              "target": {"kind": "Node", "name": "n1"}}, W)
    out = reg.get(PODS, "default", "p")
    assert out["spec"]["nodeName"] == "n1"
    assert [(c["type"], c["status"]) for c in out["status"]["conditions"]] == [("PodScheduled", "True")]
    # BindingREST writes to storage without the pod strategy: generation stays (kube-apiserver: 1)
    assert out["metadata"]["generation"] == 1


def test_binding_a_bound_pod_is_409(reg: Registry) -> None:
    reg.create(PODS, "default", pod(), W)
    reg.bind("default", "p", {"target": {"name": "n1"}}, W)
    err = failure(lambda: reg.bind("default", "p", {"target": {"name": "n2"}}, W))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    assert reg.get(PODS, "default", "p")["spec"]["nodeName"] == "n1"


def test_binding_errors(reg: Registry) -> None:
    assert failure(lambda: reg.bind("default", "nope", {"target": {"name": "n"}}, W)).message == 'pods "nope" not found'
    reg.create(PODS, "default", pod(), W)
    err = failure(lambda: reg.bind("default", "p", {"target": {}}, W))
    assert (err.code, err.message) == (422, 'Binding "p" is invalid: target.name: Required value')



def _nominated(reg: Registry, node: str) -> None:
    stored = reg.store.get("Pod", "default", "p")
    stored.setdefault("status", {})["nominatedNodeName"] = node
    reg.store.update_status(stored)


def test_binding_clears_the_nomination_and_merges_metadata(reg: Registry) -> None:
    """setPodNodeAndMetadata: nominatedNodeName cleared (ClearingNominatedNodeNameAfterBinding, on
    from 1.35), the Binding's annotations and labels (PodTopologyLabelsAdmission) merged in."""
    reg.create(PODS, "default", pod(), W)
    _nominated(reg, "n2")
    assert reg.get(PODS, "default", "p")["status"]["nominatedNodeName"] == "n2"
    reg.bind("default", "p", {"metadata": {"name": "p", "annotations": {"a": "1"},
                                           "labels": {"topology.kubernetes.io/zone": "z1"}},
                              "target": {"name": "n1"}}, W)
    out = reg.get(PODS, "default", "p")
    assert "nominatedNodeName" not in out["status"]
    assert out["metadata"]["annotations"] == {"a": "1"}
    assert out["metadata"]["labels"]["topology.kubernetes.io/zone"] == "z1"


def test_binding_keeps_the_nomination_with_the_gate_off() -> None:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": "default", "namespace": "default"}})
    reg = Registry(store, Catalog(builtin_resources()), DEFS, builtin_strategies(), clock,
                   binding=BindingGates(clear_nominated_node_name=False, copy_labels=False))
    reg.create(PODS, "default", pod(), W)
    _nominated(reg, "n2")
    reg.bind("default", "p", {"metadata": {"labels": {"x": "y"}}, "target": {"name": "n1"}}, W)
    out = reg.get(PODS, "default", "p")
    assert (out["status"]["nominatedNodeName"], out["spec"]["nodeName"]) == ("n2", "n1")
    assert "x" not in (out["metadata"].get("labels") or {})


def test_binding_preconditions_and_gates(reg: Registry) -> None:
    """The Binding's uid and resourceVersion are preconditions; a gated pod is not bound."""
    created = reg.create(PODS, "default", pod(), W).object
    err = failure(lambda: reg.bind("default", "p", {"metadata": {"uid": "other"}, "target": {"name": "n1"}}, W))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == (
        'Operation cannot be fulfilled on pods "p": StorageError: invalid object, Code: 4, Key: /registry/pods/'
        f"default/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, "
        f"UID in object meta: {created['metadata']['uid']}")
    err = failure(lambda: reg.bind("default", "p", {"metadata": {"resourceVersion": "1"}, "target": {"name": "n1"}},
                                   W))
    assert "Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: " in err.message
    gated = pod("g")
    gated["spec"]["schedulingGates"] = [{"name": "wait"}]
    reg.create(PODS, "default", gated, W)
    err = failure(lambda: reg.bind("default", "g", {"target": {"name": "n1"}}, W))
    assert err.message == 'Operation cannot be fulfilled on pods/binding "g": pod g has non-empty .spec.schedulingGates'
    assert not reg.get(PODS, "default", "g")["spec"].get("nodeName")
    reg.bind("default", "p", {"metadata": {"uid": created["metadata"]["uid"]}, "target": {"name": "n1"}}, W)
    assert reg.get(PODS, "default", "p")["spec"]["nodeName"] == "n1"


def test_a_pod_gets_the_default_scheduler_name(reg: Registry) -> None:
    """SetDefaults_PodSpec's schedulerName: without it no real kube-scheduler takes the pod; an
    update that omits it keeps it (defaulted again), one that names another is refused."""
    created = reg.create(PODS, "default", pod(), W).object
    assert created["spec"]["schedulerName"] == "default-scheduler"
    mine = pod("m")
    mine["spec"]["schedulerName"] = "my-scheduler"
    assert reg.create(PODS, "default", mine, W).object["spec"]["schedulerName"] == "my-scheduler"
    again = copy.deepcopy(reg.get(PODS, "default", "p"))
    del again["spec"]["schedulerName"]
    again["spec"]["containers"][0]["image"] = "busybox:2"
    assert reg.update(PODS, "default", "p", "", again, W).object["spec"]["schedulerName"] == "default-scheduler"

# --- version conversion --------------------------------------------------------------------


def test_v1beta1_slice_reads_back_as_v1_and_v1beta1(reg: Registry) -> None:
    beta: Obj = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "nodeName": "n1",
                     "devices": [{"name": "g0", "basic": {"attributes": {"model": {"string": "a100"}}}}]}}
    made = reg.create(SLICES_B1, "", beta, WriteOptions(field_validation="Strict")).object
    assert made["apiVersion"] == "resource.k8s.io/v1beta1" and made["spec"]["devices"] == beta["spec"]["devices"]
    assert reg.store.peek("ResourceSlice", "", "s")["apiVersion"] == "resource.k8s.io/v1"
    v1 = reg.get(SLICES_V1, "", "s")
    assert v1["apiVersion"] == "resource.k8s.io/v1"
    assert v1["spec"]["devices"] == [{"name": "g0", "attributes": {"model": {"string": "a100"}}}]
    again = reg.get(SLICES_B1, "", "s")
    assert again["apiVersion"] == "resource.k8s.io/v1beta1" and again["spec"] == beta["spec"]
    listed = reg.list(SLICES_B1, "", None, None)[0]
    assert listed == [again]


# --- field validation ----------------------------------------------------------------------


BAD_BODY = b'{"metadata": {"name": "a", "bogus": 1}, "data": {"k": "v", "k": "w"}, "extra": true}'


def test_strict_field_validation_is_400_naming_every_field(reg: Registry) -> None:
    body, dups = decode_json(BAD_BODY)
    err = failure(lambda: reg.create(CM, "default", body, WriteOptions(field_validation="Strict"), dups))
    assert (err.code, err.reason) == (400, "BadRequest")
    assert err.message.startswith('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: ')
    for text in ('unknown field "metadata.bogus"', 'unknown field "extra"', 'duplicate field "data.k"'):
        assert text in err.message
    assert reg.store.peek("ConfigMap", "default", "a") is None


def test_warn_field_validation_warns_and_drops_unknown_fields(reg: Registry) -> None:
    body, dups = decode_json(BAD_BODY)
    out = reg.create(CM, "default", body, WriteOptions(field_validation="Warn"), dups)
    assert sorted(out.warnings) == ['duplicate field "data.k"', 'unknown field "extra"',
                                    'unknown field "metadata.bogus"']
    assert out.object["data"] == {"k": "w"}  # the last duplicate wins
    stored = reg.get(CM, "default", "a")
    assert "extra" not in stored and "bogus" not in stored["metadata"]  # typed decoding drops them


def test_ignore_field_validation_is_silent_and_drops_unknown_fields(reg: Registry) -> None:
    body, dups = decode_json(BAD_BODY)
    out = reg.create(CM, "default", body, WriteOptions(field_validation="Ignore"), dups)
    assert out.warnings == ()
    assert "extra" not in reg.get(CM, "default", "a")


def test_strict_update_of_a_pod_names_nested_unknown_fields(reg: Registry) -> None:
    body, dups = decode_json(b'{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","bogus":1}]}}')
    err = failure(lambda: reg.create(PODS, "default", body, WriteOptions(field_validation="Strict"), dups))
    assert err.message == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field '
                           '"spec.containers[0].bogus"')


def test_strict_errors_of_typed_kinds_are_in_document_order(reg: Registry) -> None:
    body, dups = decode_json(BAD_BODY)
    facts = BodyFacts(tuple(dups), raw=BAD_BODY)
    err = failure(lambda: reg.create(CM, "default", body, WriteOptions(field_validation="Strict"), facts))
    assert err.message.endswith('strict decoding error: unknown field "metadata.bogus", duplicate field "data.k", '
                                'unknown field "extra"')


# --- patch and apply -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch_type", "body", "data"),
    [
        (MERGE_PATCH, {"data": {"x": None, "z": "3"}}, {"y": "2", "z": "3"}),
        (JSON_PATCH, [{"op": "replace", "path": "/data/y", "value": "9"}, {"op": "remove", "path": "/data/x"}],
         {"y": "9"}),
        (STRATEGIC_PATCH, {"data": {"z": "3"}}, {"x": "1", "y": "2", "z": "3"}),
    ],
)
def test_patch_types(reg: Registry, patch_type: str, body: Any, data: dict[str, str]) -> None:
    made = reg.create(CM, "default", cm("m", x="1", y="2"), W).object
    out = reg.patch(CM, "default", "m", "", patch_type, body, W)
    assert out.object["data"] == data and not out.created
    assert int(out.object["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])
    assert reg.get(CM, "default", "m")["data"] == data


def test_strategic_patch_merges_containers_by_name(reg: Registry) -> None:
    reg.create(PODS, "default", pod(), W)
    body = {"spec": {"containers": [{"name": "c", "image": "redis"}]}}
    out = reg.patch(PODS, "default", "p", "", STRATEGIC_PATCH, body, W).object
    # as kube-apiserver decodes a Pod, its containers come back defaulted (SetDefaults_Container); the
    # service account's mount (added at create) is kept by the merge by name
    ctr = out["spec"]["containers"][0]
    assert {k: v for k, v in ctr.items() if k != "volumeMounts"} == {
        "name": "c", "image": "redis", "imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "resources": {}}
    assert ctr["volumeMounts"][0]["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"
    assert out["status"]["phase"] == "Pending"


def test_patch_of_missing_object_is_404(reg: Registry) -> None:
    err = failure(lambda: reg.patch(CM, "default", "nope", "", MERGE_PATCH, {"data": {}}, W))
    assert (err.code, err.message) == (404, 'configmaps "nope" not found')


def test_failed_json_patch_test_is_422_with_the_cause(reg: Registry) -> None:
    reg.create(CM, "default", cm("m", y="2"), W)
    test = [{"op": "test", "path": "/data/y", "value": "0"}]
    err = failure(lambda: reg.patch(CM, "default", "m", "", JSON_PATCH, test, W))
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == "the server rejected our request due to an error in our request"
    causes = err.details["causes"]
    assert [c["type"] for c in causes] == ["UnexpectedServerResponse"] and causes[0]["message"]


def test_status_patch_changes_only_status(reg: Registry) -> None:
    reg.create(PODS, "default", pod(), W)
    out = reg.patch(PODS, "default", "p", "status", MERGE_PATCH,
                    {"status": {"phase": "Running"}, "spec": {"nodeName": "sneaky"}}, W).object
    assert out["status"]["phase"] == "Running" and "nodeName" not in out["spec"]


@pytest.mark.parametrize("patch_type", [STRATEGIC_PATCH, MERGE_PATCH, JSON_PATCH])
def test_a_status_patch_of_the_wrong_type_is_refused_whatever_it_shares(reg: Registry, patch_type: str) -> None:
    """The patch's result shares the stored spec (its type walk skips what it shares with the stored
    object): a wrong type in what the patch writes is still upstream's 422 on "patch", and a right
    one writes the status with the spec as stored."""
    reg.create(PODS, "default", pod(), W)
    before = reg.get(PODS, "default", "p")
    bad: Any = [{"op": "add", "path": "/status/phase", "value": 5}] if patch_type == JSON_PATCH \
        else {"status": {"phase": 5}}
    err = failure(lambda: reg.patch(PODS, "default", "p", "status", patch_type, bad, W))
    assert (err.code, err.reason) == (422, "Invalid")
    assert "json: cannot unmarshal number into Go struct field PodStatus.status.phase" in err.message
    good: Any = [{"op": "add", "path": "/status/phase", "value": "Running"}] if patch_type == JSON_PATCH \
        else {"status": {"phase": "Running"}}
    out = reg.patch(PODS, "default", "p", "status", patch_type, good, W).object
    assert out["status"]["phase"] == "Running" and out["spec"] == before["spec"]


def apply_cm(value: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ap"}, "data": {"k": value}}


def test_apply_creates_then_conflicts_between_managers(reg: Registry) -> None:
    alice = WriteOptions(field_manager="alice", field_validation="Strict")
    made = reg.patch(CM, "default", "ap", "", APPLY_PATCH, apply_cm("a"), alice)
    assert made.created and made.object["data"] == {"k": "a"}
    assert [(m["manager"], m["operation"]) for m in made.object["metadata"]["managedFields"]] == [("alice", "Apply")]
    bob = WriteOptions(field_manager="bob", field_validation="Strict")
    err = failure(lambda: reg.patch(CM, "default", "ap", "", APPLY_PATCH, apply_cm("b"), bob))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == 'Apply failed with 1 conflict: conflict with "alice": .data.k'
    assert err.details["causes"] == [{"type": "FieldManagerConflict", "message": 'conflict with "alice"',
                                      "field": ".data.k"}]
    assert reg.get(CM, "default", "ap")["data"] == {"k": "a"}
    forced = reg.patch(CM, "default", "ap", "", APPLY_PATCH, apply_cm("b"),
                       WriteOptions(field_manager="bob", field_validation="Strict", force=True)).object
    assert forced["data"] == {"k": "b"}
    assert [m["manager"] for m in forced["metadata"]["managedFields"]] == ["bob"]


def test_apply_by_the_same_manager_updates(reg: Registry) -> None:
    alice = WriteOptions(field_manager="alice")
    reg.patch(CM, "default", "ap", "", APPLY_PATCH, apply_cm("a"), alice)
    again = reg.patch(CM, "default", "ap", "", APPLY_PATCH, apply_cm("b"), alice)
    assert not again.created and again.object["data"] == {"k": "b"}


def test_apply_into_missing_namespace_is_404(reg: Registry) -> None:
    err = failure(lambda: reg.patch(CM, "nope", "ap", "", APPLY_PATCH, apply_cm("a"), WriteOptions(field_manager="m")))
    assert (err.code, err.message) == (404, 'namespaces "nope" not found')


def test_update_records_the_manager_in_managed_fields(reg: Registry) -> None:
    out = reg.create(CM, "default", cm("a", k="v"), WriteOptions(user_agent="kubectl/v1.34.0 (linux/amd64)")).object
    assert [(m["manager"], m["operation"]) for m in out["metadata"]["managedFields"]] == [("kubectl", "Update")]
