"""plugins.common: control-line framing, path choice, run-until-stopped and profile loading, without sockets."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import ConfigError
from plugins.common import profile, runner
from plugins.common.control import ControlServer


async def _echo(arg: Any) -> dict[str, Any]:
    if arg == "missing":
        raise KeyError("gpu-9")
    if arg == "type":
        raise TypeError("wrong type")
    if arg == "boom":
        raise RuntimeError("exploded")
    return {"echo": arg}


async def test_control_replies_and_error_codes() -> None:
    ctl = ControlServer(Path("/tmp/unused.ctl"), {"echo": _echo, "noop": _echo})
    assert await ctl.run('{"echo": [1]}') == {"ok": True, "echo": [1]}
    assert await ctl.run(b'{"echo": "missing"}') == {"ok": False, "code": "NotFound", "error": "gpu-9"}
    assert await ctl.run(b'{"echo": "type"}') == {"ok": False, "code": "InvalidArgument", "error": "wrong type"}
    assert await ctl.run(b'{"echo": "boom"}') == {"ok": False, "code": "Internal", "error": "exploded"}
    assert await ctl.run(b"[1]") == {"ok": False, "code": "InvalidArgument", "error": "expected one command object"}
    assert (await ctl.run(b'{"zap": 1}'))["error"] == "unknown command 'zap' (known: echo, noop)"


async def test_control_unknown_command_without_known_list() -> None:
    ctl = ControlServer(Path("/tmp/unused.ctl"), {"echo": _echo}, mode=None, list_known=False)
    assert await ctl.run(b'{"zap": 1}') == {"ok": False, "code": "InvalidArgument", "error": "unknown command 'zap'"}


def test_control_refuses_a_relative_socket_path() -> None:
    with pytest.raises(Exception, match="must be absolute"):
        ControlServer(Path("relative.ctl"), {})


def test_pick_path_order_and_optional_default() -> None:
    env = {runner.ENV_ROOT_DIR: "/env", runner.ENV_DEVICE_PLUGINS_DIR: ""}
    assert runner.pick_path(Path("/flag"), Path("/prof"), env, runner.ENV_ROOT_DIR, Path("/d")) == Path("/flag")
    assert runner.pick_path(None, Path("/prof"), env, runner.ENV_ROOT_DIR, Path("/d")) == Path("/prof")
    assert runner.pick_path(None, None, env, runner.ENV_ROOT_DIR, Path("/d")) == Path("/env")
    assert runner.pick_path(None, None, env, runner.ENV_DEVICE_PLUGINS_DIR, Path("/d")) == Path("/d")
    assert runner.pick_path(None, None, env, runner.ENV_DEVICE_PLUGINS_DIR, None) is None


def test_spawned_by_daemon_reads_the_named_variable() -> None:
    env = {runner.ENV_DEVICE_PLUGINS_DIR: "/dp"}
    assert not runner.spawned_by_daemon(env)
    assert runner.spawned_by_daemon(env, runner.ENV_DEVICE_PLUGINS_DIR)
    assert runner.spawned_by_daemon({runner.ENV_ROOT_DIR: "/root"})


async def test_run_until_stopped_starts_then_stops_even_when_start_fails() -> None:
    calls: list[str] = []
    stop = asyncio.Event()

    async def start() -> None:
        calls.append("start")
        stop.set()

    async def halt() -> None:
        calls.append("stop")

    await runner.run_until_stopped(start, halt, follow_parent=True, stop_event=stop)
    assert calls == ["start", "stop"]

    async def broken() -> None:
        raise ConfigError("no socket")

    calls.clear()
    with pytest.raises(ConfigError):
        await runner.run_until_stopped(broken, halt, follow_parent=False)
    assert calls == ["stop"]


def _parse(doc: Any, origin: str) -> tuple[Any, str]:
    return doc, origin


def test_load_profile_hands_the_document_and_file_name_to_the_parser(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("a: 1\n")
    assert profile.load_profile(path, _parse) == ({"a": 1}, str(path))
    path.write_text("a: [1\n")
    with pytest.raises(ConfigError, match=rf"^{path}: invalid YAML: "):
        profile.load_profile(path, _parse)
    with pytest.raises(ConfigError, match=rf"^{tmp_path}/nope.yaml: No such file or directory$"):
        profile.load_profile(tmp_path / "nope.yaml", _parse)


def test_reject_unknown_names_the_field_path() -> None:
    profile.reject_unknown({"a": 1}, "profile", ("a", "b"))
    with pytest.raises(ConfigError, match=r"^profile\.x: unknown field$"):
        profile.reject_unknown({"a": 1, "x": 2}, "profile", {"a", "b"})
    with pytest.raises(ConfigError, match=r"^p\.cdi\.x: unknown field \(known: a, b\)$"):
        profile.reject_unknown({"x": 2}, "p.cdi", ("a", "b"), list_known=True)


@pytest.mark.parametrize(
    ("flag", "prof", "environ", "want"),
    [
        (Path("/f"), Path("/p"), {"NODEAGENT_KUBECONFIG": "/d", "KUBECONFIG": "/k"}, Path("/f")),
        (None, Path("/p"), {"NODEAGENT_KUBECONFIG": "/d", "KUBECONFIG": "/k"}, Path("/p")),
        # the daemon's kubeconfig wins over a $KUBECONFIG the daemon inherited
        (None, None, {"NODEAGENT_KUBECONFIG": "/d", "KUBECONFIG": "/k"}, Path("/d")),
        (None, None, {"KUBECONFIG": "/k1:/k2"}, Path("/k1")),  # a list: its first file
        (None, None, {"KUBECONFIG": ""}, Path("~/.kube/config").expanduser()),
    ],
)
def test_pick_kubeconfig(flag: Path | None, prof: Path | None, environ: dict[str, str], want: Path) -> None:
    assert runner.pick_kubeconfig(flag, prof, environ) == want


def test_pick_node_name(monkeypatch: pytest.MonkeyPatch) -> None:
    both = {"NODEAGENT_NODE_NAME": "daemons", "NODE_NAME": "downward"}
    assert runner.pick_node_name("flag", both) == "flag"
    assert runner.pick_node_name(None, both) == "daemons"
    assert runner.pick_node_name(None, {"NODE_NAME": "downward"}) == "downward"
    monkeypatch.setattr(socket, "gethostname", lambda: "Host-A")
    assert runner.pick_node_name(None, {}) == "host-a"  # nodeagent's and the kubelet's default


@pytest.mark.parametrize(("argv", "environ", "stamped"), [
    ([], {"NODEAGENT_LOG_FORMAT": "full"}, True),  # spawned by `nodeagent run --log-format full`
    ([], {}, False),  # on its own (a systemd unit): plain, journald stamps the lines
    (["--log-format", "full"], {}, True),
    (["--log-format", "plain"], {"NODEAGENT_LOG_FORMAT": "full"}, False),  # the flag wins
    ([], {"NODEAGENT_LOG_FORMAT": "bogus"}, False),
])
def test_plugin_log_lines_follow_the_daemons_format(argv: list[str], environ: dict[str, str], stamped: bool) -> None:
    """A plugin the daemon spawns logs with timestamps when the daemon does (make run's full
    format), so its lines can be ordered against the daemon's on one terminal."""
    import argparse
    import io
    import logging
    import re

    from plugins.common.runner import add_log_arguments, setup_logging

    parser = argparse.ArgumentParser()
    add_log_arguments(parser)
    args = parser.parse_args(argv)
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        setup_logging(args.log_level, args.log_format, environ)
        stream = io.StringIO()
        handler = root.handlers[0]
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(stream)
        logging.getLogger("plugins.test").info("registered resource=%s", "example.com/gpu")
    finally:
        root.handlers[:], root.level = saved
    line = stream.getvalue().splitlines()[0]
    assert line.endswith("INFO plugins.test: registered resource=example.com/gpu")
    assert bool(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", line)) is stamped, line
