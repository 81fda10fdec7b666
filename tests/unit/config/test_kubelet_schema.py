"""KubeletConfiguration v1beta1: every field of v1.37 accepted with its type checked, the unused ones listed.

The field table is compared with upstream's Go source (k8s.io/kubelet@v0.37.2 and the types it
embeds) when the Go module cache holds it; the complete real config in tests/fixtures/kubelet
loads through `check-config` and through the daemon's start-up path.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent import cli
from nodeagent import config as config_mod
from nodeagent.config import kubelet_schema as ks
from nodeagent.errors import ConfigError

FIXTURE = Path(__file__).parents[2] / "fixtures" / "kubelet" / "config-v1.37.yaml"
MOD = Path("/root/go/pkg/mod/k8s.io")
SOURCES = {
    "v1beta1": MOD / "kubelet@v0.37.2/config/v1beta1/types.go",
    "logsapi": MOD / "component-base@v0.37.2/logs/api/v1/types.go",
    "tracingapi": MOD / "component-base@v0.37.2/tracing/api/v1/types.go",
    "v1": MOD / "api@v0.37.2/core/v1/types.go",
}
# Named Go types whose JSON form is a scalar of the table (string enums, logsapi's own scalars).
_NAMED: dict[str, ks.Spec] = {
    "ImagePullCredentialsVerificationPolicy": ks.STRING, "KubeletAuthorizationMode": ks.STRING,
    "ResourceChangeDetectionStrategy": ks.STRING, "MemoryReservationPolicy": ks.STRING,
    "TaintEffect": ks.STRING, "VerbosityLevel": ks.UINT32, "TimeOrMetaDuration": ks.FLUSH,
    "metav1.Duration": ks.DURATION, "metav1.Time": ks.TIME, "resource.QuantityValue": ks.QUANTITY,
    "v1.ResourceList": ks.MapOf(ks.QUANTITY), "VModuleConfiguration": ks.ListOf(ks.Struct({})),
}
_SCALARS: dict[str, ks.Spec] = {"bool": ks.BOOL, "int32": ks.INT32, "int64": ks.INT64, "float64": ks.FLOAT64,
                               "string": ks.STRING}
_FIELD = re.compile(r"^\t(\w+)\s+(\S+)\s+`json:\"([^\",]*)")
_EMBEDDED = re.compile(r"^\t((?:\w+\.)?\w+)\s+`json:\"([^\",]*)")


def _structs(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """Every `type X struct {...}` of a Go file: X -> [(field, Go type, json name)]."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
        fields: list[tuple[str, str, str]] = []
        for line in m.group(2).splitlines():
            if f := _FIELD.match(line):
                fields.append((f.group(1), f.group(2), f.group(3)))
            elif e := _EMBEDDED.match(line):
                fields.append((e.group(1), e.group(1), e.group(2)))
        out[m.group(1)] = fields
    return out


def _upstream() -> dict[str, dict[str, list[tuple[str, str, str]]]]:
    return {pkg: _structs(path.read_text()) for pkg, path in SOURCES.items()}


def _spec(go: str, pkg: str, structs: dict[str, dict[str, list[tuple[str, str, str]]]]) -> ks.Spec:
    go = go.lstrip("*")
    if go.startswith("[]"):
        return ks.ListOf(_spec(go[2:], pkg, structs))
    if go.startswith("map[string]"):
        return ks.MapOf(_spec(go[len("map[string]"):], pkg, structs))
    if go in _SCALARS:
        return _SCALARS[go]
    if go == "VModuleConfiguration":
        return ks.ListOf(_spec("VModuleItem", pkg, structs))
    if go in _NAMED:
        return _NAMED[go]
    owner, _, name = go.rpartition(".")
    owner = owner or pkg
    fields: dict[str, ks.Spec] = {}
    for _field, ftype, json_name in structs[owner][name]:
        if json_name == "-" or ftype == "metav1.TypeMeta":  # apiVersion and kind: checked apart
            continue
        sub = _spec(ftype, owner, structs)
        if json_name == "" and isinstance(sub, ks.Struct):  # an embedded struct: its fields are inlined
            fields.update(sub.fields)
        elif json_name:
            fields[json_name] = sub
    return ks.Struct(fields)


@pytest.mark.skipif(not all(p.exists() for p in SOURCES.values()),
                    reason="k8s.io/kubelet@v0.37.2 (and its API modules) not in the Go module cache")
