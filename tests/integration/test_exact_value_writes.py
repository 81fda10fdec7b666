"""A write that changes only a value Python's `==` takes for the old one (1 and true) is a write, as
kube-apiserver's no-op check compares the encoded bytes: the store once answered 200 and kept the 1
(the new value was lost), and a write changing something else beside it kept the old 1 through the
parts it shares with the version it replaces. A custom resource's untyped field (preserve-unknown-
fields) carries them: built-in kinds' typed fields refuse the other type. Compared with the real
kube-apiserver in its tier (NODEAGENT_KUBE_APISERVER=1, the `kube_apiserver` marker); the daemon's half
always runs.

A float without a fraction (`1.0`) in a custom resource: kube-apiserver decodes it as float64 and writes
it `1` (encoding/json), so that is what it answers and stores; nodeagent kept `1.0`, which a Go client's
int field cannot decode. Compared: the answers to a create and a merge patch. Not compared: whether
sending `1.0` over a stored `1` is a write, which depends upstream on whether the field manager's entry
gets a new second.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.integration import test_custom_resource_managed_fields as mf
from tests.integration.crd_served import wait_served
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration]


def scenario(send: mf.Send, plural: str) -> list[tuple[str, bool, Any]]:
    """Each step: (label, whether the resourceVersion moved, the stored spec.free after it)."""
    code, body = send("POST", mf.CRDS, mf._crd(plural), mf.JSON)
    assert code == 201, body
    base = f"/apis/{mf.GROUP}/v1/namespaces/default/{plural}"
    wait_served(lambda: send("GET", base, None, mf.JSON)[0])
    kind = plural[:-1].title()
    out: list[tuple[str, bool, Any]] = []

    def step(label: str, method: str, body: Any, ctype: str = mf.JSON) -> None:
        code, before = send("GET", f"{base}/w", None, mf.JSON)
        assert code == 200, before
        if method == "PUT":
            body = {**before, "spec": {**before["spec"], **body}}
        code, got = send(method, f"{base}/w", body, ctype)
        assert code == 200, (label, code, got)
        code, after = send("GET", f"{base}/w", None, mf.JSON)
        moved = after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
        assert got["spec"]["free"] == after["spec"]["free"], (label, got, after)
        out.append((label, moved, _typed(after["spec"]["free"])))

    try:
        obj = {"apiVersion": f"{mf.GROUP}/v1", "kind": kind, "metadata": {"name": "w"},
               "spec": {"free": {"n": 1, "deep": {"n": 1}, "list": [1, 0]}}}
        code, made = send("POST", base, obj, mf.JSON)
        assert code == 201, made
        step("true over 1", "PUT", {"free": {"n": True, "deep": {"n": 1}, "list": [1, 0]}})
        step("nested true over 1", "PUT", {"free": {"n": True, "deep": {"n": True}, "list": [1, 0]}})
        step("list items true/false over 1/0", "PUT", {"free": {"n": True, "deep": {"n": True}, "list": [True, False]}})
        step("the same again", "PUT", {"free": {"n": True, "deep": {"n": True}, "list": [True, False]}})
        step("merge patch 1 over nested true", "PATCH", {"spec": {"free": {"deep": {"n": 1}}}}, mf.MERGE)
        step("a label and 0 over false", "PATCH",
             {"metadata": {"labels": {"l": "1"}}, "spec": {"free": {"list": [True, 0]}}}, mf.MERGE)
    finally:
        send("DELETE", f"{mf.CRDS}/{plural}.{mf.GROUP}", None, mf.JSON)
    return out


def floats(send: mf.Send, plural: str) -> list[Any]:
    """The typed answers to a create and a merge patch holding floats with and without a fraction."""
    code, body = send("POST", mf.CRDS, mf._crd(plural), mf.JSON)
    assert code == 201, body
    base = f"/apis/{mf.GROUP}/v1/namespaces/default/{plural}"
    wait_served(lambda: send("GET", base, None, mf.JSON)[0])
    try:
        obj = {"apiVersion": f"{mf.GROUP}/v1", "kind": plural[:-1].title(), "metadata": {"name": "f"},
               "spec": {"replicas": 2, "free": {"one": 1.0, "half": 2.5, "big": 1e15, "neg": -3.0, "list": [3.0, 0.5]}}}
        code, made = send("POST", base, obj, mf.JSON)
        assert code == 201, made.get("message")
        code, patched = send("PATCH", f"{base}/f", {"spec": {"free": {"one": 4.0}}}, mf.MERGE)
        assert code == 200, patched
        code, got = send("GET", f"{base}/f", None, mf.JSON)
        # checked as a float64 before it is written as an integer: the scale subresource's path refuses it
        code, refused = send("PATCH", f"{base}/f", {"spec": {"replicas": 3.0}}, mf.MERGE)
        return [_typed(made["spec"]), _typed(patched["spec"]), _typed(got["spec"]), (code, refused.get("message"))]
    finally:
        send("DELETE", f"{mf.CRDS}/{plural}.{mf.GROUP}", None, mf.JSON)


def _typed(value: Any) -> Any:
    """`value` with every scalar shown with its JSON type (1 and true compare equal in Python)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return f"{type(value).__name__}:{value}"


EXPECTED = [
    ("true over 1", True, {"n": "bool:True", "deep": {"n": "int:1"}, "list": ["int:1", "int:0"]}),
    ("nested true over 1", True, {"n": "bool:True", "deep": {"n": "bool:True"}, "list": ["int:1", "int:0"]}),
    ("list items true/false over 1/0", True,
     {"n": "bool:True", "deep": {"n": "bool:True"}, "list": ["bool:True", "bool:False"]}),
    ("the same again", False, {"n": "bool:True", "deep": {"n": "bool:True"}, "list": ["bool:True", "bool:False"]}),
    ("merge patch 1 over nested true", True,
     {"n": "bool:True", "deep": {"n": "int:1"}, "list": ["bool:True", "bool:False"]}),
    ("a label and 0 over false", True, {"n": "bool:True", "deep": {"n": "int:1"}, "list": ["bool:True", "int:0"]}),
]


FLOATS: dict[str, Any] = {"replicas": "int:2", "mode": "str:a",
                         "free": {"one": "int:1", "half": "float:2.5", "big": "int:1000000000000000", "neg": "int:-3",
                                  "list": ["int:3", "float:0.5"]}}


def test_floats_without_a_fraction_are_integers(api_daemon: Daemon) -> None:
    made, patched, got, refused = floats(mf.daemon_send(api_daemon), f"exf{int(time.time() * 1000) % 10**8}s")
    assert made == FLOATS
    assert patched == got == {**FLOATS, "free": {**FLOATS["free"], "one": "int:4"}}
    assert refused[0] == 422 and ".spec.replicas accessor error: 3 is of the type float64, expected int64" in refused[1]


@pytest.mark.kube_apiserver
@pytest.mark.timeout(240)
def test_floats_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    plural = f"exg{int(time.time() * 1000) % 10**8}s"
    assert floats(mf.daemon_send(api_daemon), plural) == floats(mf.kube_send(kube_apiserver), plural)


def test_values_equal_only_by_python_are_written(api_daemon: Daemon) -> None:
    assert scenario(mf.daemon_send(api_daemon), f"exa{int(time.time() * 1000) % 10**8}s") == EXPECTED


@pytest.mark.kube_apiserver
@pytest.mark.timeout(240)
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    plural = f"exb{int(time.time() * 1000) % 10**8}s"
    assert scenario(mf.daemon_send(api_daemon), plural) == scenario(mf.kube_send(kube_apiserver), plural)
