"""Applying the demo's example manifests (the config's examples_dir) at start.

Exists because examples that request extended resources cannot simply be applied with
the rest: the plugin providing the resource was spawned a moment ago and registers
later, so those manifests are applied in the background once their devices appear (or
at a deadline). A bad manifest is logged, never fatal.
"""

from __future__ import annotations

import logging
from pathlib import Path

from nodeagent.admin.backend import NodeBackend, parse_manifest
from nodeagent.config import Config
from nodeagent.devices.manager import DeviceManager
from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.manifest import is_extended, pod_from_manifest
from nodeagent.util.clock import Clock
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)

# How long the examples that request extended resources wait for their device plugin.
EXAMPLE_DEVICE_WAIT = 10.0


async def start(cfg: Config, clock: Clock, backend: NodeBackend, devices: DeviceManager, running: Running) -> None:
    """Apply the examples now; those requesting extended resources follow in a task."""
    if cfg.agent.examples_dir:
        later = await apply_examples(Path(cfg.agent.examples_dir), backend, clock)
        if later:
            running.spawn(apply_when_devices(later, backend, devices, clock), "examples-with-devices")


def _extended_requests(text: str, clock: Clock) -> set[str]:
    """Extended resources (example.com/gpu) requested by the pods of one manifest; {} if unparsable."""
    try:
        pods = [pod_from_manifest(doc, default_namespace="default", clock=clock) for doc in parse_manifest(text)]
    except NodeAgentError:
        return set()  # backend.apply reports the error
    return {r for pod in pods for c in pod.all_containers() for r in c.limits if is_extended(r)}


async def apply_examples(folder: Path, backend: NodeBackend, clock: Clock) -> list[tuple[Path, set[str]]]:
    """Apply the demo's example manifests; a bad one is logged, never fatal.

    Returns the manifests that request extended resources, not applied yet: a plugin the
    daemon has just spawned registers a moment after start, and until then the pod would
    be refused (OutOf<resource>) or, with the resource not yet known to the node, admitted
    without devices (the kubelet ignores extended resources the node does not advertise).
    """
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    except OSError as err:
        logger.warning("examples unreadable dir=%s err=%s", folder, err.strerror)
        return []
    later = []
    for path in files:
        try:
            text = path.read_text()
        except OSError as err:
            logger.warning("example unreadable file=%s err=%s", path.name, err.strerror)
            continue
        extended = _extended_requests(text, clock)
        if extended:
            later.append((path, extended))
            continue
        await _apply_example(path, text, backend)
    return later


async def _apply_example(path: Path, text: str, backend: NodeBackend) -> None:
    try:
        for applied in await backend.apply(text, "default"):
            logger.info("example applied file=%s object=%s/%s/%s action=%s",
                        path.name, applied.kind, applied.namespace, applied.name, applied.action)
    except NodeAgentError as err:
        logger.warning("example rejected file=%s err=%s", path.name, err)


async def apply_when_devices(
    later: list[tuple[Path, set[str]]], backend: NodeBackend, devices: DeviceManager, clock: Clock
) -> None:
    """Apply each deferred example once every extended resource it requests has allocatable devices.

    The simplest correct ordering for the demo: rather than retrying refused pods (the
    kubelet never re-admits a refused pod), wait for the plugin's first ListAndWatch
    snapshot, polled every 0.1 s for at most EXAMPLE_DEVICE_WAIT seconds from start. A
    plugin that never comes leaves the manifest applied at the deadline, so the refusal
    is visible. Runs after READY; never fatal.
    """
    deadline = clock.monotonic() + EXAMPLE_DEVICE_WAIT
    for path, needed in later:
        while not all(devices.extended_resources()[1].get(r, 0) > 0 for r in needed):
            if clock.monotonic() >= deadline:
                logger.warning("example applied before its devices appeared file=%s resources=%s waited=%gs",
                               path.name, ",".join(sorted(needed)), EXAMPLE_DEVICE_WAIT)
                break
            await clock.sleep(0.1)
        try:
            text = path.read_text()
        except OSError as err:
            logger.warning("example unreadable file=%s err=%s", path.name, err.strerror)
            continue
        await _apply_example(path, text, backend)
