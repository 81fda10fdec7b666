"""The patch types the API server accepts besides apply: one entry point for the REST layer.

Why: PATCH requests name their type by Content-Type (application/json-patch+json,
application/merge-patch+json, application/strategic-merge-patch+json); each is a pure
function from the stored object (a plain dict) and the decoded body to the new object, and
each failure is a `PatchError` carrying the Status upstream answers with. The functions live
by role in jsonpatch.py (RFC 6902 and RFC 7386) and strategic.py (with its list
ordering in order.py); server-side apply is elsewhere.
"""

from __future__ import annotations

from nodeagent.apiserver.patch.errors import PatchError
from nodeagent.apiserver.patch.jsonpatch import MAX_OPERATIONS, json_patch, merge_patch
from nodeagent.apiserver.patch.strategic import strategic_merge_patch

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

__all__ = [
    "JSON_PATCH",
    "MAX_OPERATIONS",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "PatchError",
    "json_patch",
    "merge_patch",
    "strategic_merge_patch",
]
