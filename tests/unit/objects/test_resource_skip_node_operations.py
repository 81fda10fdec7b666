"""skipNodeOperations (DRAOptionalNodeOperations, KEP-5945) on ResourceSlices and allocation results:
dropped while the gate is off, validated as a set of known values when on."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as r

ON = {"DRAOptionalNodeOperations": True}


def slice_(skip: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d.example.com", "nodeName": "n", "pool": {"name": "p", "generation": 1,
                                                                          "resourceSliceCount": 1},
                     "devices": [{"name": "x"}], "skipNodeOperations": skip}}


def test_dropped_when_the_gate_is_off() -> None:
    assert "skipNodeOperations" not in r.validate("ResourceSlice", slice_(["*"]))["spec"]


@pytest.mark.parametrize("skip", [["*"], ["NodeUnprepareResources"], ["NodePrepareResources", "NodeUnprepareResources"],
                                  ["NodePrepareResources", "*"]])
def test_valid(skip: list[str]) -> None:
    assert r.validate("ResourceSlice", slice_(skip), gates=ON)["spec"]["skipNodeOperations"] == skip


@pytest.mark.parametrize(("skip", "text"), [
    (["Everything"], 'spec.skipNodeOperations[0]: Unsupported value: "Everything"'),
    (["*", "*"], 'spec.skipNodeOperations[1]: Duplicate value: "*"'),
    (["NodePrepareResources"], 'spec.skipNodeOperations: Invalid value: "NodePrepareResources"'),
])
def test_invalid(skip: list[str], text: str) -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceSlice", slice_(skip), gates=ON)
    assert text in str(err.value)