def test_the_table_is_upstreams_kubelet_configuration_field_for_field() -> None:
    upstream = _spec("KubeletConfiguration", "v1beta1", _upstream())
    assert isinstance(upstream, ks.Struct)
    assert list(upstream.fields) == list(ks.KUBELET_CONFIGURATION)
    for name, spec in upstream.fields.items():
        assert ks.KUBELET_CONFIGURATION[name] == spec, name


def test_the_fixture_sets_every_field() -> None:
    doc = yaml.safe_load(FIXTURE.read_text())
    assert set(doc) - {"apiVersion", "kind"} == set(ks.KUBELET_CONFIGURATION)


def test_a_complete_real_kubelet_config_loads_and_lists_what_nodeagent_ignores(tmp_path: Path) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text(FIXTURE.read_text())
    cfg = config_mod.load(path)
    assert cfg.kubelet.max_pods == 110 and cfg.kubelet.cgroup_driver == "systemd"
    ignored = config_mod.ignored_fields(cfg.kubelet)
    assert "failCgroupV1" in ignored and "userNamespaces" in ignored and "memoryReservationPolicy" in ignored
    assert "maxPods" not in ignored and "evictionHard" not in ignored and "featureGates" not in ignored


def test_check_config_lists_the_ignored_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text("kind: KubeletConfiguration\nfailCgroupV1: false\nmaxPods: 20\nclusterDomain: cluster.local\n")
    assert cli.main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr()
    assert yaml.safe_load(out.out)["kubeletconfig"]["maxPods"] == 20
    assert "accepted but not acted on: clusterDomain, failCgroupV1" in out.err


def test_run_logs_the_ignored_fields_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text("kind: KubeletConfiguration\nfailCgroupV1: false\n")
    cfg = config_mod.load(path)
    caplog.set_level(logging.INFO, logger="nodeagent.cli")
    cli.log_ignored_fields(cfg)
    lines = [r.getMessage() for r in caplog.records if "not acted on" in r.getMessage()]
    assert lines == ["KubeletConfiguration fields accepted but not acted on fields=failCgroupV1"]


K = "KubeletConfiguration"


@pytest.mark.parametrize(("doc", "message"), [
    ({"failCgroupV1": "no"}, f"{K}.failCgroupV1: expected boolean, got string"),
    ({"port": 70000000000}, f"{K}.port: Invalid value: 70000000000: out of range for int32"),
    ({"podPidsLimit": "1"}, f"{K}.podPidsLimit: expected integer, got string"),
    ({"memoryThrottlingFactor": True}, f"{K}.memoryThrottlingFactor: expected number, got boolean"),
    ({"syncFrequency": "1 minute"}, f'{K}.syncFrequency: invalid duration "1 minute" (e.g. "30s", "5m0s")'),
    ({"authentication": {"webhook": {"enabled": 1}}}, f"{K}.authentication.webhook.enabled: expected boolean, "
                                                     "got integer"),
    ({"authorization": {"mode": "Webhook", "cache": "1m"}}, f"{K}.authorization.cache: unknown field"),
    ({"clusterDNS": "10.0.0.10"}, f"{K}.clusterDNS: expected array, got string"),
    ({"staticPodURLHeader": {"A": "b"}}, f'{K}.staticPodURLHeader["A"]: expected array, got string'),
    ({"logging": {"verbosity": -1}}, f"{K}.logging.verbosity: Invalid value: -1: out of range for uint32"),
    ({"logging": {"options": {"json": {"infoBufferSize": "5XB"}}}},
     f'{K}.logging.options.json.infoBufferSize: invalid quantity "5XB"'),
    ({"registerWithTaints": [{"key": "a", "effect": "NoSchedule", "timeAdded": "yesterday"}]},
     f"{K}.registerWithTaints[0].timeAdded: expected an RFC 3339 time, got string"),
    ({"userNamespaces": {"idsPerPod": "65536"}}, f"{K}.userNamespaces.idsPerPod: expected integer, got string"),
    ({"kubeReserved": {"cpu": 1}}, f'{K}.kubeReserved["cpu"]: expected string, got integer'),
    ({"fooBar": 1}, f"{K}.fooBar: unknown field"),
])
def test_each_field_is_type_checked_as_go_decodes_it(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_mod.parse_documents([{"kind": K, **doc}])
    assert str(err.value) == message


def test_a_flush_frequency_may_be_integer_nanoseconds() -> None:
    config_mod.parse_documents([{"kind": K, "logging": {"flushFrequency": 5000000000}}])
