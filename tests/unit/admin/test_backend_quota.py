"""ResourceQuota for claims users apply themselves: charged for every firstAvailable subrequest."""

from __future__ import annotations

import pytest

from nodeagent.admin.backend import NodeBackend
from nodeagent.errors import ValidationError
from tests.unit.admin.test_backend_devices import rig  # noqa: F401 - the shared fixture

QUOTA = """
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus}
spec:
  hard: {gpu.deviceclass.resource.k8s.io/devices: "2"}
"""


def claim(name: str, big: int, small: int) -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}}}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {{name: big, deviceClassName: gpu, count: {big}}}
      - {{name: small, deviceClassName: gpu, count: {small}}}
"""


async def test_user_claims_are_charged_for_their_largest_alternative(
    rig: tuple[NodeBackend, object, object],  # noqa: F811 - the imported fixture
) -> None:
    backend = rig[0]
    await backend.apply(QUOTA, "default")
    await backend.apply(claim("a", 1, 1), "default")
    with pytest.raises(ValidationError) as err:
        # 1 used + max(1, 2) = 3 > 2: the second alternative counts although the first one is smaller.
        await backend.apply(claim("b", 1, 2), "default")
    assert 'resourceclaims.resource.k8s.io "b" is forbidden: exceeded quota: gpus' in str(err.value)
    assert "requested: gpu.deviceclass.resource.k8s.io/devices=2" in str(err.value)
    await backend.apply(claim("c", 1, 1), "default")  # exactly at the limit
    with pytest.raises(ValidationError):
        await backend.apply(claim("d", 1, 1), "default")
    await backend.apply(claim("a", 1, 1), "default")  # re-applying an existing claim is not charged again
