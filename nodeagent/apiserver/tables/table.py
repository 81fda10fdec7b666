"""Server-side printing: a list or an object as a meta.k8s.io/v1 Table, which `kubectl get` shows.

Why on the server: kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints
the columns and cells it gets back, so what `kubectl get` shows is decided here. Three kinds of
convertor, as upstream has:

- built-in kinds whose declaration (nodeagent/kinds) names a printer (core.py,
  resource.py, apps.py: pkg/printers/internalversion), fed the object in its storage version's shape
  as upstream prints the internal type;
- custom resources: Name plus the CRD's additionalPrinterColumns for the served version, each
  a JSONPath (jsonpath.py) whose first result is typed as the column says, a `date` column shown
  as an age; a CRD version without columns gets Age (apiextensions-apiserver's tableconvertor);
- anything else, CustomResourceDefinition included: Name and Created At (the generic
  registry's default table convertor).

Each row's `object` is what includeObject asks for (upstream's endpoints/handlers asTable):
PartialObjectMetadata for Metadata (the default), the object for Object, null for None.
Pure: no I/O; `now` (Unix seconds) is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from nodeagent.apiserver import conversion, jsonpath
from nodeagent.apiserver.catalog import Resource
from nodeagent.apiserver.errors import bad_request
from nodeagent.apiserver.tables.apps import PRINTERS as APPS_PRINTERS
from nodeagent.apiserver.tables.cluster import PRINTERS as CLUSTER_PRINTERS
from nodeagent.apiserver.tables.clusterapis import PRINTERS as CLUSTER_API_PRINTERS
from nodeagent.apiserver.tables.common import (
    CREATED_DOC,
    NAME_COLUMN,
    Cells,
    Printer,
    column,
    get,
    name_of,
    parse_time,
)
from nodeagent.apiserver.tables.core import PRINTERS as CORE_PRINTERS
from nodeagent.apiserver.tables.corev1 import PRINTERS as COREV1_PRINTERS
from nodeagent.apiserver.tables.rbac import PRINTERS as RBAC_PRINTERS
from nodeagent.apiserver.tables.resource import PRINTERS as RESOURCE_PRINTERS
from nodeagent.apiserver.tables.storage import PRINTERS as STORAGE_PRINTERS
from nodeagent.kinds import BUILTIN, by_kind
from nodeagent.kinds.model import Kind, group_of
from nodeagent.util.timefmt import human_duration

TABLE_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT = ("None", "Metadata", "Object")
PRINTERS: dict[str, Printer] = {
    **CORE_PRINTERS, **RESOURCE_PRINTERS, **STORAGE_PRINTERS, **APPS_PRINTERS, **CLUSTER_PRINTERS,
    **COREV1_PRINTERS, **RBAC_PRINTERS, **CLUSTER_API_PRINTERS,
}
"""Built-in printers by the key a kind's declaration names (`printer`)."""

BUILTIN_GROUPS = frozenset({*(group_of(v) for k in BUILTIN for v in k.versions), "meta.k8s.io"})
"""Groups whose kinds are compiled in: one without a printer gets the generic table, not a CRD's."""

_DEFAULT_COLUMNS = (NAME_COLUMN, column("Created At", CREATED_DOC, type_="date"))
_CRD_AGE = {"name": "Age", "type": "date", "description": CREATED_DOC, "jsonPath": ".metadata.creationTimestamp"}


def table(
    resource: Resource,
    objects: Sequence[Mapping[str, Any]],
    *,
    now: float,
    include_object: str = "Metadata",
    printer_columns: Sequence[Mapping[str, Any]] | None = None,
    list_meta: Mapping[str, Any] | None = None,
    no_headers: bool = False,
    group_version: str = TABLE_VERSION,
) -> dict[str, Any]:
    """The Table of `objects` (in the request's version) of `resource`.

    - `printer_columns`: the CRD's additionalPrinterColumns of this version for a custom
      resource (empty or None: the CRD declares none, so Name and Age); None for built-in kinds.
      A kind of a built-in group without a printer (CustomResourceDefinition) gets the generic
      Name and Created At.
    - `list_meta`: the list's metadata (resourceVersion, continue, remainingItemCount) when
      answering a list; for a single object leave it None and its resourceVersion is used.
    - `no_headers`: TableOptions.noHeaders (columnDefinitions left out).
    - `group_version`: meta.k8s.io/v1 or meta.k8s.io/v1beta1, as the request asked.

    Raises APIError 400 for an unknown includeObject."""
    mode = include_object or "Metadata"
    if mode not in INCLUDE_OBJECT:
        raise bad_request(f'unrecognized includeObject value: "{include_object}"')
    decl = _declaration(resource)
    if decl is not None and decl.printer:
        printer = PRINTERS[decl.printer]
    else:
        builtin = printer_columns is None and resource.group in BUILTIN_GROUPS
        printer = _default_printer() if builtin else custom_printer(printer_columns or ())
    if list_meta is not None and printer.for_list is not None:
        printer = replace(printer, cells=printer.for_list(objects))
    rows = [_row(decl, printer, obj, now, mode, group_version) for obj in objects]
    return {
        "kind": "Table",
        "apiVersion": group_version,
        "metadata": _table_meta(objects, list_meta),
        "columnDefinitions": None if no_headers else [dict(c) for c in printer.columns],
        "rows": rows,
    }


