"""CEL selectors with the DRA `device` variable: compile errors, runtime errors, quantities, names."""

from __future__ import annotations

import pytest

from nodeagent.cel.selectors import (
    CelError,
    CelRuntimeError,
    DeviceView,
    Version,
    compile_selector,
    qualified,
    split_name,
)
from nodeagent.errors import ValidationError

GiB = 2**30
GPU = "gpu.example.com"


def gpu(**attrs: str | int | bool) -> DeviceView:
    attributes: dict[str, str | int | bool] = {"model": "a100", "index": 3, "healthy": True,
                                               "driverVersion": Version("1.4.2"), "dra.k8s.io/pcieRoot": "pci0"}
    attributes.update(attrs)
    return DeviceView(GPU, attributes, {"memory": 40 * GiB, "example.com/slots": 4})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.driver == "nic.example.com"', False),
        # bare attribute names belong to the driver's domain; qualified ones to theirs
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["dra.k8s.io"].pcieRoot == "pci0"', True),
        ('device.attributes["gpu.example.com"].index > 2', True),
        ('device.attributes["gpu.example.com"].healthy', True),
        ('device.attributes["gpu.example.com"].model.startsWith("a1")', True),
        ('device.attributes["gpu.example.com"].model.upperAscii() == "A100"', True),
        ('"model" in device.attributes["gpu.example.com"]', True),
        ('has(device.attributes["gpu.example.com"].missing)', False),
        ('"other.io" in device.attributes', False),
        # quantities
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("41Gi")) >= 0', False),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("39.5Gi"))', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("40G"))', False),
        ('device.capacity["gpu.example.com"].memory.asInteger() == 42949672960', True),
        ('device.capacity["example.com"].slots.compareTo(quantity("4")) == 0', True),
        ('isQuantity("10Mi") && !isQuantity("ten")', True),
        ('quantity("1k").add(quantity("24")).compareTo(quantity("1024")) == 0', True),
        # versions compare as semantic versions
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.4.2-rc.1"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.10.0")) < 0', True),
        ('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
        ('device.attributes["gpu.example.com"].driverVersion == semver("1.4.2")', True),
        ('device.attributes["gpu.example.com"].driverVersion.minor() == 4', True),
        # a version is not a string (Kubernetes: a distinct type; see test_cel_versions.py)
        ('"1.4.2" == device.attributes["gpu.example.com"].driverVersion', False),
        # comprehension variables are allowed
        ('device.attributes["gpu.example.com"].exists(k, k == "model")', True),
    ],
)
def test_matches(expression: str, expected: bool) -> None:
    assert compile_selector(expression).matches(gpu()) is expected


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("1 +", "Syntax error: mismatched input '<EOF>'"),
        ('device.driver == "x', "Syntax error"),
        ("", "expression is empty"),
        ("foo == 1", "undeclared reference to 'foo'"),
        ("nosuchfn(device.driver)", "undeclared reference to 'nosuchfn'"),
        ('device.capacity["a"].b.compareTo(quantity("12 Gi")) > 0', 'not a valid quantity: "12 Gi"'),
        ('semver("1.0") == "x"', "not a valid semantic version"),
        # a selector must be a bool (or dyn): upstream's type check
        ("1", "must evaluate to bool or the unknown type, not int"),
        ("device.driver", "must evaluate to bool or the unknown type, not string"),
        ('device.attributes', "must evaluate to bool or the unknown type, not map"),
    ],
)
def test_compile_errors_carry_the_compilers_message(expression: str, fragment: str) -> None:
    with pytest.raises(CelError) as info:
        compile_selector(expression)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValidationError)
    # a cached failure raises again with the same message
    with pytest.raises(CelError) as again:
        compile_selector(expression)
    assert str(again.value) == str(info.value)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ('device.attributes["gpu.example.com"].missing == "x"', "no such key: missing"),
        ('device.attributes["other.io"].model == "x"', "no such key: other.io"),
        ('device.attributes["gpu.example.com"].model > 1', "No such overload"),
        ('device.attributes["gpu.example.com"].model', "must evaluate to bool, got str"),
        # version attributes compare with versions only, as upstream's semver library
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan("1.0.0")', "no such overload"),
        ('device.attributes["gpu.example.com"].model.compareTo(semver("1.0.0")) > 0', "no such overload"),
        ('device.attributes["gpu.example.com"].model.major() == 1', "no such overload"),
    ],
)
def test_runtime_errors_fail_the_selector_with_a_message(expression: str, fragment: str) -> None:
    selector = compile_selector(expression)
    outcome = selector.evaluate(gpu())
    assert isinstance(outcome, str)
    assert fragment in outcome
    with pytest.raises(CelRuntimeError, match=fragment):
        selector.matches(gpu())


def test_runtime_error_short_circuits_like_cel() -> None:
    assert compile_selector('device.driver == "gpu.example.com" || device.attributes["x"].y').matches(gpu())


def test_compile_is_cached_by_text() -> None:
    text = 'device.attributes["gpu.example.com"].index == 3'
    assert compile_selector(text) is compile_selector(text)


def test_results_are_memoized_per_view_and_views_are_independent() -> None:
    selector = compile_selector('device.attributes["gpu.example.com"].model == "a100"')
    a, b = gpu(), gpu(model="h100")
    assert selector.matches(a) and not selector.matches(b)
    assert selector.matches(a) and not selector.matches(b)


@pytest.mark.parametrize(
    ("driver", "name", "split", "full"),
    [
        ("gpu.example.com", "model", ("gpu.example.com", "model"), "gpu.example.com/model"),
        ("gpu.example.com", "dra.k8s.io/pcieRoot", ("dra.k8s.io", "pcieRoot"), "dra.k8s.io/pcieRoot"),
    ],
)
def test_names(driver: str, name: str, split: tuple[str, str], full: str) -> None:
    assert split_name(driver, name) == split
    assert qualified(driver, name) == full
