"""Server-side apply and managedFields, against upstream's behaviour (structured-merge-diff,
k8s.io/apimachinery managedfields) on a Deployment-shaped schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodeagent.apiserver.apply.fieldmanager import LAST_APPLIED, ApplyConflict, apply, update_managed_fields
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.schema.model import Definitions, Schema

S = Schema
STR = S(type="string")
INT = S(type="integer")
STRMAP = S(type="object", additional_properties=STR)
DEFS = Definitions(
    {
        "ObjectMeta": S(
            type="object",
            properties={
                "name": STR,
                "namespace": STR,
                "uid": STR,
                "resourceVersion": STR,
                "labels": STRMAP,
                "annotations": STRMAP,
                "finalizers": S(type="array", items=STR, patch_strategy="merge"),
                "managedFields": S(type="array", items=S(type="object", preserve_unknown_fields=True)),
            },
        ),
        "Container": S(
            type="object",
            properties={"name": STR, "image": STR, "args": S(type="array", items=STR)},
        ),
        "Deployment": S(
            type="object",
            properties={
                "apiVersion": STR,
                "kind": STR,
                "metadata": S(ref="ObjectMeta"),
                "spec": S(
                    type="object",
                    properties={
                        "replicas": INT,
                        "paused": S(type="boolean"),
                        "selector": S(type="object", properties={"matchLabels": STRMAP}, map_type="atomic"),
                        "template": S(
                            type="object",
                            properties={
                                "metadata": S(ref="ObjectMeta"),
                                "spec": S(
                                    type="object",
                                    required=("containers",),
                                    properties={
                                        "containers": S(
                                            type="array",
                                            items=S(ref="Container"),
                                            patch_strategy="merge",
                                            patch_merge_key="name",
                                        )
                                    },
                                ),
                            },
                        ),
                    },
                ),
                "status": S(type="object", properties={"replicas": INT}),
            },
        ),
    }
)
DEPLOY = S(ref="Deployment")
T0, T1, T2 = "2024-05-01T10:00:00Z", "2024-05-01T10:05:00Z", "2024-05-01T10:10:00Z"
NGINX = 'k:{"name":"nginx"}'


def config(replicas: Any = 3, image: Any = "nginx:1.25", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": image}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": spec,
    }
    for dotted, value in extra.items():
        node = obj
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return obj


def do_apply(
    live: dict[str, Any] | None, cfg: dict[str, Any], manager: str, *, force: bool = False, now: str = T0
) -> Any:
    return apply(live, cfg, manager=manager, force=force, schema=DEPLOY, defs=DEFS, api_version="apps/v1", now=now)


def do_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str = T1, **kw: Any) -> Any:
    return update_managed_fields(
        old, new, manager=manager, schema=DEPLOY, defs=DEFS, api_version="apps/v1", now=now, **kw
    )


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the store returns it after a create (the uid marks it as existing)."""
    out: dict[str, Any] = json.loads(json.dumps(obj))
    out["metadata"]["uid"] = "u-1"
    return out


def entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    assert len(found) == 1
    return found[0]


FIRST_APPLY_FIELDS = {
    "f:metadata": {"f:labels": {"f:app": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {NGINX: {".": {}, "f:image": {}, "f:name": {}}}},
        },
    },
}


def test_first_apply_creates_and_owns_what_it_applied() -> None:
    out = do_apply(None, config(), "mgr")
    assert out["spec"]["replicas"] == 3
    assert out["metadata"]["managedFields"] == [
        {
            "manager": "mgr",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": FIRST_APPLY_FIELDS,
        }
    ]


