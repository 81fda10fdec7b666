"""The generated modules import together and carry upstream's method paths."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO, SHARED

PATHS = {
    "nodeagent.apis.deviceplugin.v1beta1.api_pb2": [
        "/v1beta1.Registration/Register",
        "/v1beta1.DevicePlugin/GetDevicePluginOptions",
        "/v1beta1.DevicePlugin/ListAndWatch",
        "/v1beta1.DevicePlugin/GetPreferredAllocation",
        "/v1beta1.DevicePlugin/Allocate",
        "/v1beta1.DevicePlugin/PreStartContainer",
    ],
    "nodeagent.apis.dra.v1.api_pb2": [
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
    ],
    "nodeagent.apis.dra.v1beta1.api_pb2": [
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources",
    ],
    "nodeagent.apis.dra_health.v1.api_pb2": ["/v1.DRAResourceHealth/NodeWatchResources"],
    "nodeagent.apis.dra_health.v1beta1.api_pb2": ["/v1beta1.DRAResourceHealth/NodeWatchResources"],
    "nodeagent.apis.dra_health.v1alpha1.api_pb2": ["/v1alpha1.DRAResourceHealth/NodeWatchResources"],
    "nodeagent.apis.pluginregistration.v1.api_pb2": [
        "/pluginregistration.Registration/GetInfo",
        "/pluginregistration.Registration/NotifyRegistrationStatus",
    ],
    "nodeagent.apis.podresources.v1.api_pb2": [
        "/v1.PodResourcesLister/List",
        "/v1.PodResourcesLister/GetAllocatableResources",
        "/v1.PodResourcesLister/Get",
    ],
    "nodeagent.apis.podresources.v1alpha1.api_pb2": ["/v1alpha1.PodResourcesLister/List"],
    "nodeagent.apis.admin.v1.admin_pb2": [
        "/nodeagent.v1.Admin/Describe",
        "/nodeagent.v1.Admin/GetNode",
        "/nodeagent.v1.Admin/SetDeviceHealth",
    ],
}


@pytest.mark.parametrize("module", sorted(PATHS))
def test_method_paths(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    importlib.import_module(module.replace("_pb2", "_pb2_grpc"))
    found = {
        f"/{svc.full_name}/{m.name}"
        for svc in mod.DESCRIPTOR.services_by_name.values()
        for m in svc.methods
    }
    assert set(PATHS[module]) <= found


def test_wire_names_match_spec() -> None:
    tool = SHARED / "tools" / "check_protos.py"
    if not tool.exists():
        pytest.skip(f"{tool} not present")
    out = subprocess.run(
        [sys.executable, str(tool), str(REPO / "protos")], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert ", 0 problems" in out.stdout
