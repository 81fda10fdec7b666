"""Desired vs actual plugin worlds -> the operations that make them equal (pure).

Removals come first, then additions, each sorted by socket path, so a plan is
deterministic. Operations are keyed by socket path and idempotent: the executor runs
at most one operation per key at a time and skips keys that are backing off; a socket
re-created under the same path yields Unregister then Register for that path, and the
Register simply happens on the next pass once the Unregister is done.
Mirrors the kubelet's pluginmanager/reconciler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodeagent.pluginwatcher.model import RegisteredPlugin, SocketFile


@dataclass(frozen=True)
class Register:
    socket: SocketFile

    @property
    def key(self) -> str:
        return self.socket.path


@dataclass(frozen=True)
class Unregister:
    plugin: RegisteredPlugin

    @property
    def key(self) -> str:
        return self.plugin.path


Operation = Register | Unregister


def plan(desired: Mapping[str, SocketFile], actual: Mapping[str, RegisteredPlugin]) -> list[Operation]:
    ops: list[Operation] = []
    for path in sorted(actual):
        have = actual[path]
        want = desired.get(path)
        if want is None or want.generation != have.socket.generation:
            ops.append(Unregister(have))
    for path in sorted(desired):
        want = desired[path]
        have_reg = actual.get(path)
        if have_reg is None or have_reg.socket.generation != want.generation:
            ops.append(Register(want))
    return ops