@pytest.mark.parametrize(
    ("second", "check"),
    [
        (config(replicas=5), lambda o: o["spec"]["replicas"] == 5),
        (config(replicas=None), lambda o: "replicas" not in o["spec"]),
        (
            config(**{"metadata__labels": {}}),
            lambda o: "labels" not in o["metadata"] and entry(o, "mgr")["fieldsV1"]["f:metadata"] == {"f:labels": {}},
        ),
        (
            config(**{"spec__template__spec__containers": [{"name": "sidecar", "image": "busybox"}]}),
            lambda o: [c["name"] for c in o["spec"]["template"]["spec"]["containers"]] == ["sidecar"],
        ),
    ],
    ids=["change-field", "drop-field", "drop-labels", "replace-list-item"],
)
def test_reapply(second: dict[str, Any], check: Any) -> None:
    live = stored(do_apply(None, config(), "mgr"))
    out = do_apply(live, second, "mgr", now=T1)
    assert check(out)
    assert entry(out, "mgr")["time"] == T1
    assert out["metadata"]["uid"] == "u-1"


def test_dropped_field_owned_by_another_applier_stays() -> None:
    live = stored(do_apply(None, config(), "a"))
    live = do_apply(
        live, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}}, "b"
    )
    out = do_apply(live, config(replicas=None), "a", now=T1)
    assert out["spec"]["replicas"] == 3
    assert "f:replicas" not in entry(out, "a")["fieldsV1"]["f:spec"]
    assert entry(out, "b")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def replicas_only(n: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": n}}


@pytest.mark.parametrize(
    ("setup", "manager", "cfg", "message", "conflicts"),
    [
        (
            lambda: stored(do_apply(None, config(), "a")),
            "b",
            replicas_only(5),
            'Apply failed with 1 conflict: conflict with "a": .spec.replicas',
            [("a", ".spec.replicas")],
        ),
        (
            lambda: do_update(
                stored(do_apply(None, config(), "a")),
                {
                    **config(replicas=7),
                    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "uid": "u-1"},
                },
                "hpa",
            ),
            "a",
            config(replicas=3),
            'Apply failed with 1 conflict: conflict with "hpa" using apps/v1: .spec.replicas',
            [("hpa", ".spec.replicas")],
        ),
        (
            lambda: stored(do_apply(None, config(), "a")),
            "b",
            config(replicas=5, image="nginx:1.26"),
            'Apply failed with 2 conflicts: conflicts with "a":\n- .spec.replicas\n'
            '- .spec.template.spec.containers[name="nginx"].image',
            [("a", ".spec.replicas"), ("a", '.spec.template.spec.containers[name="nginx"].image')],
        ),
        (
            lambda: {
                **config(),
                "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "labels": {"app": "web"}},
            },
            "a",
            config(replicas=4),
            'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas',
            [("before-first-apply", ".spec.replicas")],
        ),
    ],
    ids=["other-applier", "updater-took-field", "several", "before-first-apply"],
)
def test_conflicts(setup: Any, manager: str, cfg: dict[str, Any], message: str, conflicts: list[Any]) -> None:
    with pytest.raises(ApplyConflict) as info:
        do_apply(setup(), cfg, manager, now=T2)
    err = info.value
    assert str(err) == message
    assert err.conflicts == conflicts
    assert err.code == 409 and err.reason == "Conflict"
    assert err.causes()[0] == {
        "type": "FieldManagerConflict",
        "message": message.split(": ")[1] if len(conflicts) == 1 else 'conflict with "a"',
        "field": conflicts[0][1],
    }
    assert err.status()["details"]["causes"] == err.causes()


def test_same_value_is_shared_and_force_moves_ownership() -> None:
    live = stored(do_apply(None, config(), "a"))
    shared = do_apply(live, replicas_only(3), "b", now=T1)
    assert entry(shared, "a")["fieldsV1"]["f:spec"]["f:replicas"] == {}
    assert entry(shared, "b")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    forced = do_apply(shared, replicas_only(6), "b", force=True, now=T2)
    assert forced["spec"]["replicas"] == 6
    assert "f:replicas" not in entry(forced, "a")["fieldsV1"]["f:spec"]
    assert [e["manager"] for e in forced["metadata"]["managedFields"]] == ["a", "b"]


def containers(obj: dict[str, Any]) -> list[str]:
    return [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]


