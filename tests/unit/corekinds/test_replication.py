"""ReplicationControllers through the registry: the selector and labels defaulted from the
template, one replica, the zero status, the scale subresource (a map selector as Scale's
status.selector), the status counters and ValidateReplicationController's messages."""

from __future__ import annotations

from typing import Any

from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import MERGE_PATCH, Registry
from tests.unit.corekinds.conftest import failure, res

RC = res("replicationcontrollers")
W = WriteOptions()


def rc(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": labels if labels is not None else {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"template": template, **spec}}


def test_defaults_and_status(reg: Registry) -> None:
    made = reg.create(RC, "default", rc("web"), W).object
    assert made["spec"]["selector"] == {"app": "web"} and made["metadata"]["labels"] == {"app": "web"}
    assert made["spec"]["replicas"] == 1 and made["status"] == {"replicas": 0}
    pod = made["spec"]["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["schedulerName"]) == ("Always", "ClusterFirst",
                                                                             "default-scheduler")
    err = failure(lambda: reg.patch(RC, "default", "web", "status", MERGE_PATCH,
                                    {"status": {"replicas": 1, "readyReplicas": 2}}, W))
    assert err.message == ('ReplicationController "web" is invalid: status.readyReplicas: Invalid value: 2: cannot '
                           "be greater than status.replicas")


def test_scale_subresource(reg: Registry) -> None:
    reg.create(RC, "default", rc("sc", labels={"app": "sc", "tier": "x"}), W)
    scale = reg.get_scale(RC, "default", "sc")
    assert scale["spec"] == {"replicas": 1} and scale["status"] == {"replicas": 0, "selector": "app=sc,tier=x"}
    scaled = reg.patch_scale(RC, "default", "sc", MERGE_PATCH, {"spec": {"replicas": 4}}, W)
    assert scaled["spec"] == {"replicas": 4}
    assert reg.get(RC, "default", "sc")["spec"]["replicas"] == 4


def test_validation_messages(reg: Registry) -> None:
    cases = [
        (rc("nosel", labels={}), "spec.selector: Required value"),
        (rc("neg", replicas=-1), "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        (rc("mismatch", selector={"app": "other"}), 'spec.template.metadata.labels: Invalid value: '
         '{"app":"mismatch"}: `selector` does not match template `labels`'),
    ]
    for body, message in cases:
        err = failure(lambda body=body: reg.create(RC, "default", body, W))  # type: ignore[misc]
        name = body["metadata"]["name"]
        assert (err.code, err.message) == (422, f'ReplicationController "{name}" is invalid: {message}'), name
