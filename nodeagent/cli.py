"""The `nodeagent` command: `run` starts the daemon; the rest talk to its admin socket, kubectl-style.

This is the only module (with daemon.py) that reads the environment: NODEAGENT_ADMIN_SOCKET
picks the admin socket for client commands, NOTIFY_SOCKET / WATCHDOG_USEC come from systemd.
Exit codes: 0 success, 1 a request failed, 2 bad usage, configuration or start-up error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from nodeagent import config as config_mod
from nodeagent import gcsettings, logs
from nodeagent.errors import ConfigError, NodeAgentError, StartupError

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
    p = argparse.ArgumentParser(prog="nodeagent", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the daemon")
    run.add_argument("--config", required=True, type=Path, help="YAML file with both configuration documents")
    run.add_argument("--root-dir", type=Path, help="override NodeAgentConfiguration.rootDir")
    run.add_argument("--state-dir", type=Path, help="override NodeAgentConfiguration.stateDir")
    run.add_argument("--node-name", help="override NodeAgentConfiguration.nodeName")
    run.add_argument("--admin-socket", type=Path, help="override NodeAgentConfiguration.adminSocket")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.add_argument("--log-format", default="plain", choices=list(logs.FORMATS))

    check = sub.add_parser("check-config", help="parse a configuration file and print the effective values")
    check.add_argument("--config", required=True, type=Path)

    def client(name: str, help_text: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument("--admin-socket", help="admin socket (default: $NODEAGENT_ADMIN_SOCKET, "
                        "./.run/nodeagent.sock if present, else /run/nodeagent/nodeagent.sock)")
        return sp

    def ns(sp: argparse.ArgumentParser, all_ns: bool = False) -> None:
        sp.add_argument("-n", "--namespace", default="", help="namespace (default: default)")
        if all_ns:
            sp.add_argument("-A", "--all-namespaces", action="store_true")

    ap = client("apply", "create or update objects from manifests")
    ap.add_argument("-f", "--filename", action="append", required=True, help="file, directory or -")
    ns(ap)

    gp = client("get", "list objects or get one")
    gp.add_argument("kind")
    gp.add_argument("name", nargs="?", default="")
    gp.add_argument("-o", "--output", choices=["wide", "yaml", "json", "name"], default=None)
    ns(gp, all_ns=True)

    dp = client("describe", "show details of one object")
    dp.add_argument("kind")
    dp.add_argument("name")
    ns(dp)

    rp = client("delete", "delete one object")
    rp.add_argument("kind")
    rp.add_argument("name")
    ns(rp)

    ep = client("events", "list events")
    ns(ep)

    dev = client("device", "device operations")
    dev_sub = dev.add_subparsers(dest="device_command", required=True)
    sh = dev_sub.add_parser("set-health", help="switch the health of a device")
    sh.add_argument("resource", help="extended resource name, or DRA driver/pool/device")
    sh.add_argument("device", nargs="?", default="", help="device id (device plugins)")
    sh.add_argument("health", choices=["Healthy", "Unhealthy"])
    sh.add_argument("--admin-socket", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return p


def _read_manifests(sources: Sequence[str]) -> str:
    parts: list[str] = []
    for src in sources:
        if src == "-":
            parts.append(sys.stdin.read())
            continue
        path = Path(src)
        if path.is_dir():
            files = sorted(
                f for f in path.iterdir() if f.suffix in (".yaml", ".yml", ".json") and f.is_file()
            )
            parts.extend(f.read_text() for f in files)
        elif path.exists():
            parts.append(path.read_text())
        else:
            raise NodeAgentError(f'the path "{src}" does not exist')
    return "\n---\n".join(parts)


def _age(created: str | None) -> str:
    if not created:
        return "<unknown>"
    try:
        ts = time.mktime(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    except ValueError:
        return "<unknown>"
    secs = max(0, int(time.time() - ts))
    if secs < 120:
        return f"{secs}s"
    if secs < 7200:
        return f"{secs // 60}m"
    if secs < 172800:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _pod_rows(objs: list[dict[str, Any]], wide: bool, all_ns: bool) -> list[list[str]]:
    head = (["NAMESPACE"] if all_ns else []) + ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    if wide:
        head += ["NODE", "QOS"]
    rows = [head]
    for o in objs:
        meta, spec, status = o.get("metadata", {}), o.get("spec", {}), o.get("status", {})
        cstat = status.get("containerStatuses", [])
        ready = sum(1 for c in cstat if c.get("ready"))
        phase = status.get("reason") or status.get("phase", "")
        if status.get("phase") == "Running":
            phase = "Running"
        row = ([meta.get("namespace", "")] if all_ns else []) + [
            meta.get("name", ""),
            f"{ready}/{len(spec.get('containers', []))}",
            phase,
            "0",
            _age(meta.get("creationTimestamp")),
        ]
        if wide:
            row += [spec.get("nodeName", ""), status.get("qosClass", "")]
        rows.append(row)
    return rows


def _generic_rows(objs: list[dict[str, Any]], all_ns: bool) -> list[list[str]]:
    rows = [(["NAMESPACE"] if all_ns else []) + ["NAME", "AGE"]]
    for o in objs:
        meta = o.get("metadata", {})
        rows.append(
            ([meta.get("namespace", "")] if all_ns else [])
            + [meta.get("name", ""), _age(meta.get("creationTimestamp"))]
        )
    return rows


def _print_objects(kind: str, objs: list[dict[str, Any]], output: str | None, all_ns: bool, single: bool) -> None:
    if output == "json":
        doc: Any = objs[0] if single and objs else {"apiVersion": "v1", "kind": "List", "items": objs}
        print(json.dumps(doc, indent=2))
        return
    if output == "yaml":
        doc = objs[0] if single and objs else {"apiVersion": "v1", "kind": "List", "items": objs}
        print(yaml.safe_dump(doc, sort_keys=False), end="")
        return
    if output == "name":
        for o in objs:
            print(f"{o.get('kind', kind).lower()}/{o.get('metadata', {}).get('name', '')}")
        return
    if not objs:
        print("No resources found.", file=sys.stderr)
        return
    if objs[0].get("kind") == "Pod":
        print(_table(_pod_rows(objs, output == "wide", all_ns)))
    elif objs[0].get("kind") == "Node":
        rows = [["NAME", "STATUS", "ROLES", "AGE", "VERSION"]]
        for o in objs:
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in o.get("status", {}).get("conditions", []))
            state = "Ready" if ready else "NotReady"
            if o.get("spec", {}).get("unschedulable"):
                state += ",SchedulingDisabled"
            rows.append([o["metadata"]["name"], state, "<none>",
                         _age(o["metadata"].get("creationTimestamp")),
                         o.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")])
        print(_table(rows))
    elif objs[0].get("kind") == "ResourceQuota":
        print(_table(_quota_rows(objs, all_ns)))
    else:
        print(_table(_generic_rows(objs, all_ns)))


def _quota_rows(objs: list[dict[str, Any]], all_ns: bool) -> list[list[str]]:
    """kubectl's quota columns: REQUEST lists `resource: used/hard` from the status."""
    rows = [(["NAMESPACE"] if all_ns else []) + ["NAME", "AGE", "REQUEST"]]
    for o in objs:
        meta, status = o.get("metadata", {}), o.get("status", {})
        used = status.get("used") or {}
        request = ", ".join(f"{k}: {used.get(k, '0')}/{v}" for k, v in sorted((status.get("hard") or {}).items()))
        rows.append(([meta.get("namespace", "")] if all_ns else [])
                    + [meta.get("name", ""), _age(meta.get("creationTimestamp")), request])
    return rows


