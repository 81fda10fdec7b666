"""Pod resources: resource-name classes, quantities, container and pod-level requests and limits.

Why together: one set of rules (v1helper's resource-name classes, the quantity syntax, the
API server's request/limit validation and defaulting) decides what a container's or a pod's
`resources` may say, and the kubelet's request aggregation is what pod-level defaulting and
admission both build on. Errors carry the API server's field paths and wording (e.g.
`spec.containers[0].resources.requests[cpu]: Invalid value: "abc": quantities must match ...`).
Defaulting: a container request defaults to its limit; a pod-level request defaults from the
containers' aggregate request, else the pod-level limit. Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import QUANTITY_MSG
from nodeagent.objects.pod.fields import get_mapping
from nodeagent.objects.pod.model import Container
from nodeagent.store import validation as meta
from nodeagent.util import quantity

NEGATIVE_MSG = "must be greater than or equal to 0"
NOT_INTEGER_MSG = "must be an integer"
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
POD_LEVEL_RESOURCES = ("cpu", "memory")
HUGEPAGES_PREFIX = "hugepages-"


# --- resource name classes (v1helper) --------------------------------------------------------


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


@functools.lru_cache(maxsize=1024)
def is_extended(name: str) -> bool:
    """An extended resource (example.com/gpu): not native, not a quota `requests.` name.
    Cached: every admission asks it of the same few names, and the name check is a regex."""
    if is_native(name) or name.startswith("requests."):
        return False
    try:
        meta.check_qualified_name("", "requests." + name)
    except ValidationError:
        return False
    return True


def is_overcommit_allowed(name: str) -> bool:
    return is_native(name) and not is_hugepages(name)


def aggregate_container_requests(
    containers: Sequence[Container], init_containers: Sequence[Container]
) -> dict[str, int]:
    """The kubelet's AggregateContainerRequests: max(sum of regular + sidecars, each init phase).

    An init container running at index i needs its own request plus every restartable
    (sidecar) init container started before it; sidecars also run beside the regular ones.
    """
    reqs: dict[str, int] = {}
    for c in containers:
        _add(reqs, c.requests)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in init_containers:
        if c.is_sidecar:
            _add(reqs, c.requests)
            _add(sidecars, c.requests)
            phase = dict(sidecars)
        else:
            phase = dict(c.requests)
            _add(phase, sidecars)
        for name, value in phase.items():
            init_max[name] = max(init_max.get(name, 0), value)
    for name, value in init_max.items():
        reqs[name] = max(reqs.get(name, 0), value)
    return reqs


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


# --- requests and limits ---------------------------------------------------------------------


def _quantities(resources: Mapping[str, Any], key: str, path: str) -> dict[str, tuple[int, str]]:
    """name -> (canonical value, text as given) for resources.requests or resources.limits."""
    out: dict[str, tuple[int, str]] = {}
    for name, raw in get_mapping(resources, key, path).items():
        item = f"{path}[{name}]"
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise meta.invalid(item, raw, QUANTITY_MSG)
        try:
            value = quantity.canonical(str(name), raw)
        except quantity.QuantityError:
            raise meta.invalid(item, raw, QUANTITY_MSG) from None
        out[str(name)] = (value, str(raw))
    return out


def _check_resource(name: str, value: int, text: str, path: str, *, container: bool) -> None:
    if container:
        if "/" not in name:
            if name not in STANDARD_CONTAINER_RESOURCES and not is_hugepages(name):
                raise meta.invalid(path, name, "must be a standard resource for containers")
        elif not is_native(name) and not is_extended(name):
            raise meta.invalid(path, name, "doesn't follow extended resource name standard")
    if is_hugepages(name):
        try:
            size = quantity.canonical("memory", name[len(HUGEPAGES_PREFIX):])
        except quantity.QuantityError:
            size = 0
        if size <= 0:
            raise meta.invalid(path, name, "must be a valid hugepages resource name (hugepages-<size>)")
    if value < 0:
        raise meta.invalid(path, text, NEGATIVE_MSG)
    if is_extended(name) and not quantity.is_integer_quantity(text):
        raise meta.invalid(path, text, NOT_INTEGER_MSG)


def parse_requirements(
    resources: Mapping[str, Any], path: str, *, container: bool
) -> tuple[dict[str, int], dict[str, int]]:
    """Validated (requests, limits) of a `resources` object at `path`; container ones are defaulted."""
    req_path, lim_path = f"{path}.requests", f"{path}.limits"
    limits = _quantities(resources, "limits", lim_path)
    requests = _quantities(resources, "requests", req_path)
    if not container:
        for qty, qpath in ((limits, lim_path), (requests, req_path)):
            for name in qty:
                if name not in POD_LEVEL_RESOURCES:
                    raise meta.not_supported(f"{qpath}[{name}]", name, POD_LEVEL_RESOURCES)
    for name, (value, text) in limits.items():
        _check_resource(name, value, text, f"{lim_path}[{name}]", container=container)
    for name, (value, text) in requests.items():
        _check_resource(name, value, text, f"{req_path}[{name}]", container=container)
    if container:
        # API-server defaulting: a resource with only a limit gets the limit as its request.
        for name, entry in limits.items():
            requests.setdefault(name, entry)
    for name, (value, text) in requests.items():
        if name in limits:
            lim_value, lim_text = limits[name]
            if value != lim_value and not is_overcommit_allowed(name):
                raise meta.invalid(req_path, text, f"must be equal to {name} limit of {lim_text}")
            if value > lim_value:
                detail = f"must be less than or equal to {name} limit of {lim_text}"
                raise meta.invalid(req_path, text, detail)
        elif container and not is_overcommit_allowed(name):
            raise meta.required(lim_path, "Limit must be set for non overcommitable resources")
    if container:
        names = set(limits) | set(requests)
        if any(is_hugepages(n) for n in names) and not names & {"cpu", "memory"}:
            raise meta.forbidden(path, "HugePages require cpu or memory")
    return {n: v for n, (v, _) in requests.items()}, {n: v for n, (v, _) in limits.items()}


def parse_pod_resources(
    spec: Mapping[str, Any], containers: Sequence[Container], init: Sequence[Container]
) -> tuple[dict[str, int], dict[str, int]]:
    """spec.resources as defaulted (requests, limits); both empty when the pod sets none."""
    raw = get_mapping(spec, "resources", "spec.resources")
    if not raw:
        return {}, {}
    requests, limits = parse_requirements(raw, "spec.resources", container=False)
    # defaultPodRequests: a pod-level limit without a request takes the containers' aggregate
    # request when any container sets one, else the limit itself.
    aggregate = aggregate_container_requests(containers, init)
    for name, limit in limits.items():
        if name not in requests:
            requests[name] = aggregate.get(name, limit)
    return requests, limits
