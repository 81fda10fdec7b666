"""The CLI's fault commands: `nodeagent fault add|list|clear`, `nodeagent calls`, `nodeagent simulate kubelet-restart`.

Each asks the daemon's admin socket (nodeagent.v1.Faults); the daemon validates rules (errors
name the field, `fault.code: ...`). Output: a table by default, `-o json` for scripts.
Why in admin/ and not faults/: these commands are the admin socket's client side, like `describe`,
and they import the admin client; faults/ stays below config/ (the config parser reads a rule's
spelling from faults/model.py), so it must not import admin/, which builds on the whole daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from nodeagent.faults.model import ACTIONS, CODES, METHODS
from nodeagent.faults.record import format_table

COMMANDS = frozenset({"fault", "calls", "simulate"})
ADMIN_HELP = ("admin socket (default: $NODEAGENT_ADMIN_SOCKET, ./.run/nodeagent.sock if present, "
              "else /run/nodeagent/nodeagent.sock)")


def add_parsers(sub: Any) -> None:
    """Add the commands to the CLI's subparsers."""
    fault = sub.add_parser("fault", help="add, list or clear faults the node applies to plugin calls")
    fault_sub = fault.add_subparsers(dest="fault_command", required=True)
    add = fault_sub.add_parser("add", help="add a fault rule", epilog=f"methods: {', '.join(METHODS)}")
    add.add_argument("--action", required=True, choices=ACTIONS)
    add.add_argument("--method", default="", help="gRPC method name (not for refuse)")
    add.add_argument("--plugin", default="", help="extended resource name or DRA driver name (default: every plugin)")
    add.add_argument("--code", default="", help=f"fail: status code ({', '.join(CODES)}; default UNAVAILABLE)")
    add.add_argument("--message", default="", help="fail/refuse: the error text")
    add.add_argument("--delay", default="", help='delay: how long ("500ms", "2s")')
    add.add_argument("--count", type=int, help="the next N matching calls (default: no bound)")
    add.add_argument("--probability", type=float, help="each matching call with this probability (0-1]")
    lst = fault_sub.add_parser("list", help="the active rules, in matching order")
    lst.add_argument("-o", "--output", choices=["table", "json"], default="table")
    clear = fault_sub.add_parser("clear", help="remove one rule (by id) or all")
    clear.add_argument("id", nargs="?", type=int, default=0)
    calls = sub.add_parser("calls", help="the record of the calls the node made to plugins")
    calls.add_argument("--plugin", default="")
    calls.add_argument("--method", default="")
    calls.add_argument("--since", type=int, default=0, help="only entries after this sequence number")
    calls.add_argument("--limit", type=int, default=0, help="only the newest N entries")
    calls.add_argument("-o", "--output", choices=["table", "json"], default="table")
    sim = sub.add_parser("simulate", help="simulate node events")
    sim.add_argument("event", choices=["kubelet-restart"])
    for p in (add, lst, clear, calls, sim):
        p.add_argument("--admin-socket", help=ADMIN_HELP)


def run(args: argparse.Namespace, socket: Path) -> int:
    return asyncio.run(_run(args, socket))


async def _run(args: argparse.Namespace, socket: Path) -> int:
    from nodeagent.admin.faults_client import FaultsClient

    client = FaultsClient(socket)
    try:
        if args.command == "fault" and args.fault_command == "add":
            doc: dict[str, Any] = {k: getattr(args, k) for k in (
                "action", "method", "plugin", "code", "message", "delay", "count", "probability")}
            added = await client.add_fault(doc)
            print(f"fault {added['id']} added: {_line(added)}")
        elif args.command == "fault" and args.fault_command == "list":
            rules = await client.list_faults()
            if args.output == "json":
                print(json.dumps(rules, indent=2))
            else:
                print("\n".join(f"{r['id']}\t{_line(r)}\thits={r['hits']}" for r in rules) or "no faults")
        elif args.command == "fault":
            cleared = await client.clear_faults(args.id)
            print(f"{cleared} fault(s) cleared")
        elif args.command == "calls":
            entries = await client.calls(args.plugin, args.method, args.since, args.limit)
            if args.output == "json":
                print(json.dumps([e.to_dict() for e in entries], indent=2))
            else:
                print(format_table(entries), end="")
        else:
            took = await client.restart()
            print(f"kubelet restart simulated in {took:.3f}s: plugins register again")
        return 0
    finally:
        await client.close()


def _line(rule: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in rule.items() if k not in ("id", "hits"))
