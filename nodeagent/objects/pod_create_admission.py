"""kube-apiserver's default mutating admission of a pod create, in its plugin order, for every path
that creates pods (the REST registry, the embedded controllers, the node's mirror pods).

Why one function: the three paths must run the same plugins in the same order over their own reads
(a store, a transaction); only whether a missing service account is refused differs. The plugins
themselves are objects/serviceaccount.py (ServiceAccount) and objects/pod/admission.py (Priority,
DefaultTolerationSeconds). Pure: the reads and the name generator come in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodeagent.objects import serviceaccount
from nodeagent.objects.pod import admission

Peek = Callable[[str, str, str], Mapping[str, Any] | None]
"""(kind, namespace, name) -> the stored object, None when there is none."""


def admit_new_pod(pod: dict[str, Any], peek: Peek, priority_classes: Callable[[], Iterable[Mapping[str, Any]]],
                  generate_name: Callable[[str], str], *, strict: bool = True) -> None:
    """ServiceAccount, then Priority and DefaultTolerationSeconds; `strict` as serviceaccount.admit_create."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    serviceaccount.admit_create(pod, namespace, lambda ns, name: peek("ServiceAccount", ns, name), generate_name,
                                strict=strict)
    admission.admit_create(pod, lambda name: peek("PriorityClass", "", name), priority_classes)