def test_list_map_items_are_owned_per_item() -> None:
    live = stored(do_apply(None, config(), "a"))
    sidecar = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}},
    }
    both = do_apply(live, sidecar, "b", now=T1)
    assert containers(both) == ["nginx", "sidecar"]
    assert entry(both, "b")["fieldsV1"] == {
        "f:spec": {
            "f:template": {"f:spec": {"f:containers": {'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}}}
        }
    }
    without_nginx = config(**{"spec__template__spec__containers": []})
    out = do_apply(both, without_nginx, "a", now=T2)
    assert containers(out) == ["sidecar"]


def finalizers_cfg(*names: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "finalizers": list(names)}}


def test_set_list_merges_values_and_removes_only_own() -> None:
    live = stored(do_apply(None, finalizers_cfg("a.example/x"), "a"))
    both = do_apply(live, finalizers_cfg("b.example/y"), "b", now=T1)
    assert both["metadata"]["finalizers"] == ["a.example/x", "b.example/y"]
    assert entry(both, "a")["fieldsV1"] == {"f:metadata": {"f:finalizers": {'v:"a.example/x"': {}}}}
    out = do_apply(both, finalizers_cfg(), "a", now=T2)
    assert out["metadata"]["finalizers"] == ["b.example/y"]


def args_cfg(*args: str) -> dict[str, Any]:
    return config(**{"spec__template__spec__containers": [{"name": "nginx", "args": list(args)}]})


def test_atomic_list_is_one_field() -> None:
    live = stored(do_apply(None, args_cfg("-a"), "a"))
    assert entry(live, "a")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][NGINX]["f:args"] == {}
    with pytest.raises(ApplyConflict) as info:
        do_apply(live, args_cfg("-b"), "b")
    assert info.value.conflicts == [("a", '.spec.template.spec.containers[name="nginx"].args')]
    forced = do_apply(live, args_cfg("-b"), "b", force=True)
    assert forced["spec"]["template"]["spec"]["containers"][0]["args"] == ["-b"]


def test_status_is_neither_applied_nor_owned() -> None:
    live = stored(do_apply(None, config(), "a"))
    live["status"] = {"replicas": 1}
    out = do_apply(live, config(status={"replicas": 9}), "a", now=T1)
    assert out["status"] == {"replicas": 1}
    assert "f:status" not in entry(out, "a")["fieldsV1"]


@pytest.mark.parametrize(
    ("cfg", "code", "message"),
    [
        ({**config(), "metadata": {"name": "web", "managedFields": []}}, 400, "metadata.managedFields must be nil"),
        ({**config(), "apiVersion": "apps/v1beta1"}, 400, "invalid object type: apps/v1beta1, Kind=Deployment"),
        (
            config(**{"spec__foo": 1}),
            500,
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
            ".spec.foo: field not declared in schema",
        ),
        (
            config(**{"spec__template__spec__containers": [{"image": "x"}]}),
            500,
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits key "
            'field "name" (and doesn\'t have default value)',
        ),
        (
            config(**{"spec__template__spec__containers": [{"name": "a"}, {"name": "a"}]}),
            500,
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
            '.spec.template.spec.containers: duplicate entries for key [name="a"]',
        ),
    ],
    ids=["managed-fields", "version", "unknown-field", "missing-key", "duplicate-key"],
)
def test_bad_configurations(cfg: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(APIError) as info:
        do_apply(None, cfg, "a")
    assert (info.value.code, info.value.message) == (code, message)


def client_side_applied(replicas: int = 3) -> dict[str, Any]:
    """What `kubectl apply` (client side) leaves: the annotation and a kubectl-client-side-apply entry."""
    cfg = config(replicas=replicas)
    created = json.loads(json.dumps(cfg))
    created["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(cfg)}
    return stored(do_update(None, created, "kubectl-client-side-apply", now=T0))


def test_kubectl_server_side_takes_over_client_side_apply_fields() -> None:
    live = client_side_applied()
    assert entry(live, "kubectl-client-side-apply")["operation"] == "Update"
    with pytest.raises(ApplyConflict) as info:
        do_apply(live, config(replicas=4), "other")
    assert str(info.value) == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas'
    )
    out = do_apply(live, config(replicas=4), "kubectl", now=T1)
    assert out["spec"]["replicas"] == 4
    assert "f:replicas" not in entry(out, "kubectl-client-side-apply")["fieldsV1"]["f:spec"]
    assert entry(out, "kubectl")["fieldsV1"]["f:spec"]["f:replicas"] == {}
    assert json.loads(out["metadata"]["annotations"][LAST_APPLIED])["spec"]["replicas"] == 4


def test_kubectl_server_side_still_conflicts_on_fields_changed_since() -> None:
    live = client_side_applied()
    edited = json.loads(json.dumps(live))
    edited["spec"]["replicas"] = 9
    live = do_update(live, edited, "kubectl-edit", now=T1)
    with pytest.raises(ApplyConflict) as info:
        do_apply(live, config(replicas=4), "kubectl", now=T2)
    assert info.value.conflicts == [("kubectl-edit", ".spec.replicas")]


def test_create_by_update_owns_every_set_field() -> None:
    out = do_update(None, config(), "kubectl-create", now=T0)
    assert out["metadata"]["managedFields"] == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {NGINX: {".": {}, "f:image": {}, "f:name": {}}}},
                    },
                },
            },
        }
    ]


