"""A compact vocabulary for writing the built-in kinds' schemas by hand.

Why: upstream generates its OpenAPI from Go struct tags; we have no Go types, so each
definition is spelled out in schema/builtin/. These small constructors keep those
tables close to the shape of the Go structs (one line per field: name, type, short
description, list semantics) instead of nested `Schema(...)` calls. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.apiserver.schema.model import Schema

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
CORE = "io.k8s.api.core.v1."
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META = META + "ObjectMeta"


def s(desc: str = "", *, enum: Sequence[str] = (), fmt: str = "") -> Schema:
    """A string field."""
    return Schema(type="string", description=desc, enum=tuple(enum), format=fmt)


def i32(desc: str = "") -> Schema:
    return Schema(type="integer", format="int32", description=desc)


def i64(desc: str = "") -> Schema:
    return Schema(type="integer", format="int64", description=desc)


def num(desc: str = "") -> Schema:
    return Schema(type="number", format="double", description=desc)


def b(desc: str = "") -> Schema:
    return Schema(type="boolean", description=desc)


def ref(name: str, desc: str = "") -> Schema:
    """A field of a named type; the description is the field's (kubectl explain shows it)."""
    return Schema(ref=name, description=desc)


def core(name: str, desc: str = "") -> Schema:
    return ref(CORE + name, desc)


def meta(name: str, desc: str = "") -> Schema:
    return ref(META + name, desc)


def time(desc: str = "") -> Schema:
    return ref(META + "Time", desc)


def qty(desc: str = "") -> Schema:
    return ref(QUANTITY, desc)


def metadata(desc: str = "Standard object metadata: name, namespace, labels, annotations, owners.") -> Schema:
    return ref(OBJECT_META, desc)


def arr(items: Schema, desc: str = "", *, atomic: bool = False) -> Schema:
    """A list with upstream's default semantics (replaced whole by patches, atomic for apply);
    `atomic` when upstream marks it +listType=atomic explicitly."""
    return Schema(type="array", items=items, description=desc, list_type="atomic" if atomic else "")


def strs(desc: str = "", *, atomic: bool = True) -> Schema:
    return arr(s(), desc, atomic=atomic)


def sset(desc: str = "", *, merge: bool = False) -> Schema:
    """A list of unique strings (+listType=set); `merge` adds patchStrategy=merge (finalizers)."""
    return Schema(type="array", items=s(), description=desc, list_type="set", patch_strategy="merge" if merge else "")


def lmap(items: Schema, desc: str, *keys: str, strategy: str = "merge", merge_key: str = "") -> Schema:
    """A list of objects keyed by `keys` (+listType=map), merged by strategic merge patch on
    `merge_key` (default the first key); strategy "" when upstream has no patch strategy."""
    return Schema(
        type="array",
        items=items,
        description=desc,
        list_type="map",
        list_map_keys=tuple(keys),
        patch_strategy=strategy,
        patch_merge_key=(merge_key or keys[0]) if strategy else "",
    )


def smap(desc: str = "", *, atomic: bool = False) -> Schema:
    """A map of string to string (labels, nodeSelector, data); `atomic` where upstream marks it
    +mapType=atomic (one writer owns the whole map in managedFields)."""
    return Schema(type="object", additional_properties=s(), description=desc, map_type="atomic" if atomic else "")


def mapof(value: Schema, desc: str = "") -> Schema:
    return Schema(type="object", additional_properties=value, description=desc)


def qmap(desc: str = "") -> Schema:
    """A ResourceList: resource name to quantity."""
    return mapof(qty(), desc)


def loose(desc: str = "") -> Schema:
    """An object kept as written: used for rarely written types whose fields are not spelled out."""
    return Schema(type="object", preserve_unknown_fields=True, description=desc)


def obj(desc: str, props: Mapping[str, Schema], required: Sequence[str] = (), **kw: Any) -> Schema:
    """An object definition with known fields."""
    return Schema(type="object", description=desc, properties=dict(props), required=tuple(required), **kw)


def kind(desc: str, props: Mapping[str, Schema], required: Sequence[str] = ()) -> Schema:
    """A top-level kind: apiVersion, kind and metadata come first, as in every upstream kind."""
    head = {
        "apiVersion": s("The versioned schema of this object, e.g. v1 or resource.k8s.io/v1."),
        "kind": s("The REST resource this object represents, in CamelCase."),
        "metadata": metadata(),
    }
    return obj(desc, {**head, **props}, required)
