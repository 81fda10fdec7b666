"""quantity.parse/canonical memoize short texts: same answers as the unmemoized parser,
errors are raised every time (never memoized), long texts go around the memo; and the
shareID check (a canonical UUID as text) accepts exactly what str(uuid.UUID(...)) prints."""

from __future__ import annotations

import uuid

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource.slice_features import meta_uid
from nodeagent.util import quantity


@pytest.mark.parametrize("text", ["1Gi", "500m", "0.5m", "2e3", "+1k", "1.5", ".5", "10Gi"])
def test_memoized_answers_equal_the_parser(text: str) -> None:
    for _ in range(2):
        assert quantity.parse(text) == quantity._parse_str(text)
        for resource in ("cpu", "memory", ""):
            assert quantity.canonical(resource, text) == quantity._canonical(resource, quantity._parse_str(text))


@pytest.mark.parametrize("text", [" 1", "1 ", "1Gb", "", "1e31", "--1"])
def test_bad_text_fails_every_time(text: str) -> None:
    for _ in range(2):
        with pytest.raises(quantity.QuantityError):
            quantity.parse(text)
        with pytest.raises(quantity.QuantityError):
            quantity.canonical("memory", text)


def test_long_text_bypasses_the_memo() -> None:
    text = "1" + "0" * 60
    before = quantity._parse_text.cache_info().currsize
    assert quantity.parse(text) == 10**60 and quantity.canonical("", text) == 10**60
    assert quantity._parse_text.cache_info().currsize == before


@pytest.mark.parametrize("value, ok", [
    (str(uuid.uuid5(uuid.NAMESPACE_OID, "x")), True),
    ("1f0e1c2d-3b4a-5968-8776-a5b4c3d2e1f0", True),
    ("1F0E1C2D-3B4A-5968-8776-A5B4C3D2E1F0", False),  # uuid.UUID accepts it, the canonical form is lowercase
    ("1f0e1c2d3b4a59688776a5b4c3d2e1f0", False),
    ("{1f0e1c2d-3b4a-5968-8776-a5b4c3d2e1f0}", False),
    ("urn:uuid:1f0e1c2d-3b4a-5968-8776-a5b4c3d2e1f0", False),
    ("1f0e1c2d-3b4a-5968-8776-a5b4c3d2e1f0\n", False),
    ("1f0e1c2d-3b4a-5968-8776-a5b4c3d2e1fg", False),
])
def test_share_id_is_a_canonical_uuid(value: str, ok: bool) -> None:
    try:
        canonical = str(uuid.UUID(value))
    except ValueError:
        canonical = ""
    assert (canonical == value) is ok  # the rule as upstream's validateUID states it
    if ok:
        meta_uid("shareID", value)
    else:
        with pytest.raises(ValidationError):
            meta_uid("shareID", value)
