"""Which fields of a built-in kind a Go object always serializes, and with what value when zero.

Why: kube-apiserver's field manager compares Go objects converted to structured-merge-diff values
(value.NewValueReflect), so a field is in both sides of a comparison whenever its Go type writes
it: a plain (non-pointer) struct always, a field without omitempty always (its zero value: "", 0,
false, null), a pointer struct or an omitempty field only when set. That decides two things the
schema alone cannot tell: whether a struct is recorded as a whole (a pointer struct the write
adds or removes gets its own `.` entry; a plain struct never does), and whether a field holding
its zero value is the writer's (a create is compared with the empty Go object, so a StatefulSet
created with `serviceName: ""` leaves that field unowned, while a custom resource's would be).

The table (nodeagent/apis/gotypes/serialized.json) is what tests/fixtures/gotypes prints with
`serialized` for every type client-go's scheme knows at k8s.io/api v0.37.2 (checked by
tests/integration/test_pod_template_hash.py): per OpenAPI definition name, each always-serialized
field's zero value as JSON, `{}` marking a plain struct (its own fields are its definition's).
Definitions it lacks (classic DRA's v1alpha3 shapes, CRDs) keep typedvalue's rule from the
schema. Reads package data once; no other I/O.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any


@functools.cache
def _table() -> Mapping[str, Mapping[str, Any]]:
    text = resources.files("nodeagent.apis.gotypes").joinpath("serialized.json").read_text()
    table: dict[str, Mapping[str, Any]] = json.loads(text)
    return table


def serialized(definition: str) -> Mapping[str, Any] | None:
    """The always-serialized fields of `definition` and their zero values ({} a plain struct), None
    for a definition the Go types do not describe."""
    return _table().get(definition) if definition else None
