"""kube-apiserver's Priority and DefaultTolerationSeconds admission on pods (objects/pod/admission.py),
case by case from plugin/pkg/admission/{priority,defaulttolerationseconds} v1.37.2 and their tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.pod import admission

NOT_READY = {"key": admission.NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
UNREACHABLE = {"key": admission.UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}


def pc(name: str, value: int, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        out["preemptionPolicy"] = policy
    return out


def admit(spec: dict[str, Any], *classes: Mapping[str, Any], name: str = "p") -> dict[str, Any]:
    pod: dict[str, Any] = {"metadata": {"name": name} if name else {"generateName": "web-"}, "spec": spec}
    by_name = {c["metadata"]["name"]: c for c in classes}
    admission.admit_create(pod, by_name.get, lambda: classes)
    return dict(pod["spec"])


def test_no_class_and_no_default_gives_zero_and_preempt_lower_priority() -> None:
    spec = admit({"containers": []})
    assert (spec.get("priorityClassName"), spec["priority"], spec["preemptionPolicy"]) == \
        (None, 0, "PreemptLowerPriority")
    assert spec["tolerations"] == [NOT_READY, UNREACHABLE]


def test_the_global_default_with_the_lowest_value_is_taken() -> None:
    spec = admit({}, pc("high", 1000, True, "Never"), pc("low", 10, True, "PreemptLowerPriority"), pc("x", 1))
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == \
        ("low", 10, "PreemptLowerPriority")


def test_a_named_class_resolves() -> None:
    spec = admit({"priorityClassName": "system-node-critical"}, pc("system-node-critical", 2000001000,
                                                                   policy="PreemptLowerPriority"))
    assert spec["priority"] == 2000001000


def test_a_class_without_a_policy_leaves_the_pods() -> None:
    spec = admit({"priorityClassName": "c", "preemptionPolicy": "Never"}, pc("c", 5))
    assert (spec["priority"], spec["preemptionPolicy"]) == (5, "Never")


@pytest.mark.parametrize(("spec", "name", "text"), [
    ({"priorityClassName": "nope"}, "p", 'pods "p" is forbidden: no PriorityClass with name nope was found'),
    ({"priorityClassName": "nope"}, "", 'pods "web-" is forbidden: no PriorityClass with name nope was found'),
    ({"priorityClassName": "c", "priority": 7}, "p",
     'pods "p" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority '
     "admission controller computed 5 from the given PriorityClass name"),
    ({"priorityClassName": "c", "preemptionPolicy": "PreemptLowerPriority"}, "p",
     'pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in '
     "pod spec; priority admission controller computed Never from the given PriorityClass name"),
])
def test_refusals_name_the_pod_as_upstream(spec: dict[str, Any], name: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        admit(spec, pc("c", 5, policy="Never"), name=name)
    assert str(err.value) == text


@pytest.mark.parametrize(("given", "added"), [
    ([], [NOT_READY, UNREACHABLE]),
    ([{"operator": "Exists"}], []),  # no key, no effect: tolerates everything
    ([{"key": admission.NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
     [UNREACHABLE]),
    ([{"key": admission.UNREACHABLE, "operator": "Exists"}], [NOT_READY]),  # no effect covers NoExecute
    ([{"key": admission.UNREACHABLE, "operator": "Exists", "effect": "NoSchedule"}], [NOT_READY, UNREACHABLE]),
])
def test_default_tolerations(given: list[dict[str, Any]], added: list[dict[str, Any]]) -> None:
    assert admit({"tolerations": list(given)})["tolerations"] == [*given, *added]


def test_an_update_keeps_what_create_set() -> None:
    old = {"spec": {"priority": 10, "preemptionPolicy": "Never", "tolerations": [NOT_READY, UNREACHABLE]}}
    new: dict[str, Any] = {"spec": {"containers": []}}
    admission.admit_update(new, old)
    assert new["spec"] == {"containers": [], "priority": 10, "preemptionPolicy": "Never",
                           "tolerations": [NOT_READY, UNREACHABLE]}
