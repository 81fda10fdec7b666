"""Server-side printing (`kubectl get`'s columns): one entry point for the REST layer.

Why a folder: the assembly of a meta.k8s.io Table (table.py: built-in printers, custom resources'
additionalPrinterColumns, the generic Name/Created At), the per-kind printers by API group
(core.py, resource.py; a kind's declaration in nodeagent/kinds names its printer's key) and
what they share (common.py) are one concept, upstream's pkg/printers/internalversion plus the
registry's table convertors. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.apiserver.tables.table import (
    BUILTIN_GROUPS,
    INCLUDE_OBJECT,
    PRINTERS,
    TABLE_VERSION,
    column_cell,
    created_at,
    custom_printer,
    table,
)

__all__ = [
    "BUILTIN_GROUPS",
    "INCLUDE_OBJECT",
    "PRINTERS",
    "TABLE_VERSION",
    "column_cell",
    "created_at",
    "custom_printer",
    "table",
]
