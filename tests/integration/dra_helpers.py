"""Manifests shared by the DRA end-to-end tests: the fake driver's DeviceClass, a one-GPU
ResourceClaimTemplate (plain or with firstAvailable alternatives) and a pod using it."""

from __future__ import annotations

# API paths the tests read through Daemon.api_get (fast enough to poll against a clock)
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
TRAINER = "/api/v1/namespaces/default/pods/trainer"

KUBELET = {"kubeReserved": {"cpu": "500m", "memory": "1Gi"}}
DRIVER = "gpu.example.com"

def device_class(driver: str = DRIVER) -> str:
    """The DeviceClass named after the driver, selecting all of its devices."""
    return f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {driver}}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{driver}"'}}
"""


def _requests(driver: str, first_available: bool) -> str:
    if not first_available:
        return f"""
      - name: gpu
        exactly: {{deviceClassName: {driver}}}
"""
    return f"""
      - name: gpu
        firstAvailable:
        - name: big
          deviceClassName: {driver}
          selectors:
          - cel: {{expression: 'device.capacity["{driver}"].memory.compareTo(quantity("80Gi")) >= 0'}}
        - name: small
          deviceClassName: {driver}
"""


def class_and_template(first_available: bool = False, driver: str = DRIVER) -> str:
    """The driver's DeviceClass plus ResourceClaimTemplate `one-gpu` with one request named gpu."""
    return device_class(driver) + f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-gpu}}
spec:
  spec:
    devices:
      requests:{_requests(driver, first_available)}"""


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
