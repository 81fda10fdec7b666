"""Server-side printers of the storage.k8s.io/v1 kinds: CSINode, CSIDriver, StorageClass,
CSIStorageCapacity, VolumeAttachment.

Columns, cells and the column descriptions follow k8s.io/kubernetes pkg/printers/internalversion
(printCSINode, printCSIDriver, printStorageClass, printCSIStorageCapacity, printVolumeAttachment),
fed the object as stored, which is the internal type's shape for these single-version kinds.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.tables.common import (
    AGE_COLUMN,
    NAME_COLUMN,
    Cells,
    Printer,
    age,
    column,
    items,
    name_of,
)

_CSINODE_COLUMNS = (
    NAME_COLUMN,
    column("Drivers", "Drivers indicates the number of CSI drivers registered on the node", type_="integer"),
    AGE_COLUMN,
)


def _csinode_cells(o: Mapping[str, Any], now: float) -> Cells:
    return [name_of(o), len(items(o, "spec", "drivers")), age(o, now)]


PRINTERS: dict[str, Printer] = {
    "csinode": Printer(_CSINODE_COLUMNS, _csinode_cells),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
