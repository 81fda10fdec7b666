"""ResourceQuota as kube-apiserver's admission enforces and kube-controller-manager's resourcequota controller
accounts it: one case list, checked against the embedded control plane (always) and the real one (v1.37.2,
controlPlane.kubernetes, the kube-apiserver tier). A quota's status after it is created, after creates (charged
by the admission) and after a pod's deletion (given back by the controller), and the refusals' 403 texts: a pod
without the cpu request the quota tracks, creates past pods, requests.cpu and services, and one past pods and
requests.cpu at once. Several failing resources are safe to compare: upstream's quota.LessThanOrEqual lists them
in Go's random map order, but the text is printed from maps by prettyPrint, which sorts their names
(apiserver/pkg/admission/plugin/resourcequota/controller.go), as "must specify" sorts its set.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import wait_for
from tests.integration.test_real_control_plane import NODE, RealCP, node_ready

pytestmark = [pytest.mark.integration]

NS = "rq-twin"
HARD = {"configmaps": "3", "pods": "2", "requests.cpu": "500m", "services": "1"}


def _pod(name: str, cpu: str | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "pause"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [container], "tolerations": [{"operator": "Exists"}]}}


def _service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
            "spec": {"ports": [{"port": 80}]}}


def _create(cp: RealCP, obj: dict[str, Any]) -> str:
    """"" when created, else kubectl's `Error from server ...` line."""
    try:
        cp.kubectl("create", "-f", "-", input=yaml.safe_dump(obj))
    except AssertionError as err:
        text = str(err)
        return text[text.index("Error from server"):].strip() if "Error from server" in text else text
    return ""


def _status(cp: RealCP) -> dict[str, Any]:
    return dict(cp.get("resourcequota", "q", "-n", NS).get("status") or {})


def _wait_used(cp: RealCP, used: dict[str, str]) -> None:
    wait_for(lambda: _status(cp) == {"hard": HARD, "used": used} or None, timeout=90,
             what=f"quota status used={used} (last {_status(cp)})")


def _forbidden(what: str, text: str) -> str:
    return f'Error from server (Forbidden): error when creating "STDIN": {what} is forbidden: {text}'


@pytest.mark.timeout(600)
def test_resourcequota_is_kube_apiservers_and_controller_managers(realcp_twin: tuple[RealCP, bool]) -> None:
    cp, _ = realcp_twin
    cp.start()
    wait_for(lambda: node_ready(cp, NODE), timeout=120, what="the node Ready")
    cp.kubectl("create", "namespace", NS)
    wait_for(lambda: cp.kubectl("get", "configmap", "kube-root-ca.crt", "-n", NS, check=False) or None,
             timeout=60, what="the namespace's kube-root-ca.crt")
    cp.kubectl("create", "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": NS},
         "spec": {"hard": HARD}}))
    _wait_used(cp, {"configmaps": "1", "pods": "0", "requests.cpu": "0", "services": "0"})

    refusals = {
        "nocpu": _create(cp, _pod("nocpu", None)),
        "a": _create(cp, _pod("a", "300m")),
        "b-big": _create(cp, _pod("b-big", "300m")),
        "b": _create(cp, _pod("b", "100m")),
        "c": _create(cp, _pod("c", "50m")),
        "c-big": _create(cp, _pod("c-big", "200m")),
        "s1": _create(cp, _service("s1")),
        "s2": _create(cp, _service("s2")),
    }
    assert refusals == {
        "nocpu": _forbidden('pods "nocpu"', "failed quota: q: must specify requests.cpu for: c"),
        "a": "",
        "b-big": _forbidden('pods "b-big"', "exceeded quota: q, requested: requests.cpu=300m, "
                            "used: requests.cpu=300m, limited: requests.cpu=500m"),
        "b": "",
        "c": _forbidden('pods "c"', "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"),
        "c-big": _forbidden('pods "c-big"', "exceeded quota: q, requested: pods=1,requests.cpu=200m, "
                            "used: pods=2,requests.cpu=400m, limited: pods=2,requests.cpu=500m"),
        "s1": "",
        "s2": _forbidden('services "s2"', "exceeded quota: q, requested: services=1, used: services=1, "
                         "limited: services=1"),
    }
    _wait_used(cp, {"configmaps": "1", "pods": "2", "requests.cpu": "400m", "services": "1"})
    cp.kubectl("delete", "pod", "a", "-n", NS, "--grace-period=0", "--force", "--wait=true")
    cp.kubectl("delete", "service", "s1", "-n", NS)
    _wait_used(cp, {"configmaps": "1", "pods": "1", "requests.cpu": "100m", "services": "0"})
    assert _create(cp, _pod("d", "400m")) == ""
    _wait_used(cp, {"configmaps": "1", "pods": "2", "requests.cpu": "500m", "services": "0"})
