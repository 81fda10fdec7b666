"""The packages the Pod encoder reads its message tables from.

Why apart from the encoder: adding a field is a table edit in a podproto_types_* module,
never a change to the wire code (podproto.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from nodeagent.podsapi.podproto_types_spec import SPEC
from nodeagent.podsapi.podproto_types_status import META, STATUS
from nodeagent.podsapi.podproto_types_volumes import VOLUMES
from nodeagent.protonotation import Package

PACKAGES: Mapping[str, Package] = MappingProxyType({
    "core": MappingProxyType({**SPEC, **VOLUMES, **STATUS}),
    "meta": META,
})
