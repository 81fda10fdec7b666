"""Every line of nodeagent.protowire's tables against upstream's own definitions (k8s.io/api v0.37.2).

Why this is the check that the tables cannot drift: each field a table names must exist upstream
under the same number and JSON name, with the same type (generated.proto: scalar, message,
repeated, map) and the same Go presence (types.go: pointer, omitempty, inline embedding), which
is what both the API server's decoder (which JSON keys encoding/json writes) and the Pods API's
encoder (which fields gogo's Marshal writes) depend on. Upstream's sources come from the Go module
cache (k8s.io/api and k8s.io/apimachinery at the release nodeagent follows); without it the test
skips saying so. Fields upstream has that a table leaves out are allowed (a partial table drops
them, it never misreads them) and are not listed here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from nodeagent.protowire.notation import SCALARS, Field, message
from nodeagent.protowire.packages import PACKAGES

MOD = Path(os.environ.get("GOMODCACHE", "/root/go/pkg/mod")) / "k8s.io"
API = MOD / "api@v0.37.2"
MACHINERY = MOD / "apimachinery@v0.37.2"
EXTENSIONS = MOD / "apiextensions-apiserver@v0.37.2"
AGGREGATOR = MOD / "kube-aggregator@v0.37.2"
API_1_31 = MOD / "api@v0.31.0"
"""Classic DRA's v1alpha3 (KEP-3063, removed after 1.31): `go mod download k8s.io/api@v0.31.0` puts it here."""

# Table package -> the upstream Go packages it transcribes (resource.v1 also serves v1beta2, whose
# messages are v1's field for field; DeviceTaintRule's are v1alpha3's too).
SOURCES: dict[str, tuple[Path, ...]] = {
    "meta": (MACHINERY / "pkg/apis/meta/v1",),
    "core": (API / "core/v1",),
    "coordination": (API / "coordination/v1",),
    "events": (API / "events/v1",),
    "resource.v1": (API / "resource/v1", API / "resource/v1beta2"),
    "resource.v1beta1": (API / "resource/v1beta1",),
    "storage": (API / "storage/v1",),
    "apps": (API / "apps/v1",),
    "batch": (API / "batch/v1",),
    "autoscaling": (API / "autoscaling/v1",),
    "policy": (API / "policy/v1",),
    "scheduling": (API / "scheduling/v1",),
    "discovery": (API / "discovery/v1",),
    "rbac": (API / "rbac/v1",),
    "authorization": (API / "authorization/v1",),
    "authentication": (API / "authentication/v1",),
    "autoscaling.v2": (API / "autoscaling/v2",),
    "admissionregistration": (API / "admissionregistration/v1",),
    "certificates": (API / "certificates/v1",),
    "networking": (API / "networking/v1",),
    "node": (API / "node/v1",),
    "storagemigration": (API / "storagemigration/v1",),
    "apiextensions": (EXTENSIONS / "pkg/apis/apiextensions/v1",),
    "apiregistration": (AGGREGATOR / "pkg/apis/apiregistration/v1",),
    "resource.v1alpha3": (API / "resource/v1beta1",),
}
CLASSIC_MESSAGES = ("PodSchedulingContext", "PodSchedulingContextSpec", "PodSchedulingContextStatus",
                    "ResourceClaimSchedulingStatus")
CLASSIC_FIELDS = {"ResourceClaimSpec": {2}, "ResourceClaimStatus": {3}, "AllocationResult": {4}}
"""Classic DRA's v1alpha3 tables are v1beta1's messages, these 1.31 fields (by number) and these 1.31 messages."""
ALSO_V1ALPHA3 = ("DeviceTaintRule", "DeviceTaintRuleSpec", "DeviceTaintSelector", "DeviceTaintRuleStatus",
                 "DeviceTaint")

BUILTIN_PROTO = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "FieldsV1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RawExtension",
}
OWN_BUILTIN = {("certificates", "ExtraValue"): "StringList", ("authorization", "ExtraValue"): "StringList",
               ("authentication", "AttestationValue"): "StringList"}
"""A message of the package itself that a table spells as a builtin: (table package, name) -> builtin."""
PROTO_PACKAGES = {"k8s.io.apimachinery.pkg.apis.meta.v1": "meta", "k8s.io.api.core.v1": "core"}


@dataclass(frozen=True)
class ProtoField:
    """A generated.proto field: its type as a table would spell it, and repeated/map."""

    name: str
    kind: str
    label: str


@dataclass(frozen=True)
class GoField:
    """A Go struct field: what its type and tags say about presence."""

    go_name: str
    pointer: bool
    omitempty: bool
    inline: bool


def _proto_type(raw: str, own: str) -> str:
    raw = raw.lstrip(".")
    if raw in BUILTIN_PROTO:
        return BUILTIN_PROTO[raw]
    pkg, _, short = raw.rpartition(".")
    if not pkg:
        return OWN_BUILTIN.get((own, raw), raw)
    return short if PROTO_PACKAGES.get(pkg) == own else f"{PROTO_PACKAGES.get(pkg, pkg)}.{short}"


