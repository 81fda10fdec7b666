"""Server-side printers of rbac.authorization.k8s.io/v1 RoleBinding and ClusterRoleBinding (Role
and ClusterRole print as the generic Name, Created At, as upstream registers no printer for them).

Columns, cells and descriptions follow k8s.io/kubernetes pkg/printers/internalversion
(printRoleBinding, printClusterRoleBinding with rbac.SubjectsStrings); the server prints wide, so
a row has its Users, Groups and ServiceAccounts. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.tables.common import AGE_COLUMN, NAME_COLUMN, Cells, Printer, age, column, get, items, name_of

_ROLE_REF_DOC = {
    "rolebinding": "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. "
                   "If the RoleRef cannot be resolved, the Authorizer must return an error.",
    "clusterrolebinding": "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot "
                          "be resolved, the Authorizer must return an error.",
}


def _columns(kind: str, noun: str) -> tuple[dict[str, Any], ...]:
    return (
        NAME_COLUMN,
        column("Role", _ROLE_REF_DOC[kind]),
        AGE_COLUMN,
        column("Users", f"Users in the {noun}", priority=1),
        column("Groups", f"Groups in the {noun}", priority=1),
        column("ServiceAccounts", f"ServiceAccounts in the {noun}", priority=1),
    )


def _binding_cells(o: Mapping[str, Any], now: float) -> Cells:
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in items(o, "subjects"):
        kind, name = subject.get("kind"), str(subject.get("name") or "")
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace') or ''}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    role = f"{get(o, 'roleRef', 'kind') or ''}/{get(o, 'roleRef', 'name') or ''}"
    return [name_of(o), role, age(o, now), ", ".join(users), ", ".join(groups), ", ".join(accounts)]


PRINTERS: dict[str, Printer] = {
    "rolebinding": Printer(_columns("rolebinding", "roleBinding"), _binding_cells),
    "clusterrolebinding": Printer(_columns("clusterrolebinding", "clusterRoleBinding"), _binding_cells),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
