"""Secrets through the registry: type Opaque by default, stringData folded into data and never
stored, ValidateSecret's per-type required keys, and ValidateSecretUpdate's immutability."""

from __future__ import annotations

import base64
from typing import Any

from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import MERGE_PATCH, Registry
from nodeagent.apiserver.selection import parse_field_selector
from tests.unit.corekinds.conftest import failure, res

SECRETS = res("secrets")
W = WriteOptions()


def secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_defaults_and_string_data(reg: Registry) -> None:
    made = reg.create(SECRETS, "default", secret("s", data={"a": b64("1")}, stringData={"a": "2", "b": "3"}), W).object
    assert made["type"] == "Opaque" and made["data"] == {"a": b64("2"), "b": b64("3")} and "stringData" not in made
    stored = reg.store.peek("Secret", "default", "s")
    assert stored is not None and "stringData" not in stored


def test_field_selector_on_type(reg: Registry) -> None:
    reg.create(SECRETS, "default", secret("o"), W)
    reg.create(SECRETS, "default", secret("t", type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""}), W)
    getters = reg.behaviour(SECRETS).strategy.field_getters()
    fsel = parse_field_selector("type=kubernetes.io/tls", getters, "Secret", "v1")
    items = reg.list(SECRETS, "default", None, fsel)[0]
    assert [i["metadata"]["name"] for i in items] == ["t"]


def test_validation_messages(reg: Registry) -> None:
    cases = [
        (secret("tls", type="kubernetes.io/tls"),
         "[data[tls.crt]: Required value, data[tls.key]: Required value]"),
        (secret("sa", type="kubernetes.io/service-account-token"),
         "metadata.annotations[kubernetes.io/service-account.name]: Required value"),
        (secret("dj", type="kubernetes.io/dockerconfigjson"), "data[.dockerconfigjson]: Required value"),
        (secret("ba", type="kubernetes.io/basic-auth"),
         "[data[username]: Required value, data[password]: Required value]"),
        (secret("key", data={"a b": ""}), 'data[a b]: Invalid value: "a b": a valid config key must consist of '
         "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
         "validation is '[-._a-zA-Z0-9]+')"),
    ]
    for body, message in cases:
        err = failure(lambda body=body: reg.create(SECRETS, "default", body, W))  # type: ignore[misc]
        name = body["metadata"]["name"]
        assert (err.code, err.message) == (422, f'Secret "{name}" is invalid: {message}'), name


def test_type_and_immutable_data_cannot_change(reg: Registry) -> None:
    reg.create(SECRETS, "default", secret("im", immutable=True, data={"a": b64("1")}), W)
    err = failure(lambda: reg.patch(SECRETS, "default", "im", "", MERGE_PATCH, {"data": {"a": b64("2")}}, W))
    assert err.message == 'Secret "im" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    err = failure(lambda: reg.patch(SECRETS, "default", "im", "", MERGE_PATCH, {"type": "other"}, W))
    assert err.message == 'Secret "im" is invalid: type: Invalid value: "other": field is immutable'