def proto_messages(folder: Path, own: str) -> dict[str, dict[int, ProtoField]]:
    """Top-level messages of folder/generated.proto: number -> field."""
    text = (folder / "generated.proto").read_text()
    out: dict[str, dict[int, ProtoField]] = {}
    for match in re.finditer(r"^message (\w+) \{\n(.*?)^\}", text, re.M | re.S):
        fields: dict[int, ProtoField] = {}
        for line in match.group(2).splitlines():
            line = line.split("//")[0].strip()
            m = re.fullmatch(r"(optional|repeated)?\s*(map<string, ([\w.]+)>|[\w.]+) (\w+) = (\d+);", line)
            if not m:
                continue
            label = "{}" if m.group(3) else ("[]" if m.group(1) == "repeated" else "")
            fields[int(m.group(5))] = ProtoField(m.group(4), _proto_type(m.group(3) or m.group(2), own), label)
        out[match.group(1)] = fields
    return out


def go_structs(folder: Path) -> dict[str, dict[int, GoField]]:
    """Struct fields with a protobuf tag, by number, from the package's hand-written Go files."""
    out: dict[str, dict[int, GoField]] = {}
    for path in sorted(folder.glob("*.go")):
        if path.name.startswith(("generated", "zz_")) or path.name.endswith("_test.go"):
            continue
        text = path.read_text()
        for match in re.finditer(r"^type (\w+) struct ?\{\}", text, re.M):  # a message without fields
            out[match.group(1)] = {}
        for match in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
            fields: dict[int, GoField] = {}
            for line in match.group(2).splitlines():
                m = re.fullmatch(r"\s*(?:(\w+)\s+)?([^\s`]+)\s+`([^`]*)`\s*(//.*)?", line)
                if not m:
                    continue
                tags = dict(re.findall(r'(\w+):"([^"]*)"', m.group(3)))
                if tags.get("protobuf", "-") == "-":
                    continue
                number = int(tags["protobuf"].split(",")[1])
                json_opts = tags.get("json", "").split(",")
                go_type = m.group(2)
                fields[number] = GoField(
                    go_name=m.group(1) or go_type.rpartition(".")[2].lstrip("*"),
                    pointer=go_type.startswith("*"),
                    omitempty="omitempty" in json_opts[1:],
                    # encoding/json inlines an embedded struct whose tag names no key
                    # (`json:",inline"` and `json:""` alike).
                    inline=m.group(1) is None and json_opts[0] == "")
            out[match.group(1)] = fields
    return out


def problems(pkg: str, name: str, table: dict[int, Field], proto: dict[int, ProtoField],
             go: dict[int, GoField], where: str) -> list[str]:
    """What a table line says that upstream's message and struct do not."""
    out: list[str] = []
    for number, field in table.items():
        line = f"{where} {pkg}.{name} {number} {field.name}"
        up, gof = proto.get(number), go.get(number)
        if up is None or gof is None:
            out.append(f"{line}: no field {number} upstream")
            continue
        if field.label == "^":
            if not gof.inline or field.name != gof.go_name or field.kind != up.kind:
                out.append(f"{line}: upstream embeds {gof.go_name} ({up.kind}) inline={gof.inline}")
            continue
        # a few upstream messages name a field capitalised in generated.proto (admissionregistration's
        # Validation and Variable: `name=Expression` in the Go tag); the JSON name is still lower case
        if field.name != up.name and field.name != up.name[:1].lower() + up.name[1:] and \
                JSON_NAMED.get((pkg, name, number)) != field.name:
            out.append(f"{line}: upstream names field {number} {up.name!r}")
        if field.kind != up.kind or field.label != up.label:
            out.append(f"{line}: type {field.label}{field.kind}, upstream {up.label}{up.kind}")
        if field.label:
            continue
        if field.kind in SCALARS:
            want = "?" if gof.pointer else ("" if gof.omitempty else "!")
        else:
            want = "*" if gof.pointer else ""
        if field.presence != want:
            out.append(f"{line}: presence {field.presence!r}, upstream's Go field wants {want!r}")
    return out


JSON_NAMED = {
    ("authentication", "BoundObjectReference", 4): "uid",
    ("networking", "IngressClassParametersReference", 1): "apiGroup",
    **{("apiextensions", "JSONSchemaProps", n): name for n, name in (
        (2, "$schema"), (3, "$ref"), (38, "x-kubernetes-preserve-unknown-fields"),
        (39, "x-kubernetes-embedded-resource"), (40, "x-kubernetes-int-or-string"),
        (41, "x-kubernetes-list-map-keys"), (42, "x-kubernetes-list-type"), (43, "x-kubernetes-map-type"),
        (44, "x-kubernetes-validations"))},
}
"""Fields whose generated.proto name differs from their JSON name beyond the first letter's case
(BoundObjectReference's `name=uID` tag, JSON `uid`; IngressClassParametersReference's `aPIGroup`,
JSON `apiGroup`; JSONSchemaProps' `$ref` and `x-kubernetes-*`):
the tables use JSON names."""


