"""Protobuf <-> model conversion for the device plugin API (v1beta1), at the edge only.

Everything the manager, state and checkpoint hold is a devices.model dataclass; this is
the one place that knows the generated message classes. The fake device plugin uses the
reverse direction (model -> message) from here as well, so both sides agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2
from nodeagent.devices.model import ContainerAllocation, Device, DeviceSpec, Mount, PluginOptions


def options_from_pb(msg: api_pb2.DevicePluginOptions) -> PluginOptions:
    return PluginOptions(
        pre_start_required=msg.pre_start_required,
        get_preferred_allocation_available=msg.get_preferred_allocation_available,
    )


def options_to_pb(opts: PluginOptions) -> api_pb2.DevicePluginOptions:
    return api_pb2.DevicePluginOptions(
        pre_start_required=opts.pre_start_required,
        get_preferred_allocation_available=opts.get_preferred_allocation_available,
    )


def device_from_pb(msg: api_pb2.Device) -> Device:
    numa = tuple(sorted({int(n.ID) for n in msg.topology.nodes})) if msg.HasField("topology") else ()
    return Device(id=msg.ID, health=msg.health, numa_nodes=numa)


def devices_from_pb(msg: api_pb2.ListAndWatchResponse) -> list[Device]:
    return [device_from_pb(d) for d in msg.devices]


def device_to_pb(dev: Device) -> api_pb2.Device:
    msg = api_pb2.Device(ID=dev.id, health=dev.health)
    if dev.numa_nodes:
        msg.topology.nodes.extend(api_pb2.NUMANode(ID=n) for n in dev.numa_nodes)
    return msg


def devices_to_pb(devices: Sequence[Device]) -> api_pb2.ListAndWatchResponse:
    return api_pb2.ListAndWatchResponse(devices=[device_to_pb(d) for d in devices])


def allocation_from_pb(msg: api_pb2.ContainerAllocateResponse) -> ContainerAllocation:
    return ContainerAllocation(
        envs=dict(msg.envs),
        mounts=tuple(Mount(m.container_path, m.host_path, m.read_only) for m in msg.mounts),
        devices=tuple(DeviceSpec(d.container_path, d.host_path, d.permissions) for d in msg.devices),
        annotations=dict(msg.annotations),
        cdi_devices=tuple(c.name for c in msg.cdi_devices),
    )


def allocation_to_pb(alloc: ContainerAllocation) -> api_pb2.ContainerAllocateResponse:
    return api_pb2.ContainerAllocateResponse(
        envs=dict(alloc.envs),
        mounts=[
            api_pb2.Mount(container_path=m.container_path, host_path=m.host_path, read_only=m.read_only)
            for m in alloc.mounts
        ],
        devices=[
            api_pb2.DeviceSpec(container_path=d.container_path, host_path=d.host_path,
                               permissions=d.permissions)
            for d in alloc.devices
        ],
        annotations=dict(alloc.annotations),
        cdi_devices=[api_pb2.CDIDevice(name=n) for n in alloc.cdi_devices],
    )
