"""A custom resource's published OpenAPI compared with the real kube-apiserver's: the same CRDs created on
both (a plain one, one with x-kubernetes-preserve-unknown-fields at the root, one with an embedded resource
and its own listKind, one with two versions), then each version's kind and List definitions in /openapi/v2
and in /openapi/v3/apis/<group>/<version>, `kubectl explain <plural>` and `kubectl explain
<plural>.metadata.ownerReferences`, and the kind of a list response. What kubectl explain showed before:
spec and status only (the definitions had no apiVersion, kind or metadata). Runs against kube-apiserver
only in its tier (NODEAGENT_KUBE_APISERVER=1, the `kube_apiserver` marker); the daemon's half always runs.

Differences left, on purpose: the ownerReferences explanation's description text (_without_descriptions);
a whole-number minimum/maximum is written 3.0 where Go writes 3 (the same JSON number: compared parsed).
The plain CRD's selectableFields (one version: v1 conversion lifts them to the top level) and the
two-version CRD's (other fields in each version) are published as x-kubernetes-selectable-fields on each
version's kind and List.
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.crd_served import wait_present
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_custom_resource_managed_fields import CRDS, JSON, Send, daemon_send, kube_send

pytestmark = [pytest.mark.integration]

GROUP = "oa.example.com"
Kubectl = Callable[..., str]


def _version(name: str, schema: dict[str, Any], *, storage: bool = True) -> dict[str, Any]:
    return {"name": name, "served": True, "storage": storage, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": schema}}


def _crd(plural: str, kind: str, versions: list[dict[str, Any]], list_kind: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": kind,
                           "listKind": list_kind or kind + "List"},
                 "versions": versions},
    }


_SPEC = {
    "type": "object", "description": "What the widget should be.",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "format": "int32", "minimum": 1, "description": "How big."},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "note": {"type": "string", "nullable": True},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "anything": {"type": "object", "additionalProperties": True},
        "checked": {"type": "number", "multipleOf": 0.5, "maximum": 3, "exclusiveMaximum": True,
                    "x-kubernetes-validations": [{"rule": "self > 0.0", "message": "positive"}]},
        "either": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
                   "oneOf": [{"required": ["x"]}, {"required": ["y"]}]},
        "nullables": {"type": "array", "items": {"type": "object", "nullable": True,
                                                 "properties": {"q": {"type": "string"}}}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"],
                            "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}}},
    },
}
_STATUS = {"type": "object", "properties": {"phase": {"type": "string"}}}


def crds(suffix: str) -> list[tuple[dict[str, Any], list[str]]]:
    """The CRDs, and the versions whose documents are compared."""
    plain = {"type": "object", "description": "A widget.", "properties": {"spec": _SPEC, "status": _STATUS}}
    preserve = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}
    embedded = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": True, "description": "An object.",
                     "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
        "loose": {"type": "object", "x-kubernetes-embedded-resource": True,
                  "x-kubernetes-preserve-unknown-fields": True}}}}}
    older = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"old": {"type": "string"}}}}}
    plain_v1 = {**_version("v1", plain), "selectableFields": [{"jsonPath": ".spec.mode"}]}
    two_v1 = {**_version("v1", plain), "selectableFields": [{"jsonPath": ".spec.size"}, {"jsonPath": ".spec.mode"}]}
    two_v1beta1 = {**_version("v1beta1", older, storage=False), "selectableFields": [{"jsonPath": ".spec.old"}]}
    return [
        (_crd(f"plains{suffix}", "Plain", [plain_v1]), ["v1"]),
        (_crd(f"loose{suffix}s", "Loose", [_version("v1", preserve)]), ["v1"]),
        (_crd(f"embeds{suffix}", "Embed", [_version("v1", embedded)], list_kind="EmbedCollection"), ["v1"]),
        (_crd(f"twos{suffix}", "Two", [two_v1, two_v1beta1]), ["v1", "v1beta1"]),
    ]


def published(send: Send, kubectl: Kubectl, suffix: str) -> dict[str, Any]:
    """Each compared version's definitions (v2 and v3, the kind's and its List's) and kubectl explain's output."""
    out: dict[str, Any] = {}
    made = []
    try:
        for crd, _ in crds(suffix):
            code, body = send("POST", CRDS, crd, JSON)
            assert code == 201, body
            made.append(crd["metadata"]["name"])
        for crd, versions in crds(suffix):
            names_ = crd["spec"]["names"]
            kind, plural = names_["kind"], names_["plural"]
            for version in versions:
                names = [f"com.example.oa.{version}.{k}" for k in (kind, names_["listKind"])]

                def v2(names: list[str] = names) -> Any:
                    code, doc = send("GET", "/openapi/v2", None, JSON)
                    defs = doc.get("definitions", {}) if code == 200 else {}
                    return {n: defs[n] for n in names} if all(n in defs for n in names) else None

                def v3(names: list[str] = names, version: str = version) -> Any:
                    code, doc = send("GET", f"/openapi/v3/apis/{GROUP}/{version}", None, JSON)
                    defs = doc.get("components", {}).get("schemas", {}) if code == 200 else {}
                    return {n: defs[n] for n in names} if all(n in defs for n in names) else None

                out[f"{plural} {version} v2"] = wait_present(f"{plural} {version} v2", v2, 90)
                out[f"{plural} {version} v3"] = wait_present(f"{plural} {version} v3", v3, 90)
            def listed(plural: str = plural, version: str = versions[0]) -> Any:
                # the real server answers 429 (its storage not ready) or 404 for a moment after Established
                code, body = send("GET", f"/apis/{GROUP}/{version}/namespaces/default/{plural}", None, JSON)
                return body.get("kind") if code == 200 else None

            out[f"list {plural} kind"] = wait_present(f"{plural} list", listed, 90)
            out[f"explain {plural}"] = kubectl("explain", plural)
            out[f"explain {plural}.metadata.ownerReferences"] = _without_descriptions(
                kubectl("explain", f"{plural}.metadata.ownerReferences"))
    finally:
        for name in made:
            send("DELETE", f"{CRDS}/{name}", None, JSON)
    return out


def _without_descriptions(explained: str) -> str:
    """kubectl explain's output without its description text (the lines indented four spaces), leaving the
    header and each field's name, type and -required-. Intended difference: the descriptions under
    metadata come from the built-in ObjectMeta and OwnerReference definitions (schema/builtin), which
    nodeagent words more briefly than upstream's generated swagger docs for every kind, built-in ones too;
    this comparison is about what the custom resource's definition adds, not about those texts."""
    return "\n".join(line for line in explained.splitlines() if not line.startswith("    "))


