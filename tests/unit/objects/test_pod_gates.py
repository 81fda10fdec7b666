"""Scheduling gates' API rules (nodeagent/objects/pod/gates.py), with kube-apiserver v1.37.2's texts
(tests/integration/test_scheduling_gates.py compares the API answers with the real server)."""

from __future__ import annotations

from typing import Any

from nodeagent.objects.common import Errors
from nodeagent.objects.pod import gates


def _spec(*names: str, **more: Any) -> dict[str, Any]:
    return {"schedulingGates": [{"name": n} for n in names], **more}


def _texts(errs: Errors) -> list[str]:
    return [str(e) for e in errs]


def test_gated_condition_added_once() -> None:
    pod: dict[str, Any] = {"spec": _spec("a/b"), "status": {"phase": "Pending"}}
    gates.add_gated_condition(pod)
    gates.add_gated_condition(pod)
    assert [(c["type"], c["status"], c["reason"]) for c in pod["status"]["conditions"]] == [
        ("PodScheduled", "False", "SchedulingGated")]
    ungated: dict[str, Any] = {"spec": {}, "status": {}}
    gates.add_gated_condition(ungated)
    assert ungated["status"] == {}


def test_create_rules() -> None:
    assert _texts(gates.create_errors(_spec("a/b", "a/b", "-x", nodeName="n"))) == [
        'spec.schedulingGates[1]: Duplicate value: "a/b"',
        "spec.schedulingGates[2]: Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', "
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"]


def test_updates_may_only_delete_gates() -> None:
    old = _spec("a", "b")
    assert not gates.update_errors(_spec("b"), old)
    assert not gates.update_errors(_spec(), old)
    assert _texts(gates.update_errors(_spec("a", "c"), old)) == [
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'c'"]


def test_gated_pod_node_selector_and_affinity_may_only_grow() -> None:
    old = _spec("a", nodeSelector={"k": "v"}, affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "x", "operator": "Exists"}]}]}}})
    grown = _spec("a", nodeSelector={"k": "v", "k2": "v"}, affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "x", "operator": "Exists"}, {"key": "y", "operator": "Exists"}]}]}}})
    assert not gates.update_errors(grown, old)
    assert gates.comparable(grown, old) == old
    changed = _spec("a", nodeSelector={"k": "w"}, affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})
    assert _texts(gates.update_errors(changed, old)) == [
        'spec.nodeSelector: Invalid value: {"k":"w"}: only additions to spec.nodeSelector are allowed (no '
        "mutations or deletions)",
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Invalid "
        "value: []: no additions/deletions to non-empty NodeSelectorTerms list are allowed"]
    # an ungated pod's selector is the whole-spec rule's (not munged)
    assert gates.comparable(_spec(nodeSelector={"k": "w"}), _spec(nodeSelector={"k": "v"}))["nodeSelector"] == {
        "k": "w"}
