"""Lease admission as kube-apiserver's lease strategy (pkg/registry/coordination/lease, v1.37.2).

Exists because the Lease is written by every node every few seconds and by every leader election,
and a client that sends a nonsensical duration (0, negative) must get upstream's 422 rather than
a stored lease no one can reason about. The strategy drops `spec.strategy` and
`spec.preferredHolder` while CoordinatedLeaderElection is off (off by default in every release up
to 1.37), keeping them on an update when the stored lease already has them, and then
ValidateLeaseSpec lists every error. Cheap on the heartbeat path: three field reads. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta

GATE = "CoordinatedLeaderElection"
STRATEGIES = ("OldestEmulationVersion",)
"""validLeaseStrategies: the Kubernetes-defined names; other strategies must be qualified names."""


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def validate_lease(obj: dict[str, Any]) -> None:
    """ValidateLeaseSpec: a positive duration, non-negative transitions, a known or qualified
    strategy (upstream names its errors `spec.strategy.strategy`: the child path is taken twice),
    and a preferred holder only with a strategy; every error listed."""
    spec = _spec(obj)
    errs = Errors()
    duration = _int(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(meta.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = _int(spec.get("leaseTransitions"))
    if transitions is not None and transitions < 0:
        errs.append(meta.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if isinstance(strategy, str):
        if "/" not in strategy:
            if strategy not in STRATEGIES:
                errs.append(meta.not_supported("spec.strategy.strategy", strategy, STRATEGIES))
        else:
            errs.check(meta.check_qualified_name, "spec.strategy.strategy", strategy)
    holder = spec.get("preferredHolder")
    if isinstance(holder, str) and holder and not strategy:
        errs.append(meta.forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
    errs.raise_all()


def hooks(gates: Mapping[str, bool] | None = None) -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks: PrepareForCreate and
    PrepareForUpdate's field dropping under the node's gates, then the validation."""
    coordinated = bool((gates or {}).get(GATE, False))

    def on_create(obj: dict[str, Any]) -> dict[str, Any]:
        spec = obj.get("spec")
        if not coordinated and isinstance(spec, dict):
            spec.pop("strategy", None)
            spec.pop("preferredHolder", None)
        return obj

    def on_update(obj: dict[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
        spec, stored = obj.get("spec"), _spec(old)
        if not coordinated and isinstance(spec, dict):
            for attr in ("strategy", "preferredHolder"):
                if stored.get(attr) is None:
                    spec.pop(attr, None)
        return obj

    return {"Lease": {"default": on_create, "default_update": on_update, "validate": validate_lease}}
