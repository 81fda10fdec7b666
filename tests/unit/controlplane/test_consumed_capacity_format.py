"""consumedCapacity is written as upstream writes it: Quantity.String() in the format of the
quantity the amount came from (the request, the policy default or validValues entry, the validRange
min, the capacity value), and BinarySI for a value the validRange step rounding built.

Values from upstream's consumable_capacity_test.go (testCalculateConsumedCapacity, integer cases),
formats from calculateConsumedCapacity / roundUpRange; string forms from apimachinery's quantity
tests (CanonicalizeBytes)."""

from __future__ import annotations

import pytest

from nodeagent.controlplane.allocator.consumable import consumed_amount, consumption
from nodeagent.controlplane.allocator.model import Device, RequestPolicy
from nodeagent.controlplane.convert import sharing as convert_sharing
from nodeagent.util import quantity


def _policy(default: str | None = None, values: tuple[str, ...] = (), lo: str | None = None,
            hi: str | None = None, step: str | None = None) -> RequestPolicy:
    def q(text: str | None) -> int | None:
        return None if text is None else quantity.amount(text)

    return RequestPolicy(default=q(default), valid_values=tuple(quantity.amount(v) for v in values),
                         min=q(lo), max=q(hi), step=q(step))


@pytest.mark.parametrize(("requested", "value", "policy", "want"), [
    # upstream: "empty" (no request, empty policy): the capacity value as it is
    (None, "1", _policy(), "1"),
    (None, "10Gi", None, "10Gi"),
    # "min in range" / "default in set": the default
    (None, "2", _policy(default="1", lo="1"), "1"),
    (None, "2", _policy(default="1", values=("1",)), "1"),
    (None, "10G", _policy(default="1Gi", lo="1G"), "1Gi"),
    # "more than min in range": the request as written
    ("2", "2", _policy(default="1", lo="1"), "2"),
    ("1500M", "10G", _policy(default="1G", lo="1G"), "1500M"),
    # "less than min in range": the min
    ("1", "2", _policy(default="1", lo="2"), "2"),
    ("1M", "10G", _policy(default="1Gi", lo="1Gi"), "1Gi"),
    # "with step (round up)" / "(no remaining)": built as BinarySI (small values print as DecimalSI)
    ("2", "3", _policy(default="1", lo="1", step="2"), "3"),
    ("2", "2", _policy(default="1", lo="1", step="1"), "2"),
    # "positive-binary-step-request-above-min-rounds-to-itself"
    ("3Gi", "3Gi", _policy(default="1Gi", lo="1Gi", step="1Gi"), "3Gi"),
    # a decimal request on a decimal step still comes back BinarySI
    ("3500M", "10G", _policy(default="1G", lo="1G", step="1G"), "3906250Ki"),
    ("6G", "10G", _policy(default="1G", lo="1G", step="1G"), "5859375Ki"),
    ("1500", "1M", _policy(default="1k", lo="1k", step="1k"), "2000"),  # not "2k": BinarySI
    # "valid value in set" / "set (round up)": the entry as written
    ("2", "3", _policy(default="1", values=("1", "2", "3")), "2"),
    ("2", "3", _policy(default="1", values=("1", "3")), "3"),
    ("3G", "16Gi", _policy(default="1Gi", values=("1Gi", "4Gi")), "4Gi"),
    # no policy: the request as written
    ("4G", "10G", None, "4G"),
    ("2e9", "10G", None, "2e9"),
])
def test_consumed_capacity_text(requested: str | None, value: str, policy: RequestPolicy | None, want: str) -> None:
    """Up to 1.36 (step_format False): a step-rounded value is BinarySI."""
    amount = consumed_amount(None if requested is None else quantity.amount(requested), quantity.amount(value),
                             policy, step_format=False)
    assert amount is not None
    assert convert_sharing.format_quantity(amount) == want


@pytest.mark.parametrize(("requested", "value", "policy", "want"), [
    # v1.37's roundUpRange: NewQuantity(min + step*n, validRange.Step.Format)
    ("3500M", "10G", _policy(default="1G", lo="1G", step="1G"), "4G"),
    ("6G", "10G", _policy(default="1G", lo="1G", step="1G"), "6G"),
    ("1500", "1M", _policy(default="1k", lo="1k", step="1k"), "2k"),
    ("3Gi", "3Gi", _policy(default="1Gi", lo="1Gi", step="1Gi"), "3Gi"),
    ("3G", "16Gi", _policy(default="1Gi", lo="1Gi", step="1Gi"), "3Gi"),
    # dra-example-driver's net profile: 100M min, 1M steps; the demo's 10G comes back as 10G
    ("10G", "100G", _policy(default="1G", lo="100M", hi="100G", step="1M"), "10G"),
    ("150500k", "100G", _policy(default="1G", lo="100M", hi="100G", step="1M"), "151M"),
    # below the min: the min as written, in both releases
    ("1M", "100G", _policy(default="1G", lo="100M", step="1M"), "100M"),
])
def test_consumed_capacity_text_137(requested: str, value: str, policy: RequestPolicy, want: str) -> None:
    amount = consumed_amount(quantity.amount(requested), quantity.amount(value), policy)
    assert amount is not None
    assert convert_sharing.format_quantity(amount) == want


