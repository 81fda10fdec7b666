"""ServiceCIDR's checks (objects/networking.py) against pkg/apis/networking/validation's texts, as the
real kube-apiserver v1.37.2 answered them (tests/integration/test_kcm_kinds_validation.py compares)."""

from __future__ import annotations

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.networking import validate_service_cidr, validate_service_cidr_update


def _cidr(*cidrs: str) -> dict[str, object]:
    return {"metadata": {"name": "c"}, "spec": {"cidrs": list(cidrs)}}


@pytest.mark.parametrize(("cidrs", "error"), [
    ((), "spec.cidrs: Required value: at least one CIDR required"),
    (("10.0.0.1/24",), 'spec.cidrs[0]: Invalid value: "10.0.0.1/24": must not have bits set beyond the prefix length'),
    (("010.0.0.0/24",), 'spec.cidrs[0]: Invalid value: "010.0.0.0/24": must not have leading 0s in IP or prefix '
                        "length"),
    (("10.0.0.0/024",), 'spec.cidrs[0]: Invalid value: "10.0.0.0/024": must not have leading 0s in IP or prefix '
                        "length"),
    (("::ffff:10.0.0.0/120",), 'spec.cidrs[0]: Invalid value: "::ffff:10.0.0.0/120": must not have an IPv4-mapped '
                               "IPv6 address"),
    (("2001:DB8::/64",), 'spec.cidrs[0]: Invalid value: "2001:DB8::/64": must be in canonical form ("2001:db8::/64")'),
    (("10.0.0.0",), 'spec.cidrs[0]: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
                    "2001:db8::/64)"),
    (("10.0.0.0/24", "10.1.0.0/24"), 'spec.cidrs: Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more '
                                     "than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"),
])
def test_refused(cidrs: tuple[str, ...], error: str) -> None:
    with pytest.raises(ValidationError) as err:
        validate_service_cidr(_cidr(*cidrs))
    assert str(err.value) == error


def test_accepted_and_updates() -> None:
    assert validate_service_cidr(_cidr("10.0.0.0/24", "fd00::/64"))
    validate_service_cidr_update(_cidr("10.0.0.0/24", "fd00::/64"), _cidr("10.0.0.0/24"))  # gains a family
    with pytest.raises(ValidationError) as err:
        validate_service_cidr_update(_cidr("10.0.0.0/24"), _cidr("10.0.0.0/24", "fd00::/64"))
    assert str(err.value) == 'spec.cidrs: Invalid value: ["10.0.0.0/24"]: field is immutable'
