"""Every protobuf package the tables describe, by the short name table lines use (`meta.ObjectMeta`).

Why one mapping: a message is written once, in the module of its upstream group, and both the API
server's decoder and the Pods API's encoder resolve names through this. core/v1 is spread over
three modules by concept (core.py, pod.py, volume.py); joining them refuses a message named twice,
so no second copy of a table can come back unnoticed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from nodeagent.protowire.apiextensions import APIEXTENSIONS_V1, APIREGISTRATION_V1
from nodeagent.protowire.apps import APPS_V1, AUTOSCALING_V1, BATCH_V1, WORKLOAD_CORE
from nodeagent.protowire.authentication import AUTHENTICATION_V1
from nodeagent.protowire.authorization import AUTHORIZATION_V1
from nodeagent.protowire.cluster import DISCOVERY_V1, POLICY_V1, SCHEDULING_V1
from nodeagent.protowire.clusterapis import (
    ADMISSION_V1,
    AUTOSCALING_V2,
    CERTIFICATES_V1,
    NETWORKING_V1,
    NODE_V1,
    STORAGEMIGRATION_V1,
)
from nodeagent.protowire.coordination import COORDINATION_V1
from nodeagent.protowire.core import CORE
from nodeagent.protowire.corev1 import COREV1
from nodeagent.protowire.events import EVENTS_V1
from nodeagent.protowire.meta import META
from nodeagent.protowire.notation import Message, Package
from nodeagent.protowire.pod import POD
from nodeagent.protowire.rbac import RBAC_V1
from nodeagent.protowire.resource import RESOURCE_V1, RESOURCE_V1ALPHA3_CLASSIC, RESOURCE_V1BETA1
from nodeagent.protowire.storage import STORAGE_CORE, STORAGE_V1
from nodeagent.protowire.volume import VOLUMES


def join(*parts: Package) -> Package:
    """One package from modules that each hold some of its messages; a message in two is an error."""
    out: dict[str, Message] = {}
    for part in parts:
        for name, table in part.items():
            if name in out:
                raise ValueError(f"protobuf message {name} is written twice")
            out[name] = table
    return MappingProxyType(out)


PACKAGES: Mapping[str, Package] = MappingProxyType({
    "meta": META,
    "core": join(CORE, POD, VOLUMES, STORAGE_CORE, WORKLOAD_CORE, COREV1),
    "coordination": COORDINATION_V1,
    "events": EVENTS_V1,
    "resource.v1": RESOURCE_V1,
    "resource.v1beta1": RESOURCE_V1BETA1,
    "resource.v1alpha3": RESOURCE_V1ALPHA3_CLASSIC,
    "storage": STORAGE_V1,
    "apps": APPS_V1,
    "batch": BATCH_V1,
    "autoscaling": AUTOSCALING_V1,
    "policy": POLICY_V1,
    "scheduling": SCHEDULING_V1,
    "discovery": DISCOVERY_V1,
    "rbac": RBAC_V1,
    "authorization": AUTHORIZATION_V1,
    "authentication": AUTHENTICATION_V1,
    "autoscaling.v2": AUTOSCALING_V2,
    "admissionregistration": ADMISSION_V1,
    "certificates": CERTIFICATES_V1,
    "networking": NETWORKING_V1,
    "node": NODE_V1,
    "storagemigration": STORAGEMIGRATION_V1,
    "apiextensions": APIEXTENSIONS_V1,
    "apiregistration": APIREGISTRATION_V1,
})
"""Package short name -> message name -> field table. "resource.v1" also serves v1beta2 and v1alpha3's
DeviceTaintRule; "resource.v1alpha3" is classic DRA's claims and PodSchedulingContext."""


def resolve(package: str, name: str) -> tuple[str, Message | None]:
    """A table line's message name (`ObjectMeta` in `package`, or `meta.ObjectMeta`) as (its package,
    its table); the table is None when no module writes it (a table bug, which each user reports in
    its own error: the unit tests walk every reference)."""
    pkg, _, short = name.rpartition(".")
    pkg = pkg or package
    return pkg, PACKAGES[pkg].get(short)
