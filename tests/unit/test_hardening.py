"""Start-up hardening (issue 15): exposure warnings, folder modes tightened, symlinked state refused."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from nodeagent import hardening
from nodeagent.config import NODEAGENT, Config, KubeletConfig, parse_agent
from nodeagent.errors import StartupError


def make_config(tmp_path: Path, metrics: str = "127.0.0.1:10255") -> Config:
    return Config(KubeletConfig(), parse_agent({
        "kind": NODEAGENT,
        "rootDir": str(tmp_path / "root"),
        "stateDir": str(tmp_path / "state"),
        "metricsBindAddress": metrics,
    }))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("addr", ["0.0.0.0:10255", ":10255", "[::]:10255"])
def test_metrics_on_every_interface_is_a_warning_naming_the_field(
    tmp_path: Path, addr: str, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = make_config(tmp_path, addr)
    [text] = hardening.exposure_warnings(cfg)
    assert text.startswith(f'NodeAgentConfiguration.metricsBindAddress: "{addr}" serves /metrics, /configz')
    with caplog.at_level(logging.WARNING, logger="nodeagent.hardening"):
        hardening.harden(cfg)
    assert "metricsBindAddress" in caplog.text


def test_loopback_metrics_is_quiet(tmp_path: Path) -> None:
    assert hardening.exposure_warnings(make_config(tmp_path)) == []
    assert hardening.exposure_warnings(make_config(tmp_path, "[::1]:10255")) == []


def test_wide_root_and_state_dirs_are_tightened(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = make_config(tmp_path)
    for d in (cfg.agent.root_dir, cfg.agent.state_dir):
        d.mkdir()
        os.chmod(d, 0o777)
    with caplog.at_level(logging.WARNING, logger="nodeagent.hardening"):
        hardening.harden(cfg)
    assert mode(cfg.agent.root_dir) == 0o750
    assert mode(cfg.agent.state_dir) == 0o700
    assert "rootDir mode tightened from 0777 to 0750" in caplog.text
    assert "stateDir mode tightened from 0777 to 0700" in caplog.text


def test_narrow_dirs_are_never_widened_and_missing_ones_not_created(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    cfg.agent.root_dir.mkdir()
    os.chmod(cfg.agent.root_dir, 0o700)
    hardening.harden(cfg)
    assert mode(cfg.agent.root_dir) == 0o700
    assert not cfg.agent.state_dir.exists()


def test_a_sticky_shared_folder_is_left_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with caplog.at_level(logging.WARNING, logger="nodeagent.hardening"):
        hardening.tighten_dir(shared, 0o750, "rootDir")
    assert mode(shared) == 0o1777
    assert "shared folder" in caplog.text


@pytest.mark.parametrize("name", ["state.db", "objects.db-wal", "cgroup", "kubeconfig"])
def test_symlinked_state_file_is_refused(tmp_path: Path, name: str) -> None:
    cfg = make_config(tmp_path)
    cfg.agent.state_dir.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (cfg.agent.state_dir / name).symlink_to(target)
    with pytest.raises(StartupError, match=f"{cfg.agent.state_dir / name}: is a symlink"):
        hardening.harden(cfg)
    assert target.read_text() == "keep"


def test_an_open_kubelet_endpoint_is_warned_about(tmp_path: Path) -> None:
    base = make_config(tmp_path)
    raw = {"authentication": {"anonymous": {"enabled": True}}, "authorization": {"mode": "AlwaysAllow"}}
    cfg = Config(KubeletConfig(raw=raw), base.agent)
    (text,) = hardening.exposure_warnings(cfg)
    assert "the kubelet endpoint on the node's InternalIPs answers anyone who reaches it" in text
    assert hardening.exposure_warnings(Config(KubeletConfig(raw={**raw, "address": "127.0.0.1"}), base.agent)) == []
    assert hardening.exposure_warnings(Config(KubeletConfig(raw=raw | {"authorization": {}}), base.agent)) == []
