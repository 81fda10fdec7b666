"""kubectl JSONPath as CRD printer columns use it (client-go util/jsonpath behaviour)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver import jsonpath

OBJ: dict[str, Any] = {
    "metadata": {"name": "w1", "labels": {"app": "web", "app.kubernetes.io/name": "shop"}},
    "spec": {"replicas": 3, "ratio": 1.5, "paused": False, "ports": [80, 443, 8080]},
    "status": {
        "conditions": [
            {"type": "Progressing", "status": "True", "age": 5},
            {"type": "Ready", "status": "False", "age": 2},
        ],
        "nothing": None,
    },
    "items": [{"x": 1}, {"x": 2}, {"y": 3}],
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".spec.replicas", [3]),
        ("{.spec.replicas}", [3]),
        ("$.spec.replicas", [3]),
        (".metadata.labels.app", ["web"]),
        (".metadata.labels['app.kubernetes.io/name']", ["shop"]),
        ('.metadata.labels["app.kubernetes.io/name"]', ["shop"]),
        (r".metadata.labels.app\.kubernetes\.io/name", ["shop"]),
        ('.status.conditions[?(@.type=="Ready")].status', ["False"]),
        (".status.conditions[?(@.type=='Ready')].status", ["False"]),
        ('.status.conditions[?(@.type!="Ready")].type', ["Progressing"]),
        (".status.conditions[?(@.age>3)].type", ["Progressing"]),
        (".status.conditions[?(@.age<=2)].type", ["Ready"]),
        (".items[?(@.x)].x", [1, 2]),
        (".items[*].x", [1, 2]),
        (".items[0].x", [1]),
        (".items[-1].y", [3]),
        (".spec.ports[1:]", [443, 8080]),
        (".spec.ports[0:3:2]", [80, 8080]),
        (".spec.ports[0,2]", [80, 8080]),
        (".spec.ports[*]", [80, 443, 8080]),
        (".spec.missing", []),
        (".spec.missing.deeper", []),
        (".status.nothing", [None]),
        ("..x", [1, 2]),
        (".metadata.labels.*", ["web", "shop"]),
    ],
)
def test_evaluate(expr: str, expected: list[Any]) -> None:
    assert jsonpath.evaluate(expr, OBJ) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("", "empty expression"),
        (".spec[0", "unterminated array"),
        (".spec[abc]", "invalid array index abc"),
        (".status.conditions[?(@.type=~'R')]", "unrecognized character in action: '~'"),
        (".status.conditions[?(@.type=<'R')]", "unrecognized filter operator =<"),
        ("spec.replicas", "unrecognized character in action: 's'"),
        (".a[?(@.x==b)]", "unrecognized character in action: 'b'"),
    ],
)
def test_invalid_expressions_raise(expr: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        jsonpath.parse(expr)
    with pytest.raises(ValueError, match=message):
        jsonpath.cell(expr, OBJ)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (".spec.ports[5]", "array index out of bounds: index 5, length 3"),
        (".spec.replicas[0]", "int64 is not array or slice"),
        ('.status.conditions[?(@.age=="5")].type', "incompatible types for comparison"),
    ],
)
def test_evaluation_errors(expr: str, message: str) -> None:
    with pytest.raises(jsonpath.EvaluationError, match=message):
        jsonpath.evaluate(expr, OBJ)
    assert jsonpath.cell(expr, OBJ) is None  # the column then prints nothing


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".spec.replicas", 3),
        (".items[*].x", 1),  # the first result, as the CRD table convertor takes it
        (".spec.missing", None),
    ],
)
def test_cell_takes_the_first_result(expr: str, expected: Any) -> None:
    assert jsonpath.cell(expr, OBJ) == expected


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ("text", "text"),
        (3, "3"),
        (1.5, "1.5"),
        (2.0, "2"),
        (1e6, "1e+06"),
        (999999.0, "999999"),
        (0.00001, "1e-05"),
        (True, "true"),
        (None, "<no value>"),
        ({"b": 1, "a": "<x>"}, '{"a":"\\u003cx\\u003e","b":1}'),
        ([1, "a"], '[1,"a"]'),
    ],
)
def test_format_value_like_kubectl(value: Any, printed: str) -> None:
    assert jsonpath.format_value(value) == printed


def test_text_joins_results_with_spaces() -> None:
    assert jsonpath.text(".spec.ports[*]", OBJ) == "80 443 8080"
