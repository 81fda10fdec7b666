"""The `nodeagent` command: `run` starts the daemon; `describe` and `device set-health` ask its admin socket.

Objects are created, listed, changed and deleted with kubectl (or any Kubernetes client)
against the API the daemon serves, with the kubeconfig it writes (STATE_DIR/kubeconfig). This
command keeps only what kubectl cannot say or do: `describe KIND NAME` with the node's own facts
(each container's device Allocate answer, prepared DRA claims with CDI ids and health) and
`device set-health`.

This is the only module (with daemon.py) that reads the environment: NODEAGENT_ADMIN_SOCKET
picks the admin socket for client commands, NOTIFY_SOCKET / WATCHDOG_USEC come from systemd.
Exit codes: 0 success, 1 a request failed, 2 bad usage, configuration or start-up error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from nodeagent import __version__, gcsettings, logs
from nodeagent import config as config_mod
from nodeagent.errors import ConfigError, NodeAgentError, StartupError

logger = logging.getLogger(__name__)

DEFAULT_ADMIN_SOCKET = Path("/run/nodeagent/nodeagent.sock")
LOCAL_ADMIN_SOCKET = Path(".run/nodeagent.sock")  # where `make run` puts it


def _admin_socket(arg: str | None) -> Path:
    if arg:
        return Path(arg).absolute()
    env = os.environ.get("NODEAGENT_ADMIN_SOCKET")
    if env:
        return Path(env).absolute()
    if LOCAL_ADMIN_SOCKET.exists():
        return LOCAL_ADMIN_SOCKET.absolute()
    return DEFAULT_ADMIN_SOCKET


def _parser() -> argparse.ArgumentParser:
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
    run.add_argument("--log-format", default="plain", choices=list(logs.FORMATS))

    check = sub.add_parser("check-config", help="parse a configuration file and print the effective values")
    check.add_argument("--config", required=True, type=Path)

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

    from nodeagent.faults import cli as faults_cli

    faults_cli.add_parsers(sub)

    from nodeagent.conformance.cli import add_parser as add_conformance

    add_conformance(sub)
    return p


def log_ignored_fields(cfg: config_mod.Config) -> None:
    """Say once at start which KubeletConfiguration fields are accepted but change nothing here."""
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
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            logs.setup(args.log_level, args.log_format)
            gcsettings.apply()
            cfg = config_mod.with_overrides(
                config_mod.load(args.config),
                root_dir=args.root_dir,
                state_dir=args.state_dir,
                node_name=args.node_name,
                admin_socket=args.admin_socket,
                node_ip=args.node_ip,
            )
            log_ignored_fields(cfg)
            from nodeagent import daemon

            return daemon.main(cfg, environ=dict(os.environ), reset_state=args.reset_state)
        if args.command == "conformance":
            from nodeagent.conformance.cli import run as run_conformance

            return run_conformance(args)
        if args.command in ("fault", "calls", "simulate"):
            from nodeagent.faults import cli as faults_cli

            return faults_cli.run(args, _admin_socket(args.admin_socket))
        if args.command == "check-config":
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
        return asyncio.run(_client_command(args))
    except (ConfigError, StartupError) as err:
        print(f"nodeagent: {err}", file=sys.stderr)
        return 2
    except NodeAgentError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
