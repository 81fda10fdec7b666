"""nodeagent.protowire: the table notation, and every table's references resolving.

Moved here from the API server's and the Pods API's tests when the two copies of the tables became one.
"""

from __future__ import annotations

import pytest

from nodeagent.protowire.notation import BUILTINS, SCALARS, message
from nodeagent.protowire.packages import PACKAGES, join


def test_every_message_reference_resolves() -> None:
    for pkg_name, pkg in PACKAGES.items():
        for msg_name, table in pkg.items():
            for num, field in table.items():
                assert num > 0 and field.name, (pkg_name, msg_name)
                if field.kind in SCALARS or field.kind in BUILTINS:
                    continue
                ref_pkg, _, short = field.kind.rpartition(".")
                assert short in PACKAGES[ref_pkg or pkg_name], f"{pkg_name}.{msg_name}.{field.name} -> {field.kind}"


def test_a_message_written_twice_is_refused() -> None:
    one = {"LocalObjectReference": message("1 name string")}
    with pytest.raises(ValueError, match="protobuf message LocalObjectReference is written twice"):
        join(one, one)


@pytest.mark.parametrize(("spec", "error"), [
    ("1 name", "bad protobuf table line '1 name'"),
    ("x name string", "bad protobuf table line 'x name string'"),
    ("1 a string; 1 b string", "field number 1 repeated in '1 a string; 1 b string'"),
    ("1 spec Spec?", "presence marks are for scalars: '1 spec Spec?'"),
    ("1 spec PodSpec?", "presence marks are for scalars: '1 spec PodSpec?'"),
    ("1 name string*", "'*' is for messages: '1 name string*'"),
])
def test_table_notation_errors(spec: str, error: str) -> None:
    with pytest.raises(ValueError) as err:
        message(spec)
    assert str(err.value) == error


def test_table_notation() -> None:
    table = message("3 a []string; 4 b {}Quantity\n5 c ^Inline; 6 d int64?; 7 e bool!; 8 f meta.ObjectMeta")
    assert [(n, fl.name, fl.kind, fl.label, fl.presence) for n, fl in table.items()] == [
        (3, "a", "string", "[]", ""), (4, "b", "Quantity", "{}", ""), (5, "c", "Inline", "^", ""),
        (6, "d", "int64", "", "?"), (7, "e", "bool", "", "!"), (8, "f", "meta.ObjectMeta", "", ""),
    ]
