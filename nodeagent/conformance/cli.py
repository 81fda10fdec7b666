"""`nodeagent conformance dra-driver|device-plugin`: arguments, one suite run, exit status.

Exit status: 0 every selected case passed (skips allowed), 1 a case failed, 2 a usage error
(argparse's own, a bad --run/--skip pattern, a relative or missing path). The work directory
(sockets, embedded API credentials, the driver's log) is a short temporary folder, removed
afterwards unless --keep-work-dir.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from nodeagent.conformance import dra_cases, dra_cases_node
from nodeagent.conformance.model import Case
from nodeagent.conformance.report import TerminalReporter, write_junit
from nodeagent.conformance.runner import DEFAULT_TIMEOUT, SelectionError, SuiteContext, exit_status, run_suite, select


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--junit", type=Path, help="write the results as JUnit XML to this file")
    p.add_argument("--run", metavar="REGEX", help="run only the cases whose name matches")
    p.add_argument("--skip", metavar="REGEX", help="skip the cases whose name matches")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per case (default %(default)s)")
    p.add_argument("--wait", type=float, default=30.0,
                   help="seconds to wait for sockets, registrations and slices (default %(default)s)")
    p.add_argument("--list", action="store_true", help="list the cases with their contracts and exit")
    p.add_argument("--keep-work-dir", action="store_true", help="keep the temporary work directory")


def add_parser(sub: Any) -> None:
    """Add `conformance` with its two suites to the `nodeagent` command's subparsers."""
    conf = sub.add_parser("conformance", help="run a conformance suite against a DRA driver or a device plugin")
    suites = conf.add_subparsers(dest="suite", required=True)

    dra = suites.add_parser("dra-driver", help="the DRA driver suite (registration, prepare, slices, health)")
    where = dra.add_mutually_exclusive_group()
    where.add_argument("--registration-socket", type=Path, help="the driver's registration socket")
    where.add_argument("--plugins-registry", type=Path, help="directory to watch for the registration socket")
    dra.add_argument("--kubeconfig", type=Path, help="API server the driver reads claims from (default: an "
                     "embedded one whose kubeconfig is given to --driver-command)")
    dra.add_argument("--driver-command", help="start the driver (placeholders {root} {registry} {plugins} "
                     "{kubeconfig} {node} {cdi}); needed by the restart cases")
    dra.add_argument("--set-health-command", help="change a device's health ({pool} {device} {health})")
    dra.add_argument("--node-name", default="conformance-node", help="node of the driver's slices")
    dra.add_argument("--namespace", default="default", help="namespace of the claims the suite creates")
    dra.add_argument("--cdi-dir", type=Path, action="append", default=[],
                     help="where the driver writes CDI specs (repeatable; default /etc/cdi and /var/run/cdi, "
                          "or {cdi} with --driver-command)")
    _common(dra)

    dp = suites.add_parser("device-plugin", help="the device plugin suite (Register, ListAndWatch, Allocate)")
    where = dp.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, help="the plugin's socket (no registration cases)")
    where.add_argument("--device-plugins-dir", type=Path,
                       help="serve kubelet.sock here and wait for the plugin's Register")
    dp.add_argument("--plugin-command", help="start the plugin (placeholder {device_plugins}; env "
                    "NODEAGENT_DEVICE_PLUGINS_DIR); the suite then serves kubelet.sock in its own directory")
    dp.add_argument("--set-health-command", help="change a device's health ({device} {health})")
    _common(dp)


def _usage(text: str) -> int:
    print(f"nodeagent conformance: {text}", file=sys.stderr)
    return 2


def _check_paths(args: argparse.Namespace, names: Sequence[str]) -> str:
    for name in names:
        value = getattr(args, name, None)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if v is not None and not Path(v).is_absolute():
                return f"--{name.replace('_', '-')} {v}: must be an absolute path"
    return ""


async def _run(title: str, cases: Sequence[Case[Any]], ctx: SuiteContext, args: argparse.Namespace,
               setup: Callable[[], Awaitable[None]], close: Callable[[], Awaitable[None]]) -> int:
    reporter = TerminalReporter()
    reporter.header(title, len(cases))
    try:
        await setup()
        results = await run_suite(cases, ctx, reporter, timeout=args.timeout)
    finally:
        await close()
    reporter.summary(results)
    if args.junit:
        write_junit(args.junit, title, results)
    return exit_status(results)


def run(args: argparse.Namespace) -> int:
    if args.suite == "dra-driver":
        all_cases: list[Case[Any]] = [*dra_cases.CASES, *dra_cases_node.CASES]
        problem = _check_paths(args, ["registration_socket", "plugins_registry", "kubeconfig", "cdi_dir"])
        if not problem and not (args.registration_socket or args.plugins_registry or args.driver_command):
            problem = "give --registration-socket, --plugins-registry or --driver-command"
    else:
        from nodeagent.conformance import device_plugin_cases
        all_cases = list(device_plugin_cases.CASES)
        problem = _check_paths(args, ["socket", "device_plugins_dir"])
        if not problem and not (args.socket or args.device_plugins_dir or args.plugin_command):
            problem = "give --socket, --device-plugins-dir or --plugin-command"
    if problem and not args.list:
        return _usage(problem)
    try:
        cases = select(all_cases, args.run, args.skip)
    except SelectionError as err:
        return _usage(str(err))
    if args.list:
        for c in cases:
            print(f"{c.name}\n    {c.description}")
        return 0
    work = Path(tempfile.mkdtemp(prefix="na-conf-", dir="/tmp"))
    try:
        return asyncio.run(_suite(args, cases, work))
    finally:
        if args.keep_work_dir:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


async def _suite(args: argparse.Namespace, cases: Sequence[Case[Any]], work: Path) -> int:
    if args.suite == "dra-driver":
        from nodeagent.conformance.dra_harness import DRAContext, DRAOptions
        ctx = DRAContext(DRAOptions(
            work_dir=work, registration_socket=args.registration_socket, plugins_registry=args.plugins_registry,
            kubeconfig=args.kubeconfig, driver_command=args.driver_command,
            set_health_command=args.set_health_command, node_name=args.node_name, namespace=args.namespace,
            cdi_dirs=tuple(args.cdi_dir), wait=args.wait))
        return await _run("dra-driver", cases, ctx, args, ctx.setup, ctx.close)
    from nodeagent.conformance.device_plugin_harness import DPContext, DPOptions
    dctx = DPContext(DPOptions(work_dir=work, socket=args.socket, device_plugins_dir=args.device_plugins_dir,
                               plugin_command=args.plugin_command, set_health_command=args.set_health_command,
                               wait=args.wait))
    return await _run("device-plugin", cases, dctx, args, dctx.setup, dctx.close)
