"""Schema's written-out __init__ (schema/model.py: faster than the generated one, issue 25) takes exactly the
dataclass's fields, in order, with their defaults, and sets every one of them: a field added to the class but not
to __init__ fails here instead of leaving instances without it."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from nodeagent.apiserver.schema.model import ANY, Schema


def test_init_takes_every_field_in_order_with_its_default() -> None:
    params = list(inspect.signature(Schema.__init__).parameters.values())[1:]
    fields = dataclasses.fields(Schema)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields, strict=True):
        assert p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        if f.default_factory is not dataclasses.MISSING:
            assert p.default is None, f.name  # a new one from the factory each time
        else:
            assert p.default == f.default, f.name


def test_every_field_is_set_and_factories_give_new_values() -> None:
    assert set(vars(ANY)) == {f.name for f in dataclasses.fields(Schema)}
    a, b = Schema(), Schema()
    assert a.properties == {} and a.extra == {}
    assert a.properties is not b.properties and a.extra is not b.extra
    given = {f.name: f"v-{f.name}" for f in dataclasses.fields(Schema)}
    assert vars(Schema(**given)) == given  # type: ignore[arg-type]
    assert Schema(*given.values()) == Schema(**given)  # type: ignore[arg-type]


def test_dataclass_behaviour_is_kept() -> None:
    s = Schema(type="string", enum=("a",))
    assert s == Schema(type="string", enum=("a",))
    assert dataclasses.replace(s, format="byte") == Schema(type="string", enum=("a",), format="byte")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.type = "integer"  # type: ignore[misc]
    assert repr(Schema(ref="x")).startswith("Schema(type='', format='', description='', properties={}")
