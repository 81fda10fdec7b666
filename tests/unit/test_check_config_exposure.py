"""`nodeagent check-config` warns, as the daemon's start does, when metrics listen on every interface."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodeagent.cli import main


def _config(tmp_path: Path, metrics: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration", "nodeName": "n",
        "rootDir": str(tmp_path / "root"), "stateDir": str(tmp_path / "state"), "metricsBindAddress": metrics,
    }))
    return path


@pytest.mark.parametrize("addr", ["0.0.0.0:10255", ":10255", "[::]:10255"])
def test_every_interface_is_warned_about(tmp_path: Path, addr: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", "--config", str(_config(tmp_path, addr))]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f'nodeagent: warning: NodeAgentConfiguration.metricsBindAddress: "{addr}" serves /metrics')


def test_loopback_is_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", "--config", str(_config(tmp_path, "127.0.0.1:10255"))]) == 0
    assert capsys.readouterr().err == ""