@pytest.mark.parametrize(("requested", "policy"), [
    ("3", _policy(default="1", values=("1", "2"))),  # "larger than set": violates the policy
    ("61", _policy(default="10", lo="10", hi="60")),
])
def test_policy_violation_is_no_consumption(requested: str, policy: RequestPolicy) -> None:
    assert consumed_amount(quantity.amount(requested), 100, policy) is None


@pytest.mark.parametrize(("value", "fmt", "want"), [
    (0, quantity.BINARY_SI, "0"),
    (512, quantity.BINARY_SI, "512"),
    (1024, quantity.BINARY_SI, "1Ki"),
    (1536 * 2**20, quantity.BINARY_SI, "1536Mi"),
    (4_000_000_000, quantity.BINARY_SI, "3906250Ki"),
    (4_000_000_000, quantity.DECIMAL_SI, "4G"),
    (1500, quantity.DECIMAL_SI, "1500"),
    (1_500_000_000, quantity.DECIMAL_SI, "1500M"),
    (2**30, quantity.DECIMAL_SI, "1073741824"),
    (4_000_000_000, quantity.DECIMAL_EXPONENT, "4e9"),
    (-2048, quantity.BINARY_SI, "-2Ki"),
])
def test_quantity_string(value: int, fmt: str, want: str) -> None:
    assert quantity.quantity_string(value, fmt) == want


def test_device_consumption_keeps_formats() -> None:
    raw = {"allowMultipleAllocations": True, "capacity": {
        "bandwidth": {"value": "10G", "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "step": "1G"}}},
        "memory": {"value": "8Gi"},
    }}
    fields = convert_sharing.device_fields(raw, "nic.example.com", lambda _: None)  # type: ignore[arg-type,return-value]
    device = Device("nic.example.com", "p", "nic0",
                    capacity={"nic.example.com/bandwidth": 10**10, "nic.example.com/memory": 8 * 2**30}, **fields)
    requests = convert_sharing.capacity_requests({"capacity": {"requests": {"bandwidth": "3500M"}}})
    for step_format, bandwidth in ((False, "3906250Ki"), (True, "4G")):  # 1.36, 1.37
        got = consumption(device, requests, step_format)
        assert got is not None
        assert {name: convert_sharing.format_quantity(a) for name, a in got} == {
            "nic.example.com/bandwidth": bandwidth, "nic.example.com/memory": "8Gi"}


@pytest.mark.parametrize(("written", "requested"), [
    ("cpu.example.com/cpu", "cpu.example.com/cpu"),  # dra-example-driver's cpu profile: the driver's domain spelled out
    ("cpu", "cpu"),  # a bare name of the driver's domain
])
def test_consumed_capacity_is_keyed_as_the_slice_names_it(written: str, requested: str) -> None:
    """GetConsumedCapacityFromRequest keys consumedCapacity by the device's own capacity map: a name the slice
    qualifies with the driver's domain stays qualified (it was written "cpu" once, whatever the slice said)."""
    from nodeagent.controlplane.allocator import Claim, DeviceClass, Node, Request, allocate
    from nodeagent.controlplane.convert.basic import allocation_json, resource_slice

    drv = "cpu.example.com"
    stored = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": drv, "nodeName": "n1", "pool": {"name": "n1", "resourceSliceCount": 1},
                       "devices": [{"name": "numa-0", "allowMultipleAllocations": True,
                                    "capacity": {written: {"value": "2"}}}]}}
    claim = Claim("default", "c", "uid", tuple(Request(name, "cpu", capacity={requested: 1}) for name in ("a", "b")))
    out = allocate([claim], Node("n1"), [resource_slice(stored)],
                   {"cpu": DeviceClass("cpu", (f'device.driver == "{drv}"',))}, set())
    assert out.results is not None
    results = allocation_json(out.results[0])["devices"]["results"]
    assert [(r["device"], r["consumedCapacity"]) for r in results] == [("numa-0", {written: "1"})] * 2
    assert len({r["shareID"] for r in results}) == 2
