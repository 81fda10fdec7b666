"""A pod's status on one of the control plane's virtual nodes is what the process's own node writes for
the same pod (issue 21): the same fields, container states, conditions and resources, running and
finished. Before, a virtual node wrote a few fields by hand (no qosClass, no init container statuses,
no imageID, no PodReadyToStartContainers, no lastState...), so a client saw two kinds of node."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.integration.daemon_helpers import daemon_in_temp_dir, virtual_node_agent, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

VIRTUAL = "parity-virtual"
TIMES = {"startTime", "startedAt", "finishedAt", "lastTransitionTime", "lastProbeTime"}


def pod(name: str, node: str, finish_after: str | None = None) -> dict[str, Any]:
    annotations = {"nodeagent.dev/finish-after-seconds": finish_after} if finish_after else {}
    resources = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations},
            "spec": {"nodeName": node, "restartPolicy": "Never",
                     "initContainers": [{"name": "setup", "image": "busybox", "resources": resources},
                                        {"name": "sidecar", "image": "envoy", "restartPolicy": "Always",
                                         "resources": resources}],
                     "containers": [{"name": "app", "image": "nginx", "resources": resources},
                                    {"name": "helper", "image": "busybox"}]}}


def normalised(status: dict[str, Any]) -> Any:
    """The status without what differs by construction: times, and the node's own addresses."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in sorted(value.items()) if k not in TIMES}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value
    out = walk(status)
    for key in ("hostIP", "hostIPs"):
        out[key] = "set" if key in out else "absent"
    return out


def test_a_virtual_nodes_pod_status_is_the_nodes(tmp_path: Any) -> None:
    with daemon_in_temp_dir("na-par-", agent=virtual_node_agent(VIRTUAL, {})) as d:
        main = next(n["metadata"]["name"] for n in d.kubectl_json("get", "nodes")["items"]
                    if n["metadata"]["name"] != VIRTUAL)
        for name, node, finish in (("on-main", main, None), ("on-virtual", VIRTUAL, None),
                                   ("done-main", main, "1"), ("done-virtual", VIRTUAL, "1")):
            d.kubectl("create", "-f", "-", input=json.dumps(pod(name, node, finish)))

        def status(name: str) -> dict[str, Any]:
            return dict(d.kubectl_json("get", "pod", name)["status"])

        def ready(name: str) -> bool:
            return any(c["type"] == "Ready" and c["status"] == "True" for c in status(name).get("conditions", []))

        wait_for(lambda: ready("on-main") and ready("on-virtual"), timeout=30, what="both pods Ready")
        assert normalised(status("on-virtual")) == normalised(status("on-main"))
        wait_for(lambda: status("done-main").get("phase") == status("done-virtual").get("phase") == "Succeeded",
                 timeout=30, what="both finishing pods Succeeded")
        assert normalised(status("done-virtual")) == normalised(status("done-main"))
