"""The device-plugin API (v1beta1) as the node's device manager models it, and its wire conversion.

A device plugin encodes with the same code the node decodes with, so the example plugin and the
node cannot disagree on a field (options, devices with their topology, allocations).
"""

from __future__ import annotations

from nodeagent.devices.convert import allocation_to_pb, devices_to_pb, options_to_pb
from nodeagent.devices.model import (
    HEALTHY,
    UNHEALTHY,
    VERSION,
    ContainerAllocation,
    Device,
    DeviceSpec,
    Mount,
    PluginOptions,
    is_extended_resource_name,
)

__all__ = [
    "HEALTHY",
    "UNHEALTHY",
    "VERSION",
    "ContainerAllocation",
    "Device",
    "DeviceSpec",
    "Mount",
    "PluginOptions",
    "allocation_to_pb",
    "devices_to_pb",
    "is_extended_resource_name",
    "options_to_pb",
]
