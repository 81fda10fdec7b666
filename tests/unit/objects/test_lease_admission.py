"""Lease admission as kube-apiserver's lease strategy (v1.37.2): ValidateLeaseSpec's errors, every
one listed, and CoordinatedLeaderElection's fields dropped while the gate is off (kept on an update
of a lease that already has them). Before, any duration or transition count was stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from tests.unit.objects.stores import admission_store


def _lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_every_spec_error_listed(tmp_path: Path) -> None:
    with admission_store(tmp_path / "o.db", {}) as store, pytest.raises(ValidationError) as err:
        store.create(_lease("bad", leaseDurationSeconds=0, leaseTransitions=-1, holderIdentity="n"))
    assert str(err.value).endswith(
        '"bad" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, '
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]")


def test_a_heartbeat_lease_is_admitted_unchanged(tmp_path: Path) -> None:
    with admission_store(tmp_path / "o.db", {}) as store:
        got = store.create(_lease("node-a", holderIdentity="node-a", leaseDurationSeconds=40,
                                  renewTime="2026-11-29T19:00:00.000000Z"))
    assert got["spec"] == {"holderIdentity": "node-a", "leaseDurationSeconds": 40,
                           "renewTime": "2026-11-29T19:00:00.000000Z"}


def test_gate_off_drops_strategy_and_preferred_holder_on_create(tmp_path: Path) -> None:
    with admission_store(tmp_path / "o.db", {}) as store:
        got = store.create(_lease("l", strategy="Bad", preferredHolder="x", holderIdentity="a"))
    assert got["spec"] == {"holderIdentity": "a"}


def test_gate_on_validates_strategy_and_preferred_holder(tmp_path: Path) -> None:
    on = {"CoordinatedLeaderElection": True}
    with admission_store(tmp_path / "o.db", on) as store:
        with pytest.raises(ValidationError) as err:
            store.create(_lease("l", strategy="Bad"))
        assert 'spec.strategy.strategy: Unsupported value: "Bad": supported values: "OldestEmulationVersion"' in str(
            err.value)
        with pytest.raises(ValidationError) as err:
            store.create(_lease("m", preferredHolder="x"))
        assert "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined" in str(err.value)
        with pytest.raises(ValidationError) as err:
            store.create(_lease("n", strategy="example.com/-bad-"))
        assert "spec.strategy.strategy: Invalid value: " in str(err.value)
        ok = store.create(_lease("o", strategy="example.com/mine", preferredHolder="x"))
        assert ok["spec"] == {"strategy": "example.com/mine", "preferredHolder": "x"}


def test_gate_off_keeps_fields_an_update_finds_stored(tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    with admission_store(db, {"CoordinatedLeaderElection": True}) as store:
        stored = store.create(_lease("kept", strategy="OldestEmulationVersion", preferredHolder="x"))
        plain = store.create(_lease("plain", holderIdentity="a"))
    with admission_store(db, {}) as store:
        stored["spec"]["holderIdentity"] = "b"
        kept = store.update(stored)
        assert kept["spec"] == {"strategy": "OldestEmulationVersion", "preferredHolder": "x", "holderIdentity": "b"}
        plain["spec"]["strategy"] = "OldestEmulationVersion"
        assert "strategy" not in store.update(plain)["spec"]
