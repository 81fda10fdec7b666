"""The options of one write request, parsed once at the HTTP edge and read by the registry.

Why a dataclass: create, update, patch and delete share dryRun, fieldManager and
fieldValidation; delete adds DeleteOptions (preconditions, propagationPolicy, grace period),
which may come as a body or as query parameters. Errors are the API server's 400s. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.apiserver.errors import APIError, bad_request, invalid
from nodeagent.apiserver.selection import query_bool

STRICT = "Strict"
WARN = "Warn"
IGNORE = "Ignore"
PROPAGATION = ("Orphan", "Background", "Foreground")
META = "meta.k8s.io"
"""The group of the options kinds in their 422s (`PatchOptions.meta.k8s.io "" is invalid: ...`)."""


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = WARN
    force: bool = False
    user_agent: str = ""
    # validating admission of the writer (NodeRestriction for a node's identity): (object as it would
    # be stored in the request's version, the stored one or None for a create, subresource); raises
    admit: Callable[[Mapping[str, Any], Mapping[str, Any] | None, str], None] | None = None

    def manager(self, default_prefix: str = "") -> str:
        """fieldManager, else the user agent's program name as upstream derives it (`kubectl-edit`...)."""
        if self.field_manager:
            return self.field_manager
        agent = self.user_agent.split("/", 1)[0] if self.user_agent else "unknown"
        return agent[:128] or "unknown"


def write_options(query: Mapping[str, str], user_agent: str, *, apply: bool = False) -> WriteOptions:
    dry = query.get("dryRun", "")
    if dry not in ("", "All"):
        raise bad_request(f'dryRun: Unsupported value: "{dry}": supported values: "All"')
    validation = query.get("fieldValidation", "") or (STRICT if apply else WARN)
    if validation not in (STRICT, WARN, IGNORE):
        raise bad_request(f"invalid field validation directive: {validation}")
    manager = query.get("fieldManager", "")
    if len(manager) > 128:
        raise invalid(META, "PatchOptions" if apply else "CreateOptions", "",
                      [("fieldManager", "Too long: may not be more than 128 bytes")])
    force = query_bool(query.get("force"))
    if force and not apply:
        raise invalid(META, "PatchOptions", "", [("force", "Forbidden: may not be specified for non-apply patch")])
    if apply and not manager:
        raise invalid(META, "PatchOptions", "", [("fieldManager", "Required value: is required for apply patch")])
    return WriteOptions(dry_run=dry == "All", field_manager=manager, field_validation=validation, force=force,
                        user_agent=user_agent)


@dataclass(frozen=True)
class BodyFacts:
    """What decoding a write's body found, for strict field validation: duplicate fields (JSON
    paths, or yaml.v2's line texts when `yaml`), and the raw JSON body, whose document order a
    typed kind's strict errors follow."""

    duplicates: tuple[str, ...] = ()
    raw: bytes = b""
    yaml: bool = False


def body_facts(duplicates: Sequence[str] | BodyFacts) -> BodyFacts:
    return duplicates if isinstance(duplicates, BodyFacts) else BodyFacts(tuple(duplicates))


@dataclass(frozen=True)
class DeleteOptions:
    dry_run: bool = False
    propagation: str = ""
    grace_period: int | None = None
    uid: str = ""
    resource_version: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    orphan_dependents: bool | None = None
    """The deprecated orphanDependents as sent (None: not sent): the DELETE handler answers 202 to
    an explicit false whose object stays (pending finalizers or grace), as upstream's does."""


def delete_options(query: Mapping[str, str], body: Any) -> DeleteOptions:
    doc: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    if body is not None and not isinstance(body, Mapping):
        raise bad_request("DeleteOptions: the body must be an object")
    if doc.get("kind") not in (None, "", "DeleteOptions"):
        raise bad_request('the body of the request was in an unknown format - accepted media types include: '
                          'application/json, application/yaml')
    dry = doc.get("dryRun") or ([query["dryRun"]] if query.get("dryRun") else [])
    if dry not in ([], ["All"]):
        raise invalid(META, "DeleteOptions", "", [("dryRun", f'Unsupported value: {dry}: supported values: "All"')])
    propagation = str(doc.get("propagationPolicy") or query.get("propagationPolicy") or "")
    orphan: Any = doc.get("orphanDependents")
    if orphan is None and query.get("orphanDependents") not in (None, ""):
        orphan = query_bool(query.get("orphanDependents"))
    if orphan is not None and propagation:
        raise invalid(META, "DeleteOptions", "", [("propagationPolicy", f'Invalid value: "{propagation}": '
                                                 "orphanDependents and deletionPropagation cannot be both set")])
    if orphan is not None:
        # the deprecated field, read as upstream's shouldOrphanDependents reads it: true orphans, false
        # deletes dependents in the background (overriding a kind's orphaning default)
        propagation = "Orphan" if orphan else "Background"
    if propagation and propagation not in PROPAGATION:
        raise invalid(META, "DeleteOptions", "", [("propagationPolicy", f'Unsupported value: "{propagation}": '
                                                 'supported values: "Foreground", "Background", "Orphan", "nil"')])
    grace: Any = doc.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    if grace is not None and grace != "":
        try:
            grace = int(grace)
        except (TypeError, ValueError):
            raise bad_request(f'gracePeriodSeconds: Invalid value: "{grace}": must be an integer') from None
        if grace < 0:
            raise invalid(META, "DeleteOptions", "", [("gracePeriodSeconds", f"Invalid value: {grace}: must be "
                                                     "greater than or equal to 0")])
    else:
        grace = None
    pre = doc.get("preconditions") or {}
    if not isinstance(pre, Mapping):
        raise bad_request("DeleteOptions.preconditions must be an object")
    return DeleteOptions(dry_run=bool(dry), propagation=propagation, grace_period=grace,
                         uid=str(pre.get("uid") or ""), resource_version=str(pre.get("resourceVersion") or ""),
                         orphan_dependents=None if orphan is None else bool(orphan))


def not_acceptable(what: str) -> APIError:
    return APIError(406, "NotAcceptable", f"only the following media types are accepted: {what}")
