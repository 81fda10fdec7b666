"""The kinds' declarations are the one source: the store's registry, the API catalog, the object
model's hooks and conversion all agree with them."""

from __future__ import annotations

import pytest

from nodeagent.apiserver import conversion
from nodeagent.apiserver.catalog import builtin_resources
from nodeagent.kinds import BUILTIN, by_kind
from nodeagent.kinds.model import Kind, group_of, version_of
from nodeagent.kinds.reviews import REVIEWS
from nodeagent.objects import core as core_misc
from nodeagent.objects.resource import validation as resource
from nodeagent.store import builtin_kinds


def test_store_registry_is_the_declarations() -> None:
    kinds = builtin_kinds()
    assert kinds.names() == sorted(k.kind for k in BUILTIN)
    for decl in BUILTIN:
        info = kinds.get(decl.kind)
        assert (info.api_versions, info.namespaced, info.resource, info.short_names) == (
            decl.store_versions, decl.namespaced, decl.resource, decl.short_names)
        assert info.api_versions[0] == decl.storage_version


@pytest.mark.parametrize("classic_dra", [False, True])
def test_catalog_serves_every_declared_version(classic_dra: bool) -> None:
    served = {(r.api_version, r.kind) for r in builtin_resources(classic_dra=classic_dra) if r.served}
    want = {(v, k.kind) for k in BUILTIN for v in k.versions if v not in k.optional_versions or classic_dra}
    assert served == want | {(k.storage_version, k.kind) for k in REVIEWS}


def test_review_kinds_are_served_create_only_and_answered() -> None:
    """The review kinds are in the catalog (discovery, OpenAPI), never stored, and each has its answer."""
    from nodeagent.apiserver.reviews import PATHS

    reviews = [r for r in builtin_resources() if not r.stored]
    assert {(r.group, r.version, r.plural): r.kind for r in reviews} == dict(PATHS)
    assert all(r.verbs == ("create",) for r in reviews)
    assert not {k.kind for k in REVIEWS} & {k.kind for k in BUILTIN}


def test_catalog_entries_carry_the_declaration() -> None:
    reviews = {k.kind: k for k in REVIEWS}
    for r in builtin_resources():
        decl = by_kind(r.kind) or reviews.get(r.kind)
        assert decl is not None
        assert (r.plural, r.namespaced, r.short_names, r.categories, r.subresources, r.verbs) == (
            decl.plural, decl.namespaced, decl.short_names, decl.categories, decl.subresources, decl.verbs)
        assert r.storage_version == (r.api_version == decl.storage_version)
        assert r.definition.endswith(f".{r.version}.{r.kind}")


def test_store_hooks_are_named_by_the_declarations() -> None:
    """A hook the object model defines for a kind whose declaration does not name its module
    would never run: the two lists are the same."""
    declared = {k.kind for k in BUILTIN if k.store_hooks == "resource"}
    assert declared == set(resource.hooks()) == {k.kind for k in resource.KINDS}
    assert {k.kind for k in BUILTIN if k.store_hooks == "core"} == set(core_misc.hooks())


STORED_SHAPE: dict[str, dict[str, object]] = {
    # what the store always holds of an autoscaler (its metrics and its status are never absent):
    # converting a bare one to v1 and back adds upstream's 80% CPU default and the zero counts
    "HorizontalPodAutoscaler": {"spec": {"metrics": [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
        "status": {"currentReplicas": 0, "desiredReplicas": 0}},
}


@pytest.mark.parametrize("decl", BUILTIN, ids=lambda k: k.kind)
def test_every_version_converts_through_the_storage_version(decl: Kind) -> None:
    obj = {"apiVersion": decl.storage_version, "kind": decl.kind, "metadata": {"name": "x"},
           **STORED_SHAPE.get(decl.kind, {})}
    for api_version in decl.versions:
        assert conversion.storage_version(decl.kind, api_version) == decl.storage_version
        there = conversion.to_version(obj, api_version)
        assert there["apiVersion"] == api_version
        assert conversion.to_storage(there) == obj


def test_a_declaration_needs_an_openapi_package_per_group() -> None:
    with pytest.raises(ValueError, match="no OpenAPI package"):
        Kind("Widget", "widgets", namespaced=True, versions=("example.com/v1",), definition={"": "io.k8s.api.core"})
    decl = Kind("Widget", "widgets", namespaced=True, versions=("example.com/v1", "example.com/v1beta1"),
                definition={"example.com": "com.example"}, optional_versions={"example.com/v1beta1": "opt"})
    assert decl.store_versions == ("example.com/v1",)
    assert decl.definition_of("example.com/v1beta1") == "com.example.v1beta1.Widget"
    assert (group_of("example.com/v1"), version_of("example.com/v1")) == ("example.com", "v1")


def test_every_named_strategy_and_printer_exists() -> None:
    from nodeagent.apiserver import tables
    from nodeagent.apiserver.strategies import builtin_strategies, special

    strategies = builtin_strategies()
    for decl in BUILTIN:
        assert not decl.strategy or type(strategies[decl.kind]) is special()[decl.strategy]
        assert not decl.printer or decl.printer in tables.PRINTERS
        assert set(strategies[decl.kind].field_getters()) == {"metadata.name", "metadata.namespace",
                                                              *decl.field_labels}


@pytest.mark.parametrize("decl", BUILTIN, ids=lambda k: k.kind)
def test_reset_fields_match_the_status_subresource(decl: Kind) -> None:
    """The registry keeps the stored status on a spec write and the stored spec on a status
    write of a kind with a status subresource: its declared reset fields say the same."""
    if "status" in decl.subresources:
        assert decl.reset.spec_write == ("status",)
        assert decl.reset.status_write[:1] == ("spec",)
    else:
        assert decl.reset.spec_write == decl.reset.status_write == decl.reset.on_create == ()


def test_every_declared_version_has_its_schema_and_group_version_kind() -> None:
    """The schemas are written by hand (apiserver/schema/builtin): each version a declaration
    serves has its definition there, named as the declaration names it, with its GVK."""
    from nodeagent.apiserver.schema.builtin import BUILTIN_GVK, builtin_definitions

    defs = builtin_definitions()
    for decl in BUILTIN:
        for api_version in decl.versions:
            name = decl.definition_of(api_version)
            assert name in defs, name
            assert BUILTIN_GVK[name] == (group_of(api_version), version_of(api_version), decl.kind)
