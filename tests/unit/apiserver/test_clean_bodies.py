"""Registry.create's CleanBodies: a create body equal but for its name to one that passed both walks
(its Go types, its unknown fields) is not walked again, and answers as the walks would have."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from nodeagent.apiserver import registry as registry_module
from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import STRICT, WriteOptions
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.schema import fields as schema_fields
from nodeagent.apiserver.schema import typed
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

DEFS = builtin_definitions()
CATALOG = Catalog(builtin_resources())
_PODS = CATALOG.find("", "v1", "pods")
assert _PODS is not None
PODS = _PODS


class Counted:
    """The two walks, counted (the registry module's references to them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.types = self.unknown = 0
        type_error, unknown_fields = typed.type_error, schema_fields.unknown_fields

        def count_types(*args: Any, **kwargs: Any) -> str | None:
            self.types += 1
            return type_error(*args, **kwargs)

        def count_unknown(*args: Any, **kwargs: Any) -> list[str]:
            self.unknown += 1
            return unknown_fields(*args, **kwargs)

        monkeypatch.setattr(typed, "type_error", count_types)
        monkeypatch.setattr(schema_fields, "unknown_fields", count_unknown)


def registry() -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": "default", "namespace": "default"}})
    return Registry(store, CATALOG, DEFS, builtin_strategies(), clock)


def pod(name: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause"}]}, **extra}


def answer(reg: Registry, body: dict[str, Any], opts: WriteOptions | None = None) -> tuple[Any, ...]:
    """What a create answers, without what differs per object (name, uid, times, managedFields' time)."""
    try:
        written = reg.create(PODS, "default", body, opts or WriteOptions())
    except APIError as err:
        return ("refused", err.code, str(err))
    obj = written.object
    md = {k: v for k, v in obj["metadata"].items() if k not in ("name", "uid", "creationTimestamp",
                                                                 "resourceVersion", "managedFields")}
    # the service account volume's name is random
    spec = re.sub(r"kube-api-access-[a-z0-9]{5}", "kube-api-access-x", json.dumps(obj["spec"]))
    return ("created", md, spec, written.warnings)


def test_a_replica_is_not_walked_again_and_answers_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    walks = Counted(monkeypatch)
    reg = registry()
    first = answer(reg, pod("a"))
    assert (walks.types, walks.unknown) == (1, 1)
    assert answer(reg, pod("b")) == first
    assert answer(reg, pod("c")) == first
    assert (walks.types, walks.unknown) == (1, 1)
    assert first[0] == "created"
    answer(reg, pod("d", spec={"containers": [{"name": "c", "image": "other"}]}))  # another text: walked
    assert (walks.types, walks.unknown) == (2, 2)


@pytest.mark.parametrize("bad", [
    {"status": {"startTime": "yesterday"}},  # a time's text is checked by the type walk
    {"status": {"phase": 1}},
    {"spec": {"containers": [{"name": "c", "image": "pause", "bogus": True}]}},  # unknown: a warning
])
def test_what_a_walk_finds_is_found_each_time(monkeypatch: pytest.MonkeyPatch, bad: dict[str, Any]) -> None:
    walks = Counted(monkeypatch)
    reg = registry()
    first = answer(reg, pod("a", **bad))
    assert first != answer(reg, pod("x"))  # the body's other strings are part of its key
    assert answer(reg, pod("b", **bad)) == first
    assert walks.types >= 3
    if first[0] == "created":
        assert first[3] and walks.unknown == 3  # the unknown field's warning, walked again for "b"


def test_a_name_of_another_type_is_refused_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    Counted(monkeypatch)
    reg = registry()
    assert answer(reg, pod("a"))[0] == "created"
    refused = answer(reg, pod(7))
    assert refused[:2] == ("refused", 400) and "ObjectMeta.metadata.name of type string" in refused[2]
    assert answer(reg, pod(7)) == refused


def test_strict_validation_still_refuses_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    """The body's duplicate fields are not the walks': a remembered body with duplicates is refused."""
    from nodeagent.apiserver.options import BodyFacts

    Counted(monkeypatch)
    reg = registry()
    assert answer(reg, pod("a"))[0] == "created"
    with pytest.raises(APIError) as err:
        reg.create(PODS, "default", pod("b"), WriteOptions(field_validation=STRICT),
                   BodyFacts(("metadata.name",)))
    assert err.value.code == 400 and "duplicate field" in str(err.value)


def test_the_table_is_bounded() -> None:
    table = registry_module.CleanBodies(size=2)
    schema = registry().behaviour(PODS).schema
    for i in range(5):
        key = table.key(schema, pod("a", spec={"hostname": f"h{i}"}))
        assert key is not None
        table.add(key, schema, DEFS)
        assert len(table._table) <= 2