def _daemon_kubectl(d: Daemon, cache: Path) -> Kubectl:
    def run(*args: str) -> str:
        return d.kubectl("--cache-dir", str(cache), *args).stdout
    return run


def _kube_kubectl(server: KubeAPIServer, cache: Path) -> Kubectl:
    def run(*args: str) -> str:
        return server.kubectl("--cache-dir", str(cache), *args).stdout
    return run


def test_custom_resource_openapi_has_type_and_object_meta(api_daemon: Daemon, tmp_path: Path) -> None:
    suffix = str(int(time.time() * 1000) % 10**8)
    got = published(daemon_send(api_daemon), _daemon_kubectl(api_daemon, tmp_path), suffix)
    plain = got[f"plains{suffix} v1 v3"]["com.example.oa.v1.Plain"]
    assert {"apiVersion", "kind", "metadata", "spec", "status"} <= set(plain["properties"])
    assert "ownerReferences" in got[f"explain plains{suffix}.metadata.ownerReferences"]
    assert got[f"loose{suffix}s v1 v2"]["com.example.oa.v1.Loose"].get("properties") is None
    twos = got[f"twos{suffix} v1beta1 v3"]
    for name in ("com.example.oa.v1beta1.Two", "com.example.oa.v1beta1.TwoList"):
        assert twos[name]["x-kubernetes-selectable-fields"] == [{"fieldPath": "spec.old"}]
    assert "x-kubernetes-selectable-fields" not in got[f"embeds{suffix} v1 v2"]["com.example.oa.v1.Embed"]


@pytest.mark.kube_apiserver
@pytest.mark.timeout(400)
def test_custom_resource_openapi_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer,
                                                   tmp_path: Path) -> None:
    suffix = str(int(time.time() * 1000) % 10**8)
    ours = published(daemon_send(api_daemon), _daemon_kubectl(api_daemon, tmp_path / "ours"), suffix)
    theirs = published(kube_send(kube_apiserver), _kube_kubectl(kube_apiserver, tmp_path / "theirs"), suffix)
    assert list(ours) == list(theirs)
    failures = []
    for key in ours:
        a, b = ours[key], theirs[key]
        if a != b:
            left = a.splitlines() if isinstance(a, str) else json.dumps(a, indent=1, sort_keys=True).splitlines()
            right = b.splitlines() if isinstance(b, str) else json.dumps(b, indent=1, sort_keys=True).splitlines()
            diff = difflib.unified_diff(left, right, "nodeagent", "kube-apiserver", lineterm="", n=3)
            failures.append(f"{key}:\n" + "\n".join(diff))
    assert not failures, "\n\n".join(failures)
