"""allocatedResourcesStatus of a device-plugin resource the container asks for with a limit only.

kube-apiserver defaults such a container's requests from its limits before validating, so the status
names a requested resource; the upstream sample device plugin's pods (limits only) stayed Pending
while the embedded API server refused their status (found by the real-clients tier).
"""

from __future__ import annotations

from typing import Any

from nodeagent.objects.pod.status_checks import REQUEST_NAME_TEXT, pod_status_errors


def pod(resources: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": resources}]},
            "status": {"containerStatuses": [{"name": "c", "allocatedResourcesStatus": [
                {"name": "example.com/resource", "resources": [{"resourceID": "Dev-1", "health": "Healthy"}]}]}]}}


def test_a_resource_with_only_a_limit_is_requested() -> None:
    assert pod_status_errors(pod({"limits": {"example.com/resource": "2"}})) == []


def test_a_resource_neither_requested_nor_limited_is_refused() -> None:
    (err,) = pod_status_errors(pod({"limits": {"example.com/other": "1"}}))
    assert REQUEST_NAME_TEXT in str(err)
