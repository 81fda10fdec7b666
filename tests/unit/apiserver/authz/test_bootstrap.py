"""The RBAC bootstrap policy: every object passes the store's RBAC validation, reconciliation adds
what is missing and leaves protected objects alone, aggregation follows the controller's order."""

from __future__ import annotations

from typing import Any

from nodeagent.apiserver.authz import bootstrap
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock


def test_every_policy_object_is_stored_as_written() -> None:
    store = ObjectStore.memory(admitted_kinds(), FakeClock())
    for obj in bootstrap.policy():
        stored = store.create(obj)
        for key in ("rules", "subjects", "roleRef", "aggregationRule"):
            assert stored.get(key) == obj.get(key), (obj["metadata"]["name"], key)
    names = {o["metadata"]["name"] for o in store.list("ClusterRole")}
    assert {"cluster-admin", "admin", "edit", "view", "system:node", "system:kube-scheduler",
            "system:kube-controller-manager", "system:controller:resource-claim-controller"} <= names
    assert len(names) == 73 and len(store.list("ClusterRoleBinding")) == 54


def test_rules_are_sorted_as_upstreams_builder_sorts_them() -> None:
    assert bootstrap.rule("update,get | events.k8s.io,'' | b,a | y,x") == {
        "verbs": ["get", "update"], "apiGroups": ["", "events.k8s.io"], "resources": ["a", "b"],
        "resourceNames": ["x", "y"]}
    assert bootstrap.rule("url: get | /b,/a") == {"verbs": ["get"], "nonResourceURLs": ["/a", "/b"]}


def _role(name: str) -> dict[str, Any]:
    return next(o for o in bootstrap.policy() if o["kind"] == "ClusterRole" and o["metadata"]["name"] == name)


def test_reconcile_adds_missing_rules_labels_and_subjects() -> None:
    expected = _role("system:node-proxier")
    extra = {"verbs": ["get"], "apiGroups": ["x"], "resources": ["y"]}
    cut = {**expected, "metadata": {"name": "system:node-proxier"}, "rules": [*expected["rules"][:1], extra]}
    out = bootstrap.reconcile(expected, cut)
    assert out is not None
    assert out["rules"][:2] == cut["rules"] and out["rules"][2:] == expected["rules"][1:]
    assert out["metadata"]["annotations"] == {bootstrap.AUTOUPDATE: "true"}
    assert bootstrap.reconcile(expected, out) is None
    binding = next(o for o in bootstrap.policy() if o["kind"] == "ClusterRoleBinding"
                   and o["metadata"]["name"] == "cluster-admin")
    emptied = {**binding, "subjects": [{"kind": "User", "apiGroup": bootstrap.GROUP, "name": "me"}]}
    reconciled = bootstrap.reconcile(binding, emptied)
    assert reconciled is not None
    assert reconciled["subjects"] == emptied["subjects"] + binding["subjects"]


def test_protected_objects_are_left_alone() -> None:
    expected = _role("system:node-proxier")
    mine = {**expected, "metadata": {**expected["metadata"], "annotations": {bootstrap.AUTOUPDATE: "false"}},
            "rules": []}
    assert bootstrap.reconcile(expected, mine) is None


def test_aggregation_follows_selectors_then_names() -> None:
    roles = [r for r in bootstrap.policy() if r["kind"] == "ClusterRole"]
    view = bootstrap.aggregated_rules(_role("view"), roles)
    assert view == _role("system:aggregate-to-view")["rules"]
    by_name = {r["metadata"]["name"]: r for r in roles}
    by_name["view"] = {**by_name["view"], "rules": view}
    edit = bootstrap.aggregated_rules(by_name["edit"], by_name.values())
    expected_edit = list(_role("system:aggregate-to-edit")["rules"])
    expected_edit += [r for r in view if r not in expected_edit]
    assert edit == expected_edit
    assert bootstrap.aggregated_rules(_role("cluster-admin"), roles) is None
