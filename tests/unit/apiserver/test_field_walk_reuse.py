"""What the managedFields bookkeeping of a write reuses instead of walking again (issue 23): the
stored FieldsV1 parsed once per dict (StoredSets), the comparison passing over values the two
versions share (a status write shares the stored object's unchanged parts before its fields are
recorded), and the field schemas remembered per Definitions until an entry changes."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from nodeagent.apiserver.apply.fieldmanager import update_managed_fields
from nodeagent.apiserver.apply.fieldset import fieldset_from_fieldsv1
from nodeagent.apiserver.apply.managedfields import StoredSets, decode_managed_fields
from nodeagent.apiserver.apply.typedvalue import Typer
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
DEFS = builtin_definitions()
POD = Schema(ref="io.k8s.api.core.v1.Pod")
FIELDS: dict[str, Any] = {"f:metadata": {"f:labels": {".": {}, "f:a": {}}},
                          "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}}}


def entries(fields: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"manager": "m", "operation": "Update", "apiVersion": "v1", "time": "2027-01-15T08:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": fields}]


def test_a_stored_fieldsv1_is_parsed_once_and_answers_the_parsed_set() -> None:
    stored = entries(FIELDS)
    first, _ = decode_managed_fields(stored, stored=True)
    again, _ = decode_managed_fields(stored, stored=True)
    (key,) = first
    assert again[key].fields is first[key].fields  # the same dict: not parsed again
    assert first[key].fields == fieldset_from_fieldsv1(FIELDS)
    assert first[key].wire is FIELDS
    equal, _ = decode_managed_fields(entries(copy.deepcopy(FIELDS)), stored=True)
    assert equal[key].fields == first[key].fields and equal[key].fields is not first[key].fields
    written, _ = decode_managed_fields(stored)  # a client's list (not stored): parsed, never remembered
    assert written[key].fields is not first[key].fields and written[key].fields == first[key].fields


def test_the_stored_sets_table_is_bounded_and_keeps_its_dicts() -> None:
    table = StoredSets(size=2)
    dicts: list[dict[str, Any]] = [{"f:a": {}}, {"f:b": {}}, {"f:c": {}}]
    sets = [table.get(d) for d in dicts]
    assert table.get(dicts[2]) is sets[2]
    assert len(table._table) <= 2
    assert table.get(dicts[0]) == sets[0]  # started over: parsed again, the same set
    assert all(entry[0] is d for d in dicts[:1] for entry in [table._table[id(d)]])


class CountingTyper(Typer):
    def __init__(self, defs: Definitions) -> None:
        super().__init__(defs)
        self.asked: list[str] = []

    def child(self, s: Schema, name: str) -> tuple[Schema | None, bool, bool, Any]:
        self.asked.append(name)
        return super().child(s, name)


def test_the_comparison_passes_over_shared_values_and_finds_the_same_fields() -> None:
    spec = {"containers": [{"name": "c", "image": "a"}]}
    meta = {"name": "p", "namespace": "default", "labels": {"a": "b"}, "annotations": {"x": "y"}}
    old = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
    new = {**old, "metadata": dict(meta), "status": {"phase": "Running", "podIP": "10.0.0.1"}}
    typer = CountingTyper(DEFS)
    cmp = typer.compare(old, new, POD)
    assert "labels" not in typer.asked and "annotations" not in typer.asked and "spec" not in typer.asked
    assert "phase" in typer.asked
    walked = Typer(DEFS).compare(copy.deepcopy(old), copy.deepcopy(new), POD)  # nothing shared: every field walked
    assert (cmp.added, cmp.modified, cmp.removed) == (walked.added, walked.modified, walked.removed)


def test_a_field_schema_is_remembered_until_a_definition_changes() -> None:
    defs = Definitions({"T": Schema(type="object", properties={"x": Schema(ref="X")}),
                        "X": Schema(type="string")})
    typer = Typer(defs)
    top = typer.resolve(Schema(ref="T"))
    first = typer.child(top, "x")
    assert first[0] is not None and first[0].type == "string"
    assert typer.child(top, "x") is first
    defs.add("X", Schema(type="object", properties={"y": Schema(type="string")}))
    changed = Typer(defs).child(top, "x")[0]
    assert changed is not None and changed.type == "object"


def test_a_status_write_records_its_fields_over_the_shared_stored_parts() -> None:
    """The store's field manager sees the new version already pointing at the stored one's unchanged
    parts (share_unchanged before record_fields), so its comparison skips them."""
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), FakeClock())
    seen: list[tuple[Obj | None, bool, bool]] = []  # (old, its conditions and spec shared when the hook ran)

    def fields(old: Obj | None, new: Obj, manager: str, subresource: str) -> Obj:
        before = (old or {}).get("status") or {}
        seen.append((old, new.get("status", {}).get("conditions") is before.get("conditions") is not None,
                     new.get("spec") is (old or {}).get("spec")))
        return update_managed_fields(old, new, manager=manager, schema=POD, defs=DEFS, api_version="v1",
                                     now="2027-01-15T08:00:00Z", subresource=subresource)

    store.field_manager = fields
    conditions = [{"type": "PodScheduled", "status": "True"}]
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                  "spec": {"containers": [{"name": "c", "image": "a"}]}}, manager="creator")
    cur = store.get("Pod", "default", "p")
    cur["status"] = {"phase": "Pending", "conditions": conditions}
    store.update_status(cur, manager="kubelet")
    stored = store.peek("Pod", "default", "p")
    assert stored is not None
    cur = store.get("Pod", "default", "p")
    cur["status"] = {"phase": "Running", "conditions": copy.deepcopy(conditions)}
    written = store.update_status(cur, manager="kubelet")
    old, conditions_shared, spec_shared = seen[-1]
    assert old is stored
    assert conditions_shared and spec_shared  # shared before the walk
    assert written["status"] == {"phase": "Running", "conditions": conditions}
    creator, entry = written["metadata"]["managedFields"]
    assert creator["manager"] == "creator" and "f:spec" in creator["fieldsV1"]
    assert entry["manager"] == "kubelet" and entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:conditions": {".": {}, 'k:{"type":"PodScheduled"}': {
        ".": {}, "f:status": {}, "f:type": {}}}, "f:phase": {}}}


def pod_registry() -> tuple[Any, Any]:
    from nodeagent.apiserver.catalog import Catalog, builtin_resources
    from nodeagent.apiserver.registry import Registry
    from nodeagent.apiserver.strategies import builtin_strategies

    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": "default", "namespace": "default"}})
    catalog = Catalog(builtin_resources())
    return Registry(store, catalog, DEFS, builtin_strategies(), clock), catalog.find("", "v1", "pods")


def test_a_put_type_checks_what_differs_from_the_stored_object_to_the_byte(monkeypatch: Any) -> None:
    """kube-scheduler's PUTs send back what they read with one part changed: the parts that are the
    stored version's JSON to the byte are not walked again; 30.0 or true for a stored 30 are not the
    same JSON (== would call them equal) and are refused as before."""
    from nodeagent.apiserver.errors import APIError
    from nodeagent.apiserver.options import WriteOptions
    from nodeagent.apiserver.schema import typed

    reg, pods = pod_registry()
    opts = WriteOptions(field_manager="m")
    reg.create(pods, "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"containers": [{"name": "c", "image": "a"}],
                                          "terminationGracePeriodSeconds": 30}}, opts)
    walked: list[str] = []
    value = typed._value

    def spy(v: Any, field: Schema, defs: Definitions, struct: str, path: str, named: str | None) -> None:
        walked.append(path)
        value(v, field, defs, struct, path, named)

    monkeypatch.setattr(typed, "_value", spy)
    body = reg.get(pods, "default", "p")
    body = copy.deepcopy(body)
    body["metadata"]["labels"] = {"a": "b"}
    written = reg.update(pods, "default", "p", "", body, opts).object
    assert written["metadata"]["labels"] == {"a": "b"}
    assert "metadata.labels" in walked
    assert not any(p.startswith(("spec", "status", "metadata.managedFields")) for p in walked)
    for wrong, message in ((30.0, "cannot unmarshal number"), (True, "cannot unmarshal bool")):
        body = copy.deepcopy(reg.get(pods, "default", "p"))
        body["spec"]["terminationGracePeriodSeconds"] = wrong
        try:
            reg.update(pods, "default", "p", "", body, opts)
        except APIError as err:
            assert err.code == 400 and message in str(err), str(err)
        else:
            raise AssertionError(f"{wrong!r} was taken for 30")


def test_a_put_reports_unknown_fields_in_what_differs() -> None:
    from nodeagent.apiserver.options import WriteOptions

    reg, pods = pod_registry()
    opts = WriteOptions(field_manager="m", field_validation="Warn")
    reg.create(pods, "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"containers": [{"name": "c", "image": "a"}]}}, opts)
    body = copy.deepcopy(reg.get(pods, "default", "p"))
    body["spec"]["containers"][0]["bogus"] = 1
    written = reg.update(pods, "default", "p", "", body, opts)
    assert written.warnings == ('unknown field "spec.containers[0].bogus"',)
    body = copy.deepcopy(reg.get(pods, "default", "p"))
    body["metadata"]["labels"] = {"x": "y"}
    assert reg.update(pods, "default", "p", "", body, opts).warnings == ()


def test_sharing_keeps_what_only_python_calls_equal() -> None:
    """share_unchanged shares to the byte: true, 1 and 1.0 are one value to ==, three to a JSON
    decode's types; so a container holding one where the old version holds another stays the
    writer's (its field modified, the new value written)."""
    from nodeagent.store.txn import share_unchanged

    old = {"metadata": {"name": "x"}, "spec": {"a": {"on": 1}, "b": {"v": 1.0}, "c": {"same": [1, "x"]}}}
    new = copy.deepcopy(old)
    new["spec"]["a"] = {"on": True}
    new["spec"]["b"] = {"v": 1}
    share_unchanged(new, old)
    assert new["spec"]["c"] is old["spec"]["c"]
    assert new["spec"]["a"] is not old["spec"]["a"] and new["spec"]["a"] == {"on": True}
    assert new["spec"]["b"] is not old["spec"]["b"]
    assert orjson.dumps(new["spec"]) == b'{"a":{"on":true},"b":{"v":1},"c":{"same":[1,"x"]}}'