def _declaration(resource: Resource) -> Kind | None:
    """The built-in kind `resource` serves (in one of its declared groups), None for a custom resource."""
    decl = by_kind(resource.kind)
    if decl is None or resource.group not in {group_of(v) for v in decl.versions}:
        return None
    return decl


def _row(
    decl: Kind | None, printer: Printer, obj: Mapping[str, Any], now: float, mode: str, group_version: str
) -> dict[str, Any]:
    view = obj
    if decl is not None and obj.get("apiVersion") in decl.conversions:
        # upstream prints the internal type: a version with its own shape (events.k8s.io's Event,
        # v1beta1's claims and slices) is printed from the storage version's
        view = conversion.to_version(obj, decl.storage_version)
    row: dict[str, Any] = {"cells": printer.cells(view, now)}
    conditions = printer.conditions(view) if printer.conditions else []
    if conditions:
        row["conditions"] = conditions
    if mode == "Object":
        row["object"] = obj
    elif mode == "Metadata":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": group_version,
            "metadata": obj.get("metadata") or {},
        }
    else:
        row["object"] = None
    return row


def _table_meta(objects: Sequence[Mapping[str, Any]], list_meta: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if list_meta is None:
        rv = get(objects[0], "metadata", "resourceVersion") if len(objects) == 1 else None
        if rv:
            out["resourceVersion"] = rv
        return out
    for key in ("resourceVersion", "continue", "remainingItemCount"):
        value = list_meta.get(key)
        if value is not None and value != "":
            out[key] = value
    return out


# --- the generic registry's default: Name, Created At ----------------------------------------------


def _default_printer() -> Printer:
    return Printer(_DEFAULT_COLUMNS, lambda obj, now: [name_of(obj), created_at(obj)])


def created_at(obj: Mapping[str, Any]) -> str:
    """metadata.creationTimestamp in UTC, RFC 3339 to the second (Go's zero time when unset)."""
    at = parse_time(get(obj, "metadata", "creationTimestamp"))
    if at is None:
        return "0001-01-01T00:00:00Z"
    return datetime.fromtimestamp(int(at // 1), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- custom resources: the CRD's additionalPrinterColumns ----------------------------------------


def custom_printer(printer_columns: Sequence[Mapping[str, Any]]) -> Printer:
    """Name plus one column per additionalPrinterColumn (Age when there are none).

    As upstream, a column whose jsonPath does not parse ends the list (the columns before it
    are kept)."""
    columns = list(printer_columns) or [_CRD_AGE]
    defs: list[dict[str, Any]] = [NAME_COLUMN]
    paths: list[tuple[str, str]] = []
    for col in columns:
        path = str(col.get("jsonPath") or "")
        try:
            jsonpath.parse("{" + path + "}")
        except ValueError:
            break
        description = str(col.get("description") or "") or (
            f"Custom resource definition column (in JSONPath format): {path}"
        )
        type_ = str(col.get("type") or "")
        defs.append(column(str(col.get("name") or ""), description, type_=type_, format_=str(col.get("format") or ""),
                           priority=int(col.get("priority") or 0)))
        paths.append((path, type_))

    def cells(obj: Mapping[str, Any], at: float) -> Cells:
        out: Cells = [name_of(obj)]
        for path, type_ in paths:
            out.append(column_cell(path, type_, obj, at))
        return out

    return Printer(tuple(defs), cells)


def column_cell(path: str, type_: str, obj: Mapping[str, Any], now: float) -> Any:
    """One additionalPrinterColumn's cell: None when the path selects nothing; a string column
    prints the value as kubectl's JSONPath does; other types keep the JSON value if it fits."""
    try:
        found = jsonpath.evaluate("{" + path + "}", obj)
    except ValueError:
        return None
    if not found:
        return None
    value = found[0]
    if type_ == "string":
        return jsonpath.format_value(value)
    return _typed(type_, value, now)


def _typed(type_: str, value: Any, now: float) -> Any:
    """apiextensions-apiserver's cellForJSONValue."""
    if value is None or (isinstance(value, bool) and type_ in ("integer", "number")):
        return None
    if type_ == "integer" and isinstance(value, (int, float)):
        return int(value)
    if type_ == "number" and isinstance(value, (int, float)):
        return float(value)
    if type_ == "boolean" and isinstance(value, bool):
        return value
    if type_ == "date" and isinstance(value, str):
        if value in ("", "null"):
            return "<unknown>"
        at = parse_time(value)
        return "<invalid>" if at is None else human_duration(now - at)
    return None
