"""Manifests shared by the DRA end-to-end tests: the fake driver's DeviceClass, a one-GPU
ResourceClaimTemplate (plain or with firstAvailable alternatives) and a pod using it."""

from __future__ import annotations

# API paths the tests read through Daemon.api_get (fast enough to poll against a clock)
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
TRAINER = "/api/v1/namespaces/default/pods/trainer"

KUBELET = {"kubeReserved": {"cpu": "500m", "memory": "1Gi"}}
DRIVER = "gpu.example.com"

DEVICE_CLASS = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {DRIVER}}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{DRIVER}"'}}
"""

_EXACTLY = f"""
      - name: gpu
        exactly: {{deviceClassName: {DRIVER}}}
"""

_FIRST_AVAILABLE = f"""
      - name: gpu
        firstAvailable:
        - name: big
          deviceClassName: {DRIVER}
          selectors:
          - cel: {{expression: 'device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0'}}
        - name: small
          deviceClassName: {DRIVER}
"""


def class_and_template(first_available: bool = False) -> str:
    """The DeviceClass plus ResourceClaimTemplate `one-gpu` with one request named gpu."""
    requests = _FIRST_AVAILABLE if first_available else _EXACTLY
    return DEVICE_CLASS + f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-gpu}}
spec:
  spec:
    devices:
      requests:{requests}"""


POD = """
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: one-gpu}
  containers:
  - name: main
    image: pause
    resources:
      claims: [{name: gpu}]
"""
