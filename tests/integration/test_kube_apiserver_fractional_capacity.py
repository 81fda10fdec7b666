"""ResourceSlice request policies with fractional quantities: nodeagent's admission answers as the real
v1.37.2 kube-apiserver does, with DRAFractionalCapacityRange off (1.37's default) and on
(`--feature-gates=DRAFractionalCapacityRange=true`), and a stored slice that uses a gated field
keeps it on an update with that gate off.

Each slice is created with `dryRun=All` on the real server and validated by nodeagent's admission
with the same gates; the outcome (accepted, or the error's message, the object name left out)
must be equal. Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1, the cached
fixture binary), skipped with its reason otherwise.
"""

from __future__ import annotations

import json
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource.validation import DEFAULT_GATES, validate
from tests.integration.kubeapiserver import running_kube_apiserver

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

GATE = "DRAFractionalCapacityRange"


def _slice(i: int, capacity: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"frac-{i}"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "d", "allowMultipleAllocations": True,
                                  "capacity": {"cores": {"value": capacity, "requestPolicy": policy}}}]}}


def rng(default: str, lo: str, hi: str | None = None, step: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"min": lo}
    if hi is not None:
        out["max"] = hi
    if step is not None:
        out["step"] = step
    return {"default": default, "validRange": out}


POLICIES: list[tuple[str, dict[str, Any]]] = [
    ("1", rng("200m", "200m", "1", "100m")),  # a fractional grid: valid either way
    ("1", rng("250m", "200m", "1", "100m")),  # default off the grid: only the milli path sees it
    ("2", rng("1500m", "500m", "2", "1")),  # fractional default on a whole grid
    ("1", rng("500u", "0", "1", "1m")),  # not a whole number of thousandths
    ("1", rng("200m", "200m", "1", "1u")),
    ("10", rng("1", "1", "10", "3")),  # max off a whole grid
    ("1", rng("2", "1")),  # default above the capacity... and below min
    ("4", rng("1", "2", "3")),  # default below min
    ("4", rng("4", "1", "3")),  # default above max
    ("4", rng("2", "3", "1")),  # min above max
    ("1", rng("500m", "500m", None, "600m")),  # one step past the capacity
    ("3", {"default": "1", "validValues": ["500m", "1", "2"]}),  # 500m and 1 are one key with the gate off
    ("3", {"default": "1", "validValues": ["1", "1000m"]}),
    ("3", {"default": "1500m", "validValues": ["1", "1500m", "2"]}),
    ("3", {"default": "1", "validValues": ["2", "1"]}),
]


def _answer_real(server: Any, obj: dict[str, Any]) -> str:
    try:
        server.post("/apis/resource.k8s.io/v1/resourceslices?dryRun=All", obj)
    except urllib.error.HTTPError as err:
        body = json.loads(err.read() or b"{}")
        return str(body.get("message", "")).split(" is invalid: ", 1)[-1]
    return "accepted"


def _answer_nodeagent(obj: dict[str, Any], gates: dict[str, bool]) -> str:
    try:
        validate("ResourceSlice", obj, gates=gates)
    except ValidationError as err:
        return str(err)
    return "accepted"


@pytest.mark.parametrize("enabled", [False, True], ids=["gate-off", "gate-on"])
def test_request_policy_answers_match_kube_apiserver(kube_apiserver_binary: Path, enabled: bool) -> None:
    gates = {**DEFAULT_GATES, GATE: enabled}
    args = [f"--feature-gates={GATE}=true"] if enabled else []
    with running_kube_apiserver(kube_apiserver_binary, extra_args=args) as server:
        real = [_answer_real(server, _slice(i, cap, pol)) for i, (cap, pol) in enumerate(POLICIES)]
    ours = [_answer_nodeagent(_slice(i, cap, pol), gates) for i, (cap, pol) in enumerate(POLICIES)]
    assert ours == real


RATCHET_GATES = ("DRANodeAllocatableResources", "DRAOptionalNodeOperations")


def _gated_slice() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "ratchet"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "skipNodeOperations": ["NodePrepareResources", "NodeUnprepareResources"],
                     "devices": [{"name": "d", "capacity": {"cores": {"value": "8"}},
                                  "nodeAllocatableResources": {
                                      "cpu": {"mapping": {"capacityKey": "cores", "capacityMultiplier": "1"}}}}]}}


def test_update_keeps_gated_fields_in_use_as_kube_apiserver(kube_apiserver_binary: Path, tmp_path: Path) -> None:
    """Stored with the alpha gates on, updated (a label) after a restart with them off: kube-apiserver
    keeps nodeAllocatableResources and skipNodeOperations (dropDisabled...Fields(new, old)); a new
    slice loses them. nodeagent's store, reopened with the gates off, answers the same."""
    from nodeagent.objects.kinds import admitted_kinds
    from nodeagent.store import ObjectStore
    from nodeagent.util.clock import RealClock

    on = [f"--feature-gates={','.join(f'{g}=true' for g in RATCHET_GATES)}"]
    path = "/apis/resource.k8s.io/v1/resourceslices"
    with running_kube_apiserver(kube_apiserver_binary, extra_args=on) as server:
        # the NodeDeclaredFeatures admission wants the slice's node, declaring the feature
        server.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        server.merge_patch("/api/v1/nodes/n1/status", {"status": {"declaredFeatures": [RATCHET_GATES[0]]}})
        server.post(path, _gated_slice())
        server.stop_apiserver()
        server.extra_args = []
        server.start_apiserver()
        real = server.merge_patch(f"{path}/ratchet", {"metadata": {"labels": {"touched": "yes"}}})
        fresh = _gated_slice()
        fresh["metadata"]["name"] = "fresh"
        real_fresh = server.post(path, fresh)
    db = tmp_path / "objects.db"
    store = ObjectStore(db, admitted_kinds({**DEFAULT_GATES, **dict.fromkeys(RATCHET_GATES, True)}), RealClock())
    stored = store.create(_gated_slice())
    store.close()
    store = ObjectStore(db, admitted_kinds(DEFAULT_GATES), RealClock())
    try:
        stored["metadata"]["labels"] = {"touched": "yes"}
        ours = store.update(stored)
        ours_fresh = store.create(fresh)
    finally:
        store.close()
    assert real["spec"]["skipNodeOperations"] and real["spec"]["devices"][0]["nodeAllocatableResources"]
    assert ours["spec"] == real["spec"]
    assert "skipNodeOperations" not in real_fresh["spec"]
    assert ours_fresh["spec"] == real_fresh["spec"]
