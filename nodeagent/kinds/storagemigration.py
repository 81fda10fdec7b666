"""The storagemigration.k8s.io kinds: v1 StorageVersionMigration (+status).

Why served: kube-controller-manager's storage-version-migrator controller lists and watches them.
nodeagent keeps one storage version per kind, so a migration has nothing to rewrite here; the real
controller may still run them (it rewrites objects with no-op updates). Facts from k8s.io/kubernetes
pkg/registry/storagemigration/storagemigration. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import STATUS_RESET_META, Kind

STORAGE_VERSION_MIGRATION = Kind(
    "StorageVersionMigration", "storageversionmigrations", namespaced=False, versions=("storagemigration.k8s.io/v1",),
    unconditional_update=False,
    definition={"storagemigration.k8s.io": "io.k8s.api.storagemigration"}, subresources=("status",),
    reset=STATUS_RESET_META, store_hooks="storagemigration", printer="storageversionmigration",
)

KINDS = (STORAGE_VERSION_MIGRATION,)
