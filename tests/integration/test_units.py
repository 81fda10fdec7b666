"""systemd units: `systemd-analyze verify` finds nothing, and the directives the design requires are there.

systemd-analyze verify exits 0 on an unknown or misspelled directive and only prints a
warning, so the check here treats every line of output as a problem, except lines about
unit files that are not ours (the distribution's targets the units depend on).

The units start the programs the README's install puts into a virtualenv under /opt/nodeagent
(Debian 12 refuses `pip install` into the system Python). Each unit is verified, unchanged,
under a throwaway --root where that install's console scripts exist, so an ExecStart that
names any other path is "not executable".
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "systemd"
UNIT_NAMES = sorted(p.name for p in UNITS.glob("*.service"))
VENV = Path("/opt/nodeagent")  # the README's install: python3 -m venv /opt/nodeagent
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
SYSTEMD_ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"

# Output that says something about the machine, not about the unit under test:
# warnings in the distribution's own unit files loaded as dependencies.
HARMLESS = [re.compile(r"^(/usr)?/lib/systemd/system/\S+:"), re.compile(r"^/etc/systemd/system/\S+:")]

needs_analyze = pytest.mark.skipif(
    not Path(SYSTEMD_ANALYZE).exists(), reason="systemd-analyze not installed (Debian package systemd)"
)


@functools.cache
def _supports(flag: str) -> bool:
    out = subprocess.run([SYSTEMD_ANALYZE, "--help"], capture_output=True, text=True, timeout=20)
    return flag in out.stdout


def with_exec_start(text: str, binary: str) -> str:
    """Point every Exec*= line at an existing binary; the real one is not installed here."""
    return re.sub(r"^(Exec\w+=[-+!@:]*)(\S+)", lambda m: m.group(1) + binary, text, flags=re.MULTILINE)


def verify(unit_text: str, name: str, folder: Path, root: Path | None = None) -> list[str]:
    """Problems systemd-analyze verify reports for a unit (an empty list means clean); with root,
    the unit's paths (ExecStart's program) are looked up under that directory instead of /."""
    path = folder / name if root is None else root / "etc/systemd/system" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(unit_text)
    cmd = [SYSTEMD_ANALYZE, "verify", "--man=no"]
    if _supports("--recursive-errors"):
        cmd.append("--recursive-errors=no")
    if root is not None:
        cmd.append(f"--root={root}")
    proc = subprocess.run([*cmd, str(path)], capture_output=True, text=True, timeout=60, cwd=folder)
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    problems = [ln for ln in lines if not any(p.search(ln) for p in HARMLESS)]
    if proc.returncode != 0 and not problems:
        problems.append(f"systemd-analyze verify exited {proc.returncode}")
    return problems


def read_directives(text: str) -> dict[str, dict[str, list[str]]]:
    """Sections and their directives (a key may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"directive outside a section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"not a directive: {line}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


# ---------------------------------------------------------------- systemd-analyze verify


def installed_root(base: Path) -> Path:
    """A filesystem root holding what the README's install leaves in /opt/nodeagent/bin: one
    executable per console script of pyproject.toml (copies of this checkout's, so real files)."""
    root = base / "root"
    bin_dir = root / VENV.relative_to("/") / "bin"
    bin_dir.mkdir(parents=True)
    for script in SCRIPTS:
        installed = Path(sys.executable).parent / script
        target = bin_dir / script
        if installed.exists():
            shutil.copy2(installed, target)
        else:
            target.write_text("#!/bin/sh\n")
            target.chmod(0o755)
    return root


def exec_programs(text: str) -> list[str]:
    """The program of each Exec*= line (continuation lines joined)."""
    joined = text.replace("\\\n", " ")
    return [shlex.split(m.group(1))[0].lstrip("-+!@:")
            for m in re.finditer(r"^Exec\w+=(.*)$", joined, flags=re.MULTILINE)]


@needs_analyze
@pytest.mark.parametrize("name", UNIT_NAMES)
def test_unit_verifies_clean(name: str, short_dir: Path) -> None:
    """The unit as shipped, against the README's install (the venv's programs are there, nothing else)."""
    root = installed_root(short_dir)
    assert verify((UNITS / name).read_text(), name, short_dir, root=root) == []


@needs_analyze
def test_unit_with_another_path_is_refused(short_dir: Path) -> None:
    """The check above is a real one: a unit naming /usr/local/bin (where `sudo pip install .` used to
    put the script, refused on Debian 12) is not executable under the installed root."""
    root = installed_root(short_dir)
    text = (UNITS / "nodeagent.service").read_text().replace(f"{VENV}/bin/", "/usr/local/bin/")
    problems = verify(text, "nodeagent.service", short_dir, root=root)
    assert any("/usr/local/bin/nodeagent is not executable" in p for p in problems), problems


@pytest.mark.parametrize("name", UNIT_NAMES)
def test_exec_start_is_a_console_script_of_the_venv(name: str) -> None:
    programs = exec_programs((UNITS / name).read_text())
    assert programs, name
    for program in programs:
        assert Path(program).parent == VENV / "bin" and Path(program).name in SCRIPTS, program


def test_readme_install_matches_the_units() -> None:
    """The README installs into the venv the units start from, and never with a bare `sudo pip`."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Install as a systemd service"):]
    section = section[:section.index("\n## ", 3)]
    assert f"python3 -m venv {VENV}" in section
    assert f"{VENV}/bin/pip install ." in section
    commands = [line.strip() for line in section.splitlines()]
    assert not any(c.startswith(("sudo pip install", "pip install")) for c in commands)
    for name in UNIT_NAMES:
        assert f"systemd/{name}" in section or name in section, name


@needs_analyze
@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (("Restart=always", "Restrat=always"), "Unknown key"),
        (("Type=notify\n", "Type=notifyy\n"), "notifyy"),
        (("RestartSec=10", "RestartSec=ten"), "ten"),
    ],
)
def test_helper_catches_typos(mutation: tuple[str, str], expected: str, short_dir: Path) -> None:
    text = with_exec_start((UNITS / "nodeagent.service").read_text(), sys.executable)
    old, new = mutation
    assert old in text
    problems = verify(text.replace(old, new, 1), "nodeagent.service", short_dir)
    assert problems, "a broken unit must be reported"
    assert any(expected in p for p in problems), problems


@needs_analyze
def test_helper_catches_missing_binary(short_dir: Path) -> None:
    text = (UNITS / "nodeagent.service").read_text().replace(
        "/opt/nodeagent/bin/nodeagent", "/nonexistent/nodeagent"
    )
    assert any("not executable" in p for p in verify(text, "nodeagent.service", short_dir))


def test_with_exec_start_keeps_arguments_and_prefixes() -> None:
    text = "ExecStart=/usr/local/bin/nodeagent run --config /c.yaml\nExecStartPre=-/usr/bin/mkdir -p /x\n"
    assert with_exec_start(text, "/bin/true") == (
        "ExecStart=/bin/true run --config /c.yaml\nExecStartPre=-/bin/true -p /x\n"
    )


# ---------------------------------------------------------------- required directives


def test_nodeagent_unit_directives() -> None:
    unit = read_directives((UNITS / "nodeagent.service").read_text())
    u, s, i = unit["Unit"], unit["Service"], unit["Install"]
    assert u["Wants"] == ["network-online.target"]
    assert u["After"] == ["network-online.target"]
    assert u["StartLimitIntervalSec"] == ["0"]
    assert u["ConditionPathExists"] == ["/etc/nodeagent/nodeagent.yaml"]
    assert s["Type"] == ["notify"]
    assert s["NotifyAccess"] == ["main"]
    assert s["ExecStart"] == ["/opt/nodeagent/bin/nodeagent run --config /etc/nodeagent/nodeagent.yaml"]
    assert s["Restart"] == ["always"]
    assert s["RestartSec"] == ["10"]
    assert s["WatchdogSec"] == ["30"]
    assert s["KillMode"] == ["mixed"]
    assert s["StateDirectory"] == ["nodeagent"]
    assert s["RuntimeDirectory"] == ["nodeagent"]
    assert s["NoNewPrivileges"] == ["yes"]
    assert "AF_NETLINK" in s["RestrictAddressFamilies"][0].split()
    # The cgroupfs backend writes /sys/fs/cgroup: nothing may make it read-only.
    assert "ProtectControlGroups" not in s
    assert "ProtectKernelTunables" not in s
    assert i["WantedBy"] == ["multi-user.target"]


def test_unit_paths_match_the_daemon_defaults() -> None:
    """The admin socket default lives in RuntimeDirectory, the state dir in StateDirectory."""
    from nodeagent.config import NodeAgentConfig

    defaults = NodeAgentConfig(node_name="x")
    assert defaults.admin_socket.parent == Path("/run/nodeagent")
    assert defaults.state_dir == Path("/var/lib/nodeagent")


@pytest.mark.parametrize("name", ["nodeagent.service", "nodeagent-controlplane.service", "nodeagent-node@.service"])
def test_state_directory_mode_is_what_the_daemon_keeps(name: str) -> None:
    """systemd creates StateDirectory= with StateDirectoryMode= before the daemon starts; a mode
    wider than the one the daemon tightens stateDir to made every first start under the unit log
    `stateDir mode tightened from 0750 to 0700`."""
    from nodeagent.hardening import STATE_DIR_MODE

    service = read_directives((UNITS / name).read_text().replace("\\\n", " "))["Service"]
    assert int(service["StateDirectoryMode"][0], 8) & ~STATE_DIR_MODE == 0


def test_console_script_matches_exec_start() -> None:
    assert "nodeagent" in SCRIPTS


def test_device_plugin_unit_directives() -> None:
    unit = read_directives((UNITS / "nodeagent-device-plugin.service").read_text())
    u, s, i = unit["Unit"], unit["Service"], unit["Install"]
    assert "nodeagent.service" in u["After"][0].split()
    assert s["ExecStart"] == [
        "/opt/nodeagent/bin/nodeagent-device-plugin --config /etc/nodeagent/plugins/fake-gpu.yaml"
    ]
    assert u["ConditionPathExists"] == ["/etc/nodeagent/plugins/fake-gpu.yaml"]
    assert s["Restart"] == ["always"]
    assert i["WantedBy"] == ["multi-user.target"]


# ---------------------------------------------------------------- several nodes: control plane + node@


def _exec_options(service: Mapping[str, list[str]]) -> dict[str, str]:
    argv = shlex.split(service["ExecStart"][0])
    assert argv[1] == "run", argv
    return dict(zip(argv[2::2], argv[3::2], strict=True))


def test_controlplane_unit_directives() -> None:
    unit = read_directives((UNITS / "nodeagent-controlplane.service").read_text().replace("\\\n", " "))
    u, s, i = unit["Unit"], unit["Service"], unit["Install"]
    assert u["ConditionPathExists"] == ["/etc/nodeagent/controlplane.yaml"]
    assert s["Type"] == ["notify"]  # nodes ordered after it start once the API serves
    assert s["Restart"] == ["always"]
    opts = _exec_options(s)
    assert opts["--config"] == "/etc/nodeagent/controlplane.yaml"
    # its own directories: never nodeagent.service's (whose RuntimeDirectory is removed on stop)
    assert opts["--state-dir"] == "/var/lib/" + s["StateDirectory"][0]
    assert Path(opts["--admin-socket"]).parent == Path("/run") / s["RuntimeDirectory"][0]
    assert s["RuntimeDirectory"] != ["nodeagent"]
    assert Path(opts["--root-dir"]).is_relative_to(opts["--state-dir"])
    assert i["WantedBy"] == ["multi-user.target"]


def test_node_template_unit_directives() -> None:
    unit = read_directives((UNITS / "nodeagent-node@.service").read_text().replace("\\\n", " "))
    u, s, i = unit["Unit"], unit["Service"], unit["Install"]
    assert u["ConditionPathExists"] == ["/etc/nodeagent/nodes/%i.yaml"]
    assert "nodeagent-controlplane.service" in u["Wants"]
    assert "nodeagent-controlplane.service" in u["After"][0].split()
    assert s["Type"] == ["notify"]
    assert s["KillMode"] == ["mixed"]
    opts = _exec_options(s)
    assert opts["--config"] == "/etc/nodeagent/nodes/%i.yaml"
    assert opts["--node-name"] == "%i"
    # every instance its own state, root and runtime directories, none of them the kubelet's
    assert opts["--state-dir"] == "/var/lib/" + s["StateDirectory"][0]
    assert "%i" in s["StateDirectory"][0] and "%i" in s["RuntimeDirectory"][0]
    assert Path(opts["--admin-socket"]).parent == Path("/run") / s["RuntimeDirectory"][0]
    assert Path(opts["--root-dir"]).is_relative_to(opts["--state-dir"])
    assert not opts["--root-dir"].startswith("/var/lib/kubelet")
    assert i["WantedBy"] == ["multi-user.target"]


def test_example_configs_of_the_multinode_units_load() -> None:
    """configs/controlplane.yaml is a control plane alone, configs/node.yaml a node that joins one,
    at the kubeconfig path the control plane unit's state dir holds."""
    from nodeagent.config import load as load_config

    cp = load_config(REPO / "configs" / "controlplane.yaml")
    assert not cp.agent.node.enabled and cp.agent.control_plane.enabled
    node = load_config(REPO / "configs" / "node.yaml")
    cp_opts = _exec_options(read_directives(
        (UNITS / "nodeagent-controlplane.service").read_text().replace("\\\n", " "))["Service"])
    assert node.agent.cluster.kubeconfig == Path(cp_opts["--state-dir"]) / "kubeconfig"
    assert not node.agent.control_plane.enabled


@needs_analyze
def test_node_template_is_verified(short_dir: Path) -> None:
    """systemd-analyze verify checks the template (as an instance): a wrong program is reported."""
    root = installed_root(short_dir)
    text = (UNITS / "nodeagent-node@.service").read_text().replace("/opt/nodeagent/bin/nodeagent ", "/nonexistent/x ")
    problems = verify(text, "nodeagent-node@.service", short_dir, root=root)
    assert any("/nonexistent/x is not executable" in p for p in problems), problems
