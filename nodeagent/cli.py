"""The `nodeagent` command: `run` starts the daemon; `describe` and `device set-health` ask its admin socket.

Objects are created, listed, changed and deleted with kubectl (or any Kubernetes client)
against the API the daemon serves, with the kubeconfig it writes (STATE_DIR/kubeconfig). This
command keeps only what kubectl cannot say or do: `describe KIND NAME` with the node's own facts
(each container's device Allocate answer, prepared DRA claims with CDI ids and health) and
`device set-health`.

This is the only module (with daemon.py) that reads the environment: NODEAGENT_ADMIN_SOCKET
picks the admin socket for client commands, NOTIFY_SOCKET / WATCHDOG_USEC come from systemd.
Exit codes: 0 success, 1 a request failed, 2 bad usage, configuration or start-up error.

Start-up cost matters here (a user types these commands): each subcommand imports only what it
needs, after its arguments are parsed. The parsers of the heavy subcommands (the conformance
suite, which brings the API server and a Kubernetes client, and the fault commands) are built
only when that subcommand is the one given; otherwise they appear in `--help` by name and help
text alone (_LAZY; a test keeps those texts equal to the real parsers'). bench/cli_startup.py
measures it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nodeagent import __version__
from nodeagent.errors import ConfigError, NodeAgentError, StartupError

if TYPE_CHECKING:
    from nodeagent import config as config_mod

logger = logging.getLogger(__name__)

DEFAULT_ADMIN_SOCKET = Path("/run/nodeagent/nodeagent.sock")
LOCAL_ADMIN_SOCKET = Path(".run/nodeagent.sock")  # where `make run` puts it
INTERRUPTED = 130  # the exit status a shell gives a command ended by Ctrl-C (128 + SIGINT)


def _admin_socket(arg: str | None) -> Path:
    if arg:
        return Path(arg).absolute()
    env = os.environ.get("NODEAGENT_ADMIN_SOCKET")
    if env:
        return Path(env).absolute()
    if LOCAL_ADMIN_SOCKET.exists():
        return LOCAL_ADMIN_SOCKET.absolute()
    return DEFAULT_ADMIN_SOCKET


# Subcommands whose parsers live with their heavy modules: command -> (help, module, function adding
# the parsers; one function may add several commands). Built only when given (see the module docstring).
_LAZY: dict[str, tuple[str, str, str]] = {
    "fault": ("add, list or clear faults the node applies to plugin calls", "nodeagent.admin.faults_cli",
              "add_parsers"),
    "calls": ("the record of the calls the node made to plugins", "nodeagent.admin.faults_cli", "add_parsers"),
    "simulate": ("simulate node events", "nodeagent.admin.faults_cli", "add_parsers"),
    "conformance": ("run a conformance suite against a DRA driver or a device plugin", "nodeagent.conformance.cli",
                    "add_parser"),
}
LOG_FORMATS = ("plain", "full", "json")  # logs.FORMATS, without importing the logging set-up to build the parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand given (the first word that is not an option: the top level has no option with a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _parser(command: str | None = None, *, full: bool = False) -> argparse.ArgumentParser:
    """The parser, complete for `command` (every subcommand with full=True), the other heavy ones by name."""
    p = argparse.ArgumentParser(
        prog="nodeagent", description=__doc__.splitlines()[0],
        epilog="Objects (get, apply, delete, events, ...): kubectl --kubeconfig STATE_DIR/kubeconfig "
               "(.run/kubeconfig under `make run`).",
    )
    # `nodeagent --version` -> "nodeagent 0.1.0" (the kubelet's --version prints "Kubernetes v1.x").
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the daemon")
    run.add_argument("--config", required=True, type=Path, help="YAML file with both configuration documents")
    run.add_argument("--root-dir", type=Path, help="override NodeAgentConfiguration.rootDir")
    run.add_argument("--state-dir", type=Path, help="override NodeAgentConfiguration.stateDir")
    run.add_argument("--node-name", help="override NodeAgentConfiguration.nodeName")
    run.add_argument("--admin-socket", type=Path, help="override NodeAgentConfiguration.adminSocket")
    run.add_argument("--node-ip", help="override NodeAgentConfiguration.nodeIP (the kubelet's --node-ip: an IP, "
                     "or an IPv4,IPv6 pair)")
    run.add_argument("--reset-state", action="store_true",
                     help="move state.db and objects.db aside (NAME.TIMESTAMP) and start with empty state")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.add_argument("--log-format", default="plain", choices=list(LOG_FORMATS))

    check = sub.add_parser("check-config", help="parse a configuration file and print the effective values")
    check.add_argument("--config", required=True, type=Path)

    kc = sub.add_parser("kubeconfig", help="issue a kubeconfig with a node's own credential (system:node:NAME) "
                        "for the API server of this configuration")
    kc.add_argument("--config", required=True, type=Path)
    kc.add_argument("--node", required=True, help="the node's name")
    kc.add_argument("-o", "--output", type=Path, help="write it here (mode 0600) instead of standard output")

    def client(name: str, help_text: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument("--admin-socket", help="admin socket (default: $NODEAGENT_ADMIN_SOCKET, "
                        "./.run/nodeagent.sock if present, else /run/nodeagent/nodeagent.sock)")
        return sp

    dp = client("describe", "show one object with what only the node knows about it")
    dp.add_argument("kind")
    dp.add_argument("name")
    dp.add_argument("-n", "--namespace", default="", help="namespace (default: default)")

    dev = client("device", "device operations")
    dev_sub = dev.add_subparsers(dest="device_command", required=True)
    sh = dev_sub.add_parser("set-health", help="switch the health of a device")
    sh.add_argument("resource", help="extended resource name, or DRA driver/pool/device")
    sh.add_argument("device", nargs="?", default="", help="device id (device plugins)")
    sh.add_argument("health", choices=["Healthy", "Unhealthy"])
    sh.add_argument("--admin-socket", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    needed = {lazy[1:] for name, lazy in _LAZY.items() if full or name == command}
    for module, adder in sorted(needed):
        getattr(importlib.import_module(module), adder)(sub)
    for name, (help_text, module, adder) in _LAZY.items():
        if (module, adder) not in needed:
            sub.add_parser(name, help=help_text, add_help=False)
    return p


def log_ignored_fields(cfg: config_mod.Config) -> None:
    """Say once at start which KubeletConfiguration fields are accepted but change nothing here."""
    from nodeagent import config as config_mod

    ignored = config_mod.ignored_fields(cfg.kubelet)
    if ignored:
        logger.info("KubeletConfiguration fields accepted but not acted on fields=%s", ",".join(ignored))


async def _client_command(args: argparse.Namespace) -> int:
    from nodeagent.admin.client import AdminClient

    client = AdminClient(_admin_socket(args.admin_socket))
    try:
        namespace = getattr(args, "namespace", "") or "default"
        if args.command == "describe":
            print(await client.describe(args.kind, namespace, args.name), end="")
        elif args.command == "device":
            resource, device = args.resource, args.device
            if not device and resource.count("/") >= 2:
                # DRA: DRIVER/POOL/DEVICE, where the driver name itself has no slash.
                resource, _, device = resource.partition("/")
            await client.set_device_health(resource, device, args.health)
            print(f"device {args.resource} {args.device} set to {args.health}".replace("  ", " "))
        return 0
    finally:
        await client.close()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser(_command(argv)).parse_args(argv)
    except KeyboardInterrupt:
        return INTERRUPTED
    try:
        if args.command == "run":
            from nodeagent.util.interrupts import DeferredInterrupt

            deferred = DeferredInterrupt()  # no KeyboardInterrupt inside an import (util/interrupts.py)
            from nodeagent.util import gcsettings, gilsettings, mallocsettings

            gcsettings.hold()  # until READY=1 (gcsettings.started): the start makes long-lived objects only
            from nodeagent import config as config_mod
            from nodeagent import logs

            # The configuration first: a refused one changes nothing in the process (same verdict as check-config).
            cfg = config_mod.with_overrides(
                config_mod.load(args.config),
                root_dir=args.root_dir,
                state_dir=args.state_dir,
                node_name=args.node_name,
                admin_socket=args.admin_socket,
                node_ip=args.node_ip,
            )
            logs.setup(args.log_level, args.log_format)
            mallocsettings.apply()
            gilsettings.apply()
            log_ignored_fields(cfg)
            from nodeagent import daemon

            if deferred.release():
                return INTERRUPTED
            # spawned plugins log in the daemon's format (plugins/common/runner.py reads it)
            environ = {**os.environ, "NODEAGENT_LOG_FORMAT": args.log_format}
            return daemon.main(cfg, environ=environ, reset_state=args.reset_state, on_ready=gcsettings.started)
        if args.command == "conformance":
            from nodeagent.conformance.cli import run as run_conformance

            return run_conformance(args)
        if args.command in ("fault", "calls", "simulate"):
            from nodeagent.admin import faults_cli

            return faults_cli.run(args, _admin_socket(args.admin_socket))
        if args.command == "kubeconfig":
            from nodeagent import config as config_mod
            from nodeagent.apiserver import issue

            print(issue.write(config_mod.load(args.config), args.node, args.output), end="")
            return 0
        if args.command == "check-config":
            import yaml

            from nodeagent import config as config_mod

            cfg = config_mod.load(args.config)
            print(yaml.safe_dump(config_mod.effective(cfg), sort_keys=False), end="")
            from nodeagent.hardening import exposure_warnings

            ignored = config_mod.ignored_fields(cfg.kubelet)
            if ignored:
                print(f"nodeagent: KubeletConfiguration fields accepted but not acted on: {', '.join(ignored)}",
                      file=sys.stderr)
            for text in exposure_warnings(cfg):  # as loud as at start (the daemon logs them too)
                print(f"nodeagent: warning: {text}", file=sys.stderr)
            return 0
        import asyncio

        return asyncio.run(_client_command(args))
    except (ConfigError, StartupError) as err:
        print(f"nodeagent: {err}", file=sys.stderr)
        return 2
    except NodeAgentError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Ctrl-C before the daemon's own signal handlers (asyncio.run cancelled the start and
        # the daemon stopped what it had started), or in a client command: no traceback
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