def _sources(pkg: str, name: str) -> tuple[Path, ...]:
    if pkg == "resource.v1alpha3" and name in CLASSIC_MESSAGES:
        return (API_1_31 / "resource/v1alpha3",)
    if pkg == "resource.v1alpha3" and name in CLASSIC_FIELDS:
        return (*SOURCES[pkg], API_1_31 / "resource/v1alpha3")
    extra = (API / "resource/v1alpha3",) if pkg == "resource.v1" and name in ALSO_V1ALPHA3 else ()
    return SOURCES[pkg] + extra


def _lines(pkg: str, name: str, table: dict[int, Field], folder: Path) -> dict[int, Field]:
    """The lines of `table` that `folder` transcribes (a classic DRA claim message: its 1.31 fields
    from 1.31's package, the others from v1beta1's)."""
    if pkg != "resource.v1alpha3" or name not in CLASSIC_FIELDS:
        return table
    classic = folder.is_relative_to(API_1_31)
    return {n: f for n, f in table.items() if (n in CLASSIC_FIELDS[name]) == classic}


def test_every_table_line_matches_upstream() -> None:
    if not (API / "core/v1/generated.proto").is_file() or not (MACHINERY / "pkg/apis/meta/v1/types.go").is_file():
        pytest.skip(f"k8s.io/api and k8s.io/apimachinery v0.37.2 are not in the Go module cache ({MOD})")
    found: list[str] = []
    skipped: set[Path] = set()
    cache: dict[Path, tuple[dict[str, dict[int, ProtoField]], dict[str, dict[int, GoField]]]] = {}
    for pkg, messages in PACKAGES.items():
        own = "meta" if pkg == "meta" else ("core" if pkg == "core" else pkg)
        for name, table in messages.items():
            for folder in _sources(pkg, name):
                if folder.is_relative_to(API_1_31) and not folder.is_dir():
                    skipped.add(folder)
                    continue
                if folder not in cache:
                    cache[folder] = (proto_messages(folder, own), go_structs(folder))
                protos, structs = cache[folder]
                where = folder.relative_to(MOD).as_posix()
                if name not in protos or name not in structs:
                    found.append(f"{where}: no message {name}")
                    continue
                found += problems(pkg, name, _lines(pkg, name, dict(table), folder), protos[name], structs[name],
                                  where)
    assert found == []
    if skipped:
        pytest.skip(f"classic DRA's tables not checked: {sorted(map(str, skipped))} is not in the Go module "
                    "cache (`go mod download k8s.io/api@v0.31.0`)")


def test_the_check_sees_a_wrong_line() -> None:
    """The comparison itself: a wrong number, name, type or presence is each reported."""
    if not (API / "core/v1/generated.proto").is_file():
        pytest.skip(f"k8s.io/api v0.37.2 is not in the Go module cache ({MOD})")
    protos, structs = proto_messages(API / "core/v1", "core"), go_structs(API / "core/v1")
    wrong = message("1 name string; 2 value string; 3 effect string!; 4 timeAdded Time; 5 extra string")
    assert problems("core", "Taint", dict(wrong), protos["Taint"], structs["Taint"], "t") == [
        "t core.Taint 1 name: upstream names field 1 'key'",
        "t core.Taint 1 name: presence '', upstream's Go field wants '!'",
        "t core.Taint 4 timeAdded: presence '', upstream's Go field wants '*'",
        "t core.Taint 5 extra: no field 5 upstream",
    ]


def _definition(folder: Path, name: str) -> str:
    """The OpenAPI definition name of upstream message `name` in `folder` (io.k8s.api.core.v1.Pod)."""
    module, *rest = folder.relative_to(MOD).parts
    return ".".join(("io.k8s", module.split("@")[0], *rest, name))


def test_no_upstream_field_is_left_out_but_the_unserved_alpha_ones() -> None:
    """A table that leaves a field out drops it from protobuf answers and requests, while JSON would
    carry it wherever the schema keeps it: so every field upstream's message has is in its table,
    except the alpha fields nodeagent's schemas do not serve either (pruned from every write, JSON
    included, as upstream with their gates off: test_schema_drift.NOT_SERVED names each with its gate)."""
    if not (API / "core/v1/generated.proto").is_file():
        pytest.skip(f"k8s.io/api v0.37.2 is not in the Go module cache ({MOD})")
    from tests.unit.apiserver.test_schema_drift import NOT_SERVED
    left_out: list[str] = []
    cache: dict[Path, dict[str, dict[int, ProtoField]]] = {}
    for pkg, messages in PACKAGES.items():
        own = "meta" if pkg == "meta" else ("core" if pkg == "core" else pkg)
        for name, table in messages.items():
            for folder in _sources(pkg, name):
                if not folder.is_dir():
                    continue  # classic DRA's 1.31 package, checked when present (above)
                if folder not in cache:
                    cache[folder] = proto_messages(folder, own)
                for number, up in cache[folder].get(name, {}).items():
                    json_name = up.name[:1].lower() + up.name[1:]
                    if number not in table and json_name not in NOT_SERVED.get(_definition(folder, name), {}):
                        left_out.append(f"{_definition(folder, name)} {number} {json_name}")
    assert left_out == []
