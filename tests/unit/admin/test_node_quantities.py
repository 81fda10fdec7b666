"""Node capacity and allocatable texts as the kubelet's Quantities print them.

Each expected text was printed by k8s.io/apimachinery v0.37.2's resource.Quantity, built the way
the kubelet builds the value (cadvisor.CapacityFromMachineInfo, EphemeralStorageCapacityFromFsInfo,
allocatable = capacity.Sub(reservation), which keeps capacity's Format).
"""

from __future__ import annotations

import pytest

from nodeagent.admin.backend import node_quantity


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        ("cpu", 8000, "8"),  # NewMilliQuantity(8000, DecimalSI)
        ("cpu", 7500, "7500m"),  # 8 minus kubeReserved 500m
        ("cpu", 1000000, "1k"),
        ("cpu", 1500500, "1500500m"),
        ("memory", 16709894144, "16318256Ki"),  # NewQuantity(MemTotal, BinarySI)
        ("memory", 16709894144 - (1 << 30) - 100 * (1 << 20), "15167280Ki"),
        ("memory", 1000, "1k"),  # BinarySI below 1024 prints as DecimalSI
        ("ephemeral-storage", 270553174016, "270553174016"),  # DecimalSI: bytes, not 264212084Ki
        ("ephemeral-storage", 270553174016 - 27055317804, "243497856212"),
        ("ephemeral-storage", 107374182400, "107374182400"),
        ("ephemeral-storage", 96636764000, "96636764k"),
        ("pods", 110, "110"),
        ("pods", 1000, "1k"),
        ("hugepages-2Mi", 8388608, "8Mi"),
        ("example.com/gpu", 4, "4"),
    ],
)
def test_node_quantities_print_as_the_kubelet(resource: str, value: int, text: str) -> None:
    assert node_quantity(resource, value) == text
