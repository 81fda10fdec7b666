"""The tier's normalisation without a node: what each node's objects got by chance (pod uids, claims
generated from templates, claim uids) is mapped to the same role on both sides, before lists are
sorted by content, so the comparison sees what each node did with the same object."""

from __future__ import annotations

from typing import Any

from tests.kubelet_tier import compare


def _side(pod_uid: str, claim: str, claim_uid: str, shared_uid: str) -> tuple[list[Any], list[Any]]:
    pods = [{"metadata": {"name": "dra", "uid": pod_uid},
             "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim}]}}]
    claims = [
        {"metadata": {"name": claim, "uid": claim_uid,
                      "annotations": {compare.POD_CLAIM_ANNOTATION: "gpu"},
                      "ownerReferences": [{"kind": "Pod", "name": "dra", "uid": pod_uid, "controller": True}]}},
        {"metadata": {"name": "shared", "uid": shared_uid}},
    ]
    return pods, claims


def test_generated_claims_and_uids_map_to_their_role() -> None:
    kubelet = compare.roles(*_side("p-1", "dra-gpu-469lz", "u-1", "s-1"))
    nodeagent = compare.roles(*_side("p-2", "dra-gpu-ngs6z", "u-2", "s-2"))
    assert kubelet == {"p-1": "POD_UID(dra)", "dra-gpu-469lz": "CLAIM(dra/gpu)", "u-1": "CLAIM_UID(dra/gpu)",
                       "s-1": "CLAIM_UID(shared)"}
    assert set(nodeagent.values()) == set(kubelet.values())
    names = compare.Names({"ns-k": "NAMESPACE", "ns-n": "NAMESPACE"})
    names.add(kubelet)
    names.add(nodeagent)
    cdi = "gpu.example.com/gpu=u-1-gpu-0"
    assert names({"PodUIDs": {"p-1": {}}, "cdi": cdi}) == {
        "PodUIDs": {"POD_UID(dra)": {}}, "cdi": "gpu.example.com/gpu=CLAIM_UID(dra/gpu)-gpu-0"}
    assert names.text("gpu.example.com/gpu=u-2-gpu-0") == "gpu.example.com/gpu=CLAIM_UID(dra/gpu)-gpu-0"


def test_an_unowned_claim_keeps_its_name() -> None:
    """A claim the scenario made by name is the same on both nodes: only its uid is mapped; a claim
    annotated but not controlled by a pod is not taken for a generated one."""
    claims = [{"metadata": {"name": "x", "uid": "u", "annotations": {compare.POD_CLAIM_ANNOTATION: "gpu"}}}]
    assert compare.roles([], claims) == {"u": "CLAIM_UID(x)"}


def test_lists_are_sorted_after_mapping() -> None:
    """pod-resources' dynamic resources are sorted by content, and the generated claim names in them
    differ per node: sorted before the names are mapped, the same two claims come out swapped."""
    def answer(ns: str, first: str, second: str) -> dict[str, Any]:
        return {"pod_resources": [{"name": "p", "namespace": ns, "containers": [
            {"name": "c", "dynamic_resources": [{"claim_name": first}, {"claim_name": second}]}]}]}
    names = compare.Names({"ns-k": "NAMESPACE", "ns-n": "NAMESPACE", "z-a": "CLAIM(p/a)", "a-b": "CLAIM(p/b)",
                           "a-a": "CLAIM(p/a)", "z-b": "CLAIM(p/b)"})
    kubelet, nodeagent = answer("ns-k", "z-a", "a-b"), answer("ns-n", "a-a", "z-b")
    assert compare.podresources(names(kubelet), ["NAMESPACE"]) == compare.podresources(names(nodeagent), ["NAMESPACE"])
    assert names(compare.podresources(kubelet, ["ns-k"])) != names(compare.podresources(nodeagent, ["ns-n"]))


def test_device_health_compared_in_id_order() -> None:
    """The kubelet lists a container's devices in allocatedResourcesStatus in Go map order."""
    def status(ids: list[str]) -> dict[str, Any]:
        return {"containerStatuses": [{"name": "main", "allocatedResourcesStatus": [
            {"name": "example.com/gpu", "resources": [
                {"resourceID": i, "health": "Unhealthy" if i == "gpu-1" else "Healthy"} for i in ids]}]}]}

    kubelet = compare.health_sorted(status(["gpu-3", "gpu-0", "gpu-2", "gpu-1"]))
    nodeagent = compare.health_sorted(status(["gpu-0", "gpu-1", "gpu-2", "gpu-3"]))
    assert compare.diff(kubelet, nodeagent, "pods") == []
    moved = compare.health_sorted(status(["gpu-0", "gpu-1", "gpu-2", "gpu-3"]))
    moved["containerStatuses"][0]["allocatedResourcesStatus"][0]["resources"][1]["health"] = "Healthy"
    assert [d.path for d in compare.diff(kubelet, moved, "pods")] == [
        "pods.containerStatuses.main.allocatedResourcesStatus.example.com/gpu.resources[1].health"]


def test_stream_resends_are_left_out() -> None:
    """A plugin's stream message equal to the one before it (before the scenario too) is a resend on
    the plugin's own timer; a change, an open and an end still count."""
    from tests.kubelet_tier.tier import normalise_calls

    method = "/v1.DRAResourceHealth/NodeWatchResources"

    def message(seq: int, health: str) -> dict[str, Any]:  # the driver stamps every send
        return {"seq": seq, "method": method, "stream": "message",
                "response": {"devices": [{"device": {"device_name": "gpu-0"}, "health": health,
                                          "last_updated_time": 1796000000 + seq}]}}

    before = [{"seq": 1, "method": method, "stream": "open", "request": {}}, message(2, "HEALTHY")]
    assert normalise_calls([message(3, "HEALTHY")], before)["streams"] == {}
    changed = normalise_calls([message(3, "HEALTHY"), message(4, "UNHEALTHY"), message(5, "UNHEALTHY"),
                               {"seq": 6, "method": method, "stream": "end"}], before)["streams"]
    assert [e["event"] for e in changed["NodeWatchResources"]] == ["message", "end"]
    assert changed["NodeWatchResources"][0]["response"]["devices"][0]["health"] == "UNHEALTHY"
    assert normalise_calls([message(3, "HEALTHY")])["streams"]["NodeWatchResources"][0]["event"] == "message"
