"""Admission for storagemigration.k8s.io/v1 StorageVersionMigration: pkg/apis/storagemigration/validation's
ValidateStorageVersionMigration and its update, with their field paths and wording, as store hooks.

Why: kube-controller-manager's storage-version-migrator controller acts on these; one the real
kube-apiserver refuses would reach it here. As for every kind the store checks, the first error is
reported. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.store import validation as meta

JSON = dict[str, Any]
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035}$")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                f"regex used for validation is '{_DNS1035}')")


def _resource(obj: JSON) -> dict[str, str]:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    raw = (spec or {}).get("resource")
    raw = raw if isinstance(raw, dict) else {}
    return {"group": str(raw.get("group") or ""), "resource": str(raw.get("resource") or "")}


def validate_storage_version_migration(obj: JSON) -> JSON:
    """spec.resource.resource required and a DNS-1035 label, spec.resource.group a DNS subdomain when set."""
    gr = _resource(obj)
    if not gr["resource"]:
        raise meta.required("spec.resource.resource", "resource is required to be set")
    faults = (["must be no more than 63 characters"] if len(gr["resource"]) > 63 else []) + (
        [] if _DNS1035_RE.match(gr["resource"]) else [_DNS1035_MSG])
    if faults:
        raise meta.invalid("spec.resource.resource", gr["resource"], ",".join(faults))
    if gr["group"]:
        meta.check_dns_subdomain("spec.resource.group", gr["group"])
    return obj


def validate_storage_version_migration_update(new: JSON, old: JSON) -> None:
    """The spec is immutable (its value printed as the internal spec: Go field Resource, JSON inside)."""
    now = _resource(new)
    if now != _resource(old):
        shown = json.dumps({"Resource": now}, separators=(",", ":"))
        raise ValidationError("spec", f"Invalid value: {shown}: field is immutable")


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {"StorageVersionMigration": {"default": validate_storage_version_migration,
                                        "validate_update": validate_storage_version_migration_update}}
