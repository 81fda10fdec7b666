"""kube-apiserver's default mutating admission for pods: the Priority and DefaultTolerationSeconds plugins.

Why: a pod written through kube-apiserver leaves admission with `spec.priority` and
`spec.preemptionPolicy` resolved from its PriorityClass (or the global default), and with the
not-ready/unreachable NoExecute tolerations of 300 s; every client, scheduler and node then reads
those fields (the scheduler's preemption, the node lifecycle controller's taint eviction, kubectl).
A pod of the embedded API server, or of its controllers, must leave with the same spec.
Compared whole with kube-apiserver v1.37.2's pods in tests/integration/test_workloads_real_vs_embedded.py.

Upstream: plugin/pkg/admission/priority (pods: create resolves, update keeps what create set) and
plugin/pkg/admission/defaulttolerationseconds (create and update, --default-*-toleration-seconds 300).
Both skip subresources; the caller only runs them for writes of pods proper.
Pure: the PriorityClasses come in as a lookup and a listing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodeagent.errors import ValidationError

DEFAULT_PRIORITY = 0
"""scheduling.DefaultPriorityWhenNoDefaultClassExists."""
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300

PriorityClassOf = Callable[[str], Mapping[str, Any] | None]
"""name -> the stored PriorityClass, None when there is none."""


def forbidden(pod: Mapping[str, Any], text: str) -> ValidationError:
    """admission.NewForbidden on pods: `pods "NAME" is forbidden: ...`, named by extractResourceName:
    the name, else the generateName (names are generated after admission), else "Unknown"."""
    md = pod.get("metadata") or {}
    name = str(md.get("name") or md.get("generateName") or "Unknown")
    return ValidationError("", f'pods "{name}" is forbidden: {text}')


def default_class(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """getDefaultPriorityClass: the globalDefault class with the lowest value when a race left two."""
    found: Mapping[str, Any] | None = None
    for pc in classes:
        if pc.get("globalDefault") and (found is None or int(pc.get("value") or 0) < int(found.get("value") or 0)):
            found = pc
    return found


def admit_create(pod: dict[str, Any], class_of: PriorityClassOf,
                 classes: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
    """Both plugins on a pod create, in kube-apiserver's plugin order (Priority, then
    DefaultTolerationSeconds); raises the Forbidden the Priority plugin answers."""
    spec = pod.setdefault("spec", {})
    class_name = str(spec.get("priorityClassName") or "")
    policy: str | None
    if not class_name:
        pc = default_class(classes())
        if pc is not None:
            class_name, priority, policy = str(pc["metadata"]["name"]), int(pc.get("value") or 0), \
                pc.get("preemptionPolicy")
        else:
            priority, policy = DEFAULT_PRIORITY, PREEMPT_LOWER_PRIORITY
    else:
        pc = class_of(class_name)
        if pc is None:
            raise forbidden(pod, f"no PriorityClass with name {class_name} was found")
        priority, policy = int(pc.get("value") or 0), pc.get("preemptionPolicy")
    if class_name:
        spec["priorityClassName"] = class_name
    given = spec.get("priority")
    if given is not None and given != priority:
        raise forbidden(pod, f"the integer value of priority ({given}) must not be provided in pod spec; priority "
                              f"admission controller computed {priority} from the given PriorityClass name")
    spec["priority"] = priority
    if policy is not None:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise forbidden(pod, f"the string value of PreemptionPolicy ({given_policy}) must not be provided in "
                                  f"pod spec; priority admission controller computed {policy} from the given "
                                  "PriorityClass name")
        spec["preemptionPolicy"] = policy
    default_tolerations(spec)


def admit_update(pod: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Both plugins on a pod update: what create set is kept when the new object omits it (the
    Priority plugin), the default tolerations added again when missing (DefaultTolerationSeconds)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    old_spec = old.get("spec") or {}
    for key in ("priority", "preemptionPolicy"):
        if spec.get(key) is None and old_spec.get(key) is not None:
            spec[key] = old_spec[key]
    default_tolerations(spec)


def default_tolerations(spec: dict[str, Any]) -> None:
    """DefaultTolerationSeconds: NoExecute tolerations of not-ready and unreachable for 300 s, unless
    a toleration already covers the taint (its key, or no key; NoExecute, or no effect)."""
    tolerations = spec.get("tolerations")
    have = [t for t in tolerations if isinstance(t, Mapping)] if isinstance(tolerations, list) else []

    def covered(key: str) -> bool:
        return any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None) for t in have)

    added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for key in (NOT_READY, UNREACHABLE) if not covered(key)]
    if added:
        spec["tolerations"] = [*(tolerations if isinstance(tolerations, list) else []), *added]
