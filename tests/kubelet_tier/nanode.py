"""The nodeagent node of the tier: `nodeagent run` joined to the tier's kube-apiserver with its own
credentials (system:node:NAME), the same KubeletConfiguration document as the real kubelet, and no
node profile (the shape is probed from this machine, as the kubelet's cadvisor does)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from tests.integration.daemon_helpers import connectable
from tests.kubelet_tier.realnode import rooted


@dataclass
class NodeAgentNode:
    name: str
    base: Path
    kubeconfig: Path
    proc: subprocess.Popen[bytes] | None = field(init=False, default=None)
    _logs: list[IO[bytes]] = field(init=False, default_factory=list)

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def log(self) -> Path:
        return self.base / "nodeagent.log"

    def config_docs(self, kubelet_config: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
             **rooted(kubelet_config, str(self.root))},
            {"apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration", "nodeName": self.name,
             "rootDir": str(self.root), "stateDir": str(self.state), "adminSocket": str(self.base / "admin.sock"),
             "metricsBindAddress": "127.0.0.1:0", "cluster": {"kubeconfig": str(self.kubeconfig)}},
        ]

    def start(self, kubelet_config: dict[str, Any]) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.base.mkdir(parents=True, exist_ok=True)
        config = self.base / "config.yaml"
        config.write_text(yaml.safe_dump_all(self.config_docs(kubelet_config)))
        log = self.log.open("ab")
        self._logs.append(log)
        self.proc = subprocess.Popen([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(config)],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while not connectable(self.root / "pod-resources" / "kubelet.sock"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"nodeagent did not start ({self.proc.poll()}): {self.log.read_text()[-3000:]}")
            time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wipe(self) -> None:
        """Forget the node's state (a new KubeletConfiguration group starts from a fresh node)."""
        shutil.rmtree(self.state, ignore_errors=True)
        for sub in ("cpu_manager_state", "memory_manager_state", "dra_manager_state"):
            (self.root / sub).unlink(missing_ok=True)
        (self.root / "device-plugins" / "kubelet_internal_checkpoint").unlink(missing_ok=True)

    def close(self) -> None:
        self.stop()
        for log in self._logs:
            log.close()
