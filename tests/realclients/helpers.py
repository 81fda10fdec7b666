"""What the real-clients tests share: a program run beside the daemon with its log kept, the
environment a container would get from its CDI devices, and pod-resources read with grpcurl."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.integration.daemon_helpers import Daemon


@dataclass
class Running:
    """A program started by `running`: its process and its log (stdout and stderr together)."""

    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def full_log(self) -> str:
        return self.log(chars=10**8)


@contextmanager
def running(argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None,
            stop_timeout: float = 15) -> Iterator[Running]:
    """Run argv until the block ends (SIGTERM, then SIGKILL after stop_timeout seconds)."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
        try:
            yield Running(proc, log_path)
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def pod_resources(d: Daemon, pod: str, namespace: str = "default") -> dict[str, Any]:
    """v1.PodResourcesLister/Get for one pod (proto field names), through grpcurl."""
    out = d.grpcurl(d.pod_resources, "v1.PodResourcesLister/Get",
                    data=json.dumps({"pod_name": pod, "pod_namespace": namespace}))
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)["pod_resources"]
    return result


def allocatable(d: Daemon) -> dict[str, Any]:
    """v1.PodResourcesLister/GetAllocatableResources, through grpcurl."""
    out = d.grpcurl(d.pod_resources, "v1.PodResourcesLister/GetAllocatableResources")
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout or "{}")
    return result


def cdi_devices(cdi_dirs: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Fully qualified CDI device name (vendor/class=name) -> the device's entry, from every spec file."""
    out: dict[str, dict[str, Any]] = {}
    for folder in cdi_dirs:
        for path in sorted(folder.glob("*.json")) + sorted(folder.glob("*.yaml")):
            try:
                spec = yaml.safe_load(path.read_text())  # JSON is YAML too
            except (OSError, yaml.YAMLError):
                continue
            for device in spec.get("devices") or []:
                out[f"{spec['kind']}={device['name']}"] = device
    return out


def container_cdi_ids(entry: Mapping[str, Any], container: str) -> list[str]:
    """The CDI device ids pod-resources lists for one container (device plugins' and claims')."""
    (ctr,) = [c for c in entry.get("containers") or [] if c["name"] == container]
    ids = [c["name"] for dev in ctr.get("devices") or [] for c in dev.get("cdi_devices") or []]
    for dyn in ctr.get("dynamic_resources") or []:
        for res in dyn.get("claim_resources") or []:
            ids.extend(c["name"] for c in res.get("cdi_devices") or [])
    return ids


def container_env(entry: Mapping[str, Any], container: str, cdi_dirs: Sequence[Path]) -> dict[str, str]:
    """The environment the container's CDI devices inject (what `export` prints in the demo pods)."""
    known = cdi_devices(cdi_dirs)
    env: dict[str, str] = {}
    for cdi_id in container_cdi_ids(entry, container):
        assert cdi_id in known, f"CDI device {cdi_id} is in no spec under {[str(p) for p in cdi_dirs]}"
        for item in (known[cdi_id].get("containerEdits") or {}).get("env") or []:
            key, _, value = item.partition("=")
            env[key] = value
    return env
