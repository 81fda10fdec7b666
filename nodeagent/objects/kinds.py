"""The object store's kinds with every admission hook the object model has: one place that says
which hooks a store gets, so the daemon, the benchmarks and the tests open the same store.
Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.kinds import BUILTIN
from nodeagent.objects import admissionregistration as admission_policies
from nodeagent.objects import autoscaling as autoscalers
from nodeagent.objects import certificates as certificate_requests
from nodeagent.objects import (
    cluster,
    endpoints,
    networking,
    node,
    rbac,
    secret,
    service,
    storage,
    storagemigration,
    volumes,
)
from nodeagent.objects import coordination as leases
from nodeagent.objects import core as core_misc
from nodeagent.objects import podcertificates as pod_certificates
from nodeagent.objects.resource import validation as resource
from nodeagent.store.kinds import KindRegistry, builtin_kinds


def admitted_kinds(gates: Mapping[str, bool] = resource.DEFAULT_GATES) -> KindRegistry:
    """The built-in kinds with the hooks their declarations name (`store_hooks`): the resource
    API's (for these feature gates) and the core kinds' (ResourceQuota, Event, Pod status)."""
    modules = {"resource": resource.hooks(gates), "core": core_misc.hooks(gates), "storage": storage.hooks(),
               "cluster": cluster.hooks(), "coordination": leases.hooks(gates),
               "service": service.hooks(), "secret": secret.hooks(),
               "volumes": volumes.hooks(), "endpoints": endpoints.hooks(), "rbac": rbac.hooks(),
               "networking": networking.hooks(), "node": node.hooks(), "storagemigration": storagemigration.hooks(),
               "admissionregistration": admission_policies.hooks(),
               "autoscaling": autoscalers.hooks(), "certificates": certificate_requests.hooks(),
               "podcertificates": pod_certificates.hooks()}
    return builtin_kinds().with_hooks({k.kind: modules[k.store_hooks][k.kind] for k in BUILTIN if k.store_hooks})