def test_update_takes_changed_fields_then_apply_conflicts() -> None:
    live = stored(do_apply(None, config(), "a"))
    scaled = json.loads(json.dumps(live))
    scaled["spec"]["replicas"] = 7
    out = do_update(live, scaled, "hpa", now=T1)
    assert [(e["manager"], e["operation"]) for e in out["metadata"]["managedFields"]] == [
        ("a", "Apply"),
        ("hpa", "Update"),
    ]
    assert entry(out, "hpa")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entry(out, "a")["fieldsV1"]["f:spec"]
    same = do_update(out, json.loads(json.dumps(out)), "other", now=T2)
    assert same["metadata"]["managedFields"] == out["metadata"]["managedFields"]


def test_status_write_is_recorded_with_its_subresource() -> None:
    live = stored(do_apply(None, config(), "a"))
    new = json.loads(json.dumps(live))
    new["status"] = {"replicas": 3}
    out = do_update(live, new, "kube-controller-manager", subresource="status")
    e = entry(out, "kube-controller-manager")
    assert (e["subresource"], e["fieldsV1"]) == ("status", {"f:status": {"f:replicas": {}}})
    assert list(e) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"]


def test_managed_fields_written_by_client_or_reset() -> None:
    live = client_side_applied()
    migrated = json.loads(json.dumps(live))
    migrated["metadata"]["managedFields"][0].update(manager="kubectl", operation="Apply")
    out = do_update(live, migrated, "kubectl")
    assert [(e["manager"], e["operation"]) for e in out["metadata"]["managedFields"]] == [("kubectl", "Apply")]
    reset = json.loads(json.dumps(live))
    reset["metadata"]["managedFields"] = [{}]
    stripped = do_update(live, reset, "x")
    assert "managedFields" not in stripped["metadata"]
    changed = json.loads(json.dumps(stripped))
    changed["spec"]["replicas"] = 1
    assert "managedFields" not in do_update(stripped, changed, "x")["metadata"]


def test_more_than_ten_updaters_fold_into_ancient_changes() -> None:
    created = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"replicas": 1}}
    obj = stored(do_update(None, created, "creator", now="2024-05-01T09:00:00Z"))
    for i in range(11):
        new = json.loads(json.dumps(obj))
        new["metadata"].setdefault("labels", {})[f"l{i}"] = "v"
        obj = do_update(obj, new, f"m{i:02d}", now=f"2024-05-01T10:{i:02d}:00Z")
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    # The three oldest (creator, m00, m01) fold into one bucket carrying the newest one's time.
    assert managers == ["ancient-changes", *(f"m{i:02d}" for i in range(2, 11))]
    bucket = entry(obj, "ancient-changes")
    assert bucket["time"] == "2024-05-01T10:01:00Z"
    assert bucket["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:l0": {}, "f:l1": {}}},
        "f:spec": {"f:replicas": {}},
    }
