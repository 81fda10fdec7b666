"""The CEL parser and type checker (nodeagent/cel/syntax.py, checker.py): cel-go's issue texts and
positions, its output types, and silence where the input is dyn."""

from __future__ import annotations

import pytest

from nodeagent.cel import checker as C
from nodeagent.cel import syntax as S

SPEC = C.struct("Deployment0.spec")
ENV = C.Env(
    {"object": C.struct("Deployment0"), "oldObject": C.struct("Deployment0"), "params": C.DYN,
     "variables": C.struct("kubernetes.variables")},
    {"Deployment0": {"spec": SPEC, "metadata": C.struct("Deployment0.metadata"), "kind": C.STRING},
     "Deployment0.metadata": {"name": C.STRING, "labels": C.map_of(C.STRING, C.STRING)},
     "Deployment0.spec": {"replicas": C.INT, "paused": C.BOOL, "names": C.list_of(C.STRING),
                          "strategy": C.DYN, "started": C.TIMESTAMP},
     "kubernetes.variables": {"count": C.INT, "any": C.DYN}})


def text(expression: str) -> str:
    return C.issues_text(expression, C.check(expression, ENV).issues)


@pytest.mark.parametrize(("expression", "expected"), [
    ("object.spec.replicas > '1' && object.spec.nonExisting == 1",
     "ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n"
     " | object.spec.replicas > '1' && object.spec.nonExisting == 1\n"
     " | .....................^\n"
     "ERROR: <input>:1:42: undefined field 'nonExisting'\n"
     " | object.spec.replicas > '1' && object.spec.nonExisting == 1\n"
     " | .........................................^"),
    ("object.spec.replicas == null",
     "ERROR: <input>:1:22: found no matching overload for '_==_' applied to '(int, null)'\n"
     " | object.spec.replicas == null\n | .....................^"),
    ("object.spec.names.all(n, n.size())",
     "ERROR: <input>:1:32: expected type 'bool' but found 'int'\n"
     " | object.spec.names.all(n, n.size())\n | ...............................^"),
    ("has(object.spec.foo)",
     "ERROR: <input>:1:4: undefined field 'foo'\n | has(object.spec.foo)\n | ...^"),
    ("object.spec.replicas.startsWith('a')",
     "ERROR: <input>:1:32: found no matching overload for 'startsWith' applied to 'int.(string)'\n"
     " | object.spec.replicas.startsWith('a')\n | ...............................^"),
    ("nope + 1",
     "ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope + 1\n | ^"),
    ("variables.missing > 1",
     "ERROR: <input>:1:10: undefined field 'missing'\n | variables.missing > 1\n | .........^"),
    ("'n=' + object.spec.replicas",
     "ERROR: <input>:1:6: found no matching overload for '_+_' applied to '(string, int)'\n"
     " | 'n=' + object.spec.replicas\n | .....^"),
    ("object.spec.paused ? 1 : 'a'",
     "ERROR: <input>:1:20: found no matching overload for '_?_:_' applied to '(bool, int, string)'\n"
     " | object.spec.paused ? 1 : 'a'\n | ...................^"),
    ("[1, 'a'].size() > 0",
     "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a'].size() > 0\n | ....^"),
    ("object.spec.replicas.x",
     "ERROR: <input>:1:21: type 'int' does not support field selection\n"
     " | object.spec.replicas.x\n | ....................^"),
    ("object.metadata.name == 'a' &&\n  object.spec.x == 1",
     "ERROR: <input>:2:14: undefined field 'x'\n |   object.spec.x == 1\n | .............^"),
])
def test_issues_as_cel_go_writes_them(expression: str, expected: str) -> None:
    assert text(expression) == expected


@pytest.mark.parametrize("expression", [
    "object.spec.replicas > 1 && object.metadata.name.startsWith('a')",
    "object.spec.strategy.anything.at.all == 3",  # dyn: nothing to say
    "params.max + 1 > object.spec.replicas",
    "variables.any.foo + 'x' == 'y'",
    "object.spec.replicas < 2.5 && object.spec.replicas >= 1u",  # cross-type numeric comparisons
    "object.spec.names.exists(n, n.matches('^a')) || size(object.spec.names) == 0",
    "object.spec.names.map(n, n + '!').all(n, n.endsWith('!'))",
    "object.spec.names.filter(n, n != '').size() >= 0",
    "object.metadata.labels.exists(k, k.startsWith('x') && object.metadata.labels[k] != '')",
    "object.?spec.?replicas.orValue(1) > 0",
    "object.spec.names.all(i, n, i >= 0 && n != '')",
    "object.spec.started < timestamp('2020-01-01T00:00:00Z')",
    "object.spec.names.join(',').lowerAscii().split(',').size() > 0",
    "object.spec.names.someFunctionThisCheckerDoesNotType(1) == 'x'",
    "'%s'.format([object.spec.replicas]) != ''",
    "oldObject == null || oldObject.spec.replicas == object.spec.replicas",
    "{'a': 1, 'b': 2}['a'] == 1 && [1, 2][0] == 1 && 1 in [1] && 'a' in {'a': 1}",
    "-1 < object.spec.replicas && !object.spec.paused",
])
def test_well_typed_expressions_give_no_issue(expression: str) -> None:
    assert C.check(expression, ENV).issues == ()


@pytest.mark.parametrize(("expression", "expected"), [
    ("object.spec.replicas + 1", "int"),
    ("object.spec.names", "list(string)"),
    ("object.spec.names.map(n, size(n))", "list(int)"),
    ("object.metadata.labels", "map(string, string)"),
    ("object.?spec.?replicas", "optional_type(int)"),
    ("object.spec", "Deployment0.spec"),
    ("[]", "list(dyn)"),
    ("params.x", "dyn"),
    ("object.spec.replicas > 1 ? 'a' : 'b'", "string"),
    ("type(object.spec.replicas)", "type(int)"),
])
def test_output_types(expression: str, expected: str) -> None:
    assert C.format_type(C.check(expression, ENV).type) == expected


@pytest.mark.parametrize(("expression", "offsets"), [
    ("a.b", {"select": 1}),
    ("f(x)", {"call": 1}),
    ("a[0]", {"call": 1}),
    ("x.y(1)", {"call": 3}),
])
def test_node_offsets_are_cel_gos(expression: str, offsets: dict[str, int]) -> None:
    tree = S.parse(expression)
    kind = "select" if isinstance(tree, S.Select) else "call"
    assert {kind: tree.offset} == offsets


@pytest.mark.parametrize("expression", ["a +", "(a", "a.", "if", "a ? b", "1 2", "has(a)"])
def test_unreadable_text_is_a_parse_error(expression: str) -> None:
    with pytest.raises(S.ParseError):
        S.parse(expression)
