"""Version attributes in CEL selectors behave as Kubernetes's Semver type under cel-go.

Table from upstream's semantics: k8s.io/apiserver/pkg/cel Semver.Equal (a Semver only, else
"no such overload"), cel-go's evalEq/evalNe (`!=` is `Equal(...) != true`, so it never fails),
String.Equal (false for another type), Semver without the Comparer trait (`<` is
"no such overload: _<_"), and the semver library's compareTo/isGreaterThan/isLessThan."""

from __future__ import annotations

import pytest

from nodeagent.cel.relations import rewrite
from nodeagent.cel.selectors import DeviceView, Version, compile_selector

GPU = "gpu.example.com"
V = f'device.attributes["{GPU}"].driverVersion'
M = f'device.attributes["{GPU}"].model'


def gpu() -> DeviceView:
    return DeviceView(GPU, {"model": "a100", "index": 3, "healthy": True, "driverVersion": Version("1.4.2+build.7"),
                            "fw": (Version("1.0.0"), Version("2.0.0"))}, {"memory": 2**30})


@pytest.mark.parametrize(("expression", "outcome"), [
    # equality with a string: an error with the version on the left, false on the right
    (f'{V} == "1.4.2"', "no such overload"),
    (f'"1.4.2" == {V}', False),
    (f'{V} != "1.4.2"', True),
    (f'"1.4.2" != {V}', True),
    (f"{V} == 1", "no such overload"),
    (f"1 == {V}", False),
    # with semver(): by precedence, build metadata ignored
    (f'{V} == semver("1.4.2")', True),
    (f'{V} == semver("1.4.3")', False),
    (f'{V} != semver("1.4.3")', True),
    (f'semver("1.4.2") == {V}', True),
    ('semver("1.0.0") == semver("1.0.0+x")', True),
    ('semver("1.0.0-rc.1") == semver("1.0.0")', False),
    # no ordering operators on versions
    (f'{V} < semver("2.0.0")', "no such overload: _<_"),
    (f'{V} >= semver("1.0.0")', "no such overload: _>=_"),
    (f'semver("2.0.0") > {V}', "no such overload: _>_"),
    (f'"1.0.0" < {V}', "no such overload"),
    # compareTo and friends: versions only
    (f'{V}.compareTo(semver("1.4.2")) == 0', True),
    (f'{V}.compareTo(semver("1.10.0")) < 0', True),
    (f'{V}.isGreaterThan(semver("1.4.2-rc.1"))', True),
    (f'{V}.isLessThan("2.0.0")', "no such overload"),
    (f'{V}.compareTo("1.4.2") == 0', "no such overload"),
    # list-type version attributes hold versions too
    (f'device.attributes["{GPU}"].fw.exists(v, v == semver("2.0.0"))', True),
    (f'device.attributes["{GPU}"].fw.exists(v, v == "2.0.0")', "no such overload"),
    # values that are not versions keep CEL's own semantics on a device with versions
    (f'{M} == "a100" && device.attributes["{GPU}"].index == 3', True),
    (f'device.attributes["{GPU}"].index == 3.0', True),
    (f'device.attributes["{GPU}"].healthy == 1', False),
    (f'{M} < "b"', True),
    (f'{M} == "h100" || {V} == semver("1.4.2")', True),
])
def test_version_semantics(expression: str, outcome: bool | str) -> None:
    got = compile_selector(expression).evaluate(gpu())
    if isinstance(outcome, str):
        assert isinstance(got, str) and got.startswith(outcome), got
        assert got == outcome or outcome == "no such overload"
    else:
        assert got is outcome


def test_device_without_versions_keeps_the_plain_program() -> None:
    plain = DeviceView(GPU, {"model": "a100"}, {})
    assert compile_selector(f'{M} == "a100"').evaluate(plain) is True
    assert compile_selector(f'{M} == 1').evaluate(plain) is False


@pytest.mark.parametrize(("expression", "rewritten"), [
    ("device.driver", None),  # no relation
    ('a.b("x", [1, 2], {"k": 1}).all(x, !x)', None),
    ("a == b", "(__nodeagent_vany(a, b) ? __nodeagent_vrel(\"==\", a, b) : (a) == (b))"),
    ("x in [1] && -a.b[0] % 2 + 1", None),
    ("Msg{f: 1}.f == 1", None),  # outside the grammar handled: the original program stays
])
def test_rewrite(expression: str, rewritten: str | None) -> None:
    assert rewrite(expression) == rewritten


def test_internal_functions_are_not_callable_from_a_selector() -> None:
    from nodeagent.cel.selectors import CelError
    with pytest.raises(CelError, match="undeclared reference to '__nodeagent_vany'"):
        compile_selector("__nodeagent_vany(1, 2)")
