"""Label selector parsing and matching."""

from __future__ import annotations

import pytest

from nodeagent.errors import ValidationError
from nodeagent.store import from_label_selector, parse_selector

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("env in (prod, staging)", True),
        ("env notin (prod)", False),
        ("env in (dev),app=web", False),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        (" app = web , env in (prod) ", True),
    ],
)
def test_parse_and_match(text: str, matches: bool) -> None:
    assert parse_selector(text).matches(LABELS) is matches


@pytest.mark.parametrize("text", ["app=web=x", "(a)", "!a in (b)", "a in b"])
def test_bad_selectors(text: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_selector(text)
    assert err.value.path == "labelSelector"


def test_label_selector_object() -> None:
    sel = from_label_selector(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    )
    assert sel.matches(LABELS)
    assert not sel.matches({"app": "web"})
    with pytest.raises(ValidationError) as err:
        from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]}, "spec.selector")
    assert err.value.path == "spec.selector.matchExpressions[0].operator"