async def _client_command(args: argparse.Namespace) -> int:
    from nodeagent.admin.client import AdminClient

    client = AdminClient(_admin_socket(args.admin_socket))
    try:
        namespace = getattr(args, "namespace", "") or "default"
        if args.command == "apply":
            manifest = _read_manifests(args.filename)
            for applied in await client.apply(manifest, namespace):
                print(f"{applied.kind.lower()}/{applied.name} {applied.action}")
        elif args.command == "get":
            objs = await client.get(args.kind, namespace, args.name, args.all_namespaces)
            _print_objects(args.kind, objs, args.output, args.all_namespaces, bool(args.name))
        elif args.command == "describe":
            print(await client.describe(args.kind, namespace, args.name), end="")
        elif args.command == "delete":
            await client.delete(args.kind, namespace, args.name)
            print(f"{args.kind.rstrip('s').lower()} \"{args.name}\" deleted")
        elif args.command == "events":
            rows = [["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]]
            for e in await client.events(getattr(args, "namespace", "")):
                ago = f"{max(0, int(time.time() - e.timestamp))}s"
                obj = f"{e.involved_kind.lower()}/{e.involved_name}"
                rows.append([ago, e.type, e.reason, obj, e.message])
            print(_table(rows))
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
            )
            from nodeagent import daemon

            return daemon.main(cfg, environ=dict(os.environ))
        if args.command == "check-config":
            cfg = config_mod.load(args.config)
            print(yaml.safe_dump(config_mod.effective(cfg), sort_keys=False), end="")
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
