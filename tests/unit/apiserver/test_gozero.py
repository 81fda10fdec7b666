"""Built-in objects stored as kube-apiserver's Go types write them (apply/gozero.py): the always-written
fields filled in (a plain struct whole, a non-omitempty field's zero), a null for a struct made its zero,
the input never mutated and returned as is when nothing is missing."""

from __future__ import annotations

import copy
from typing import Any

from nodeagent.apiserver.apply.gozero import ZeroFiller
from nodeagent.apiserver.schema.builtin import builtin_definitions

FILLER = ZeroFiller(builtin_definitions())


def test_pod_status_parts_are_filled_as_go_writes_them() -> None:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                           "spec": {"containers": [{"name": "c", "image": "x"}]},
                           "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                      "containerStatuses": [{"name": "c", "ready": True, "state": None}]}}
    before = copy.deepcopy(pod)
    out = FILLER.fill("io.k8s.api.core.v1.Pod", pod)
    assert pod == before  # not mutated
    [cond] = out["status"]["conditions"]
    assert cond == {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": None}
    [cs] = out["status"]["containerStatuses"]
    assert cs["lastState"] == {} and cs["state"] == {} and cs["image"] == "" and cs["restartCount"] == 0
    assert out["spec"]["containers"][0]["resources"] == {}
    assert FILLER.fill("io.k8s.api.core.v1.Pod", out) is out  # complete: the same object back


def test_plain_structs_are_filled_whole() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"nodeInfo": {}}}
    out = FILLER.fill("io.k8s.api.core.v1.Node", node)
    assert out["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert out["status"]["nodeInfo"]["bootID"] == "" and out["status"]["nodeInfo"]["kubeProxyVersion"] == ""


def test_a_complete_object_comes_back_as_it_is() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]}, "data": {"a": "b"}}
    assert FILLER.fill("io.k8s.api.core.v1.ConfigMap", cm) is cm
