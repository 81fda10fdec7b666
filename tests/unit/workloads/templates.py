"""Pod templates for the pod-template-hash tests: kubectl's and Helm charts' shapes, and the Go
value edge cases (empty vs absent lists, pointers to zero values, int-or-string, quantities)."""

from __future__ import annotations

from typing import Any

NGINX: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "resources": {},
                             "terminationMessagePath": "/dev/termination-log",
                             "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
             "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
             "securityContext": {}, "schedulerName": "default-scheduler"},
}

TEMPLATES: dict[str, tuple[dict[str, Any], int | None]] = {
    "empty": ({}, None),
    "kubectl-create-deployment": (NGINX, None),
    "collision-count": (NGINX, 3),
    "collision-count-zero": (NGINX, 0),
    "rich": ({
        "metadata": {"labels": {"app": "x", "tier": "b"}, "annotations": {"a": "1"}},
        "spec": {
            "containers": [{
                "name": "c", "image": "busybox", "command": ["sh", "-c"], "args": ["sleep 1"],
                "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                "env": [{"name": "A", "value": "b"},
                        {"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}},
                "readinessProbe": {"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "periodSeconds": 5},
                "livenessProbe": {"tcpSocket": {"port": "http"}},
                "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": True}],
                "securityContext": {"privileged": False, "runAsUser": 0},
            }],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "h", "hostPath": {"path": "/var/run", "type": "Directory"}}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}},
            "serviceAccountName": "sa", "automountServiceAccountToken": False, "hostNetwork": True,
            "priorityClassName": "system-node-critical", "priority": 2000001000,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
        },
    }, None),
    "empty-lists": ({"metadata": {"labels": {}}, "spec": {"containers": [], "volumes": [], "tolerations": []}}, None),
    # canonical forms (what kube-apiserver stores; the oracle's protobuf round trip rewrites others), the
    # last two beyond int64 precision (ParseQuantity's inf.Dec path)
    "quantities": ({"spec": {"containers": [{"name": "q", "resources": {"requests": {
        "a": "0", "b": "1500m", "c": "100m", "d": "2", "e": "1e3", "f": "12Ki", "g": "1k", "h": "5Mi",
        "i": "7G", "j": "+3", "k": "-2", "l": "1280Mi", "m": "100n", "n": "3E", "o": "512", "p": "333333334n",
        "q": "1234567890123456789", "r": "12345678901234567890123",
    }}}]}}, None),
    # valid for a Deployment (the real-controller test creates it): the int64 and inf.Dec paths again
    "container-resources": ({"metadata": {"labels": {"app": "r"}}, "spec": {"containers": [{
        "name": "r", "image": "pause", "resources": {
            "requests": {"cpu": "1500m", "memory": "1280Mi", "ephemeral-storage": "1234567890123456789"},
            "limits": {"cpu": "2", "memory": "3Gi", "ephemeral-storage": "12345678901234567890123"}}}]}}, None),
}
