"""ConfigMap and Secret data validation as kube-apiserver v1.37.2 answers it (ValidateConfigMap,
ValidateSecret): the 1 MiB bound on the data (core.MaxSecretSize, a ConfigMap's data and decoded
binaryData together, a Secret's decoded data), a key in both of a ConfigMap's maps (reported on
`data[key]`), every bad key reported at once, on create and on update. When the kube-apiserver tier
runs (NODEAGENT_KUBE_APISERVER=1) the same requests give the real kube-apiserver's answers.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_object_size import Send, _daemon_send, _sender

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

MIB = 1024 * 1024
CMS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"


def _cm(name: str, data: dict[str, str] | None = None, binary: dict[str, bytes] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    if data is not None:
        out["data"] = data
    if binary is not None:
        out["binaryData"] = {k: base64.b64encode(v).decode() for k, v in binary.items()}
    return out


def _secret(name: str, data: dict[str, bytes]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def _outcome(code: int, doc: Any) -> tuple[Any, ...]:
    if code >= 300:
        causes = [(c.get("reason"), c.get("field"), c.get("message"))
                  for c in (doc.get("details") or {}).get("causes") or ()]
        return code, doc.get("reason"), doc.get("message"), causes
    return (code,)


def scenarios(send: Send) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}

    def create(what: str, path: str, obj: dict[str, Any]) -> None:
        send("DELETE", f"{path}/{obj['metadata']['name']}")
        out[what] = _outcome(*send("POST", path, obj))

    half = "x" * (MIB // 2)
    create("configmap data at the bound", CMS, _cm("cdv-at", {"a": half, "b": half}))
    create("configmap data over the bound", CMS, _cm("cdv-over", {"a": half, "b": half + "x"}))
    create("configmap data and binaryData over", CMS, _cm("cdv-both", {"a": half}, {"b": b"y" * (MIB // 2 + 1)}))
    create("configmap binaryData at the bound", CMS, _cm("cdv-bin", None, {"b": b"y" * MIB}))
    create("configmap key in both maps", CMS, _cm("cdv-dup", {"k": "1", "z": "2"}, {"k": b"1"}))
    # one bad key per map: kube-apiserver reports a map's keys in Go's (random) map order
    create("configmap bad keys", CMS, _cm("cdv-keys", {"a/b": "1", "ok": "3"}, {"c d": b"1", "fine": b"2"}))
    create("configmap key '..'", CMS, _cm("cdv-dots", {"ok": "1"}, {"..": b"2"}))
    # one failing key per map again (Go's map order), each with the size error after it
    create("configmap bad key and too large", CMS, _cm("cdv-all", {"a/b": half, "b": half + "x"}))
    create("configmap duplicate and too large", CMS, _cm("cdv-dup2", {"k": half, "b": half + "x"}, {"k": b"1"}))
    create("configmap value not a string", CMS, {**_cm("cdv-type"), "data": {"a": 1}})
    create("configmap small", CMS, _cm("cdv-small", {"a": "1"}))
    code, doc = send("GET", f"{CMS}/cdv-small")
    if code == 200:
        doc["data"] = {"a": half, "b": half, "c": "x"}
        out["configmap update over the bound"] = _outcome(*send("PUT", f"{CMS}/cdv-small", doc))
    create("secret data at the bound", SECRETS, _secret("cdv-s-at", {"a": b"s" * MIB}))
    create("secret data over the bound", SECRETS, _secret("cdv-s-over", {"a": b"s" * MIB, "b": b"t"}))
    create("secret bad key and over the bound", SECRETS, _secret("cdv-s-key", {"a/b": b"s" * (MIB + 1)}))
    for path, name in ((CMS, "cdv-at"), (CMS, "cdv-bin"), (CMS, "cdv-small"), (SECRETS, "cdv-s-at")):
        send("DELETE", f"{path}/{name}")
    return out


TOO_LONG = ("FieldValueTooLong", "[]")
EXPECTED: dict[str, tuple[int, list[tuple[str, str]]]] = {
    # the code and each cause's (reason, field); the texts are kube-apiserver's (the tier's twin compares them)
    "configmap data at the bound": (201, []),
    "configmap data over the bound": (422, [TOO_LONG]),
    "configmap data and binaryData over": (422, [TOO_LONG]),
    "configmap binaryData at the bound": (201, []),
    "configmap key in both maps": (422, [("FieldValueInvalid", "data[k]")]),
    "configmap bad keys": (422, [("FieldValueInvalid", "data[a/b]"), ("FieldValueInvalid", "binaryData[c d]")]),
    "configmap key '..'": (422, [("FieldValueInvalid", "binaryData[..]")]),
    "configmap bad key and too large": (422, [("FieldValueInvalid", "data[a/b]"), TOO_LONG]),
    "configmap duplicate and too large": (422, [("FieldValueInvalid", "data[k]"), TOO_LONG]),
    "configmap value not a string": (400, []),
    "configmap small": (201, []),
    "configmap update over the bound": (422, [TOO_LONG]),
    "secret data at the bound": (201, []),
    "secret data over the bound": (422, [("FieldValueTooLong", "data")]),
    "secret bad key and over the bound": (422, [("FieldValueInvalid", "data[a/b]"), ("FieldValueTooLong", "data")]),
}


def test_config_data_validation(api_daemon: Daemon) -> None:
    answers = scenarios(_daemon_send(api_daemon))
    got = {k: (v[0], [c[:2] for c in v[3]] if len(v) > 1 else []) for k, v in answers.items()}
    differ = {k: (got.get(k), v) for k, v in EXPECTED.items() if got.get(k) != v}
    assert not differ, differ
    assert set(got) == set(EXPECTED)


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = scenarios(_daemon_send(api_daemon))
    theirs = scenarios(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
    differ = [(k, ours[k], theirs.get(k)) for k in ours if ours[k] != theirs.get(k)]
    assert not differ, "\n".join(f"{k}:\n ours   {a}\n theirs {b}" for k, a, b in differ)
