"""A JSON-lines control socket beside a plugin socket (`<socket>.ctl`), for tests and operators.

Shared by every plugin (the fake device plugin, the DRA kit's drivers) so the wire protocol is
written once. One request object per line, one reply per line: `{"set_health": {...}}` ->
`{"ok": true}` or `{"ok": false, "code": "NotFound", "error": "..."}`. The command table is
passed in; this module only frames lines and turns handler exceptions into error replies
(KeyError -> NotFound, ValueError/TypeError -> InvalidArgument), so a bad command never kills
the plugin.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from nodeagent.plugin_kit import check_socket_path, remove_stale_socket

logger = logging.getLogger(__name__)

Command = Callable[[Any], Awaitable[dict[str, Any]]]
"""A command: its argument (any JSON) -> the reply's extra fields (merged with {"ok": true})."""


class ControlServer:
    """Serves `commands` on `path`.

    mode: the socket file's mode (None: leave it as the umask made it). list_known: name the
    known commands in the reply to an unknown one.
    """

    def __init__(
        self,
        path: Path,
        commands: Mapping[str, Command],
        *,
        mode: int | None = 0o660,
        list_known: bool = True,
    ) -> None:
        check_socket_path(path, "control socket")
        self.path = path
        self.commands = dict(commands)
        self.mode = mode
        self.list_known = list_known
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        await self.stop()
        self.path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
        remove_stale_socket(self.path)
        self._server = await asyncio.start_unix_server(self._handle, str(self.path))
        if self.mode is not None:
            self.path.chmod(self.mode)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        with contextlib.suppress(OSError, Exception):
            remove_stale_socket(self.path)

    @property
    def serving(self) -> bool:
        return self._server is not None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                reply = await self.run(line)
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def run(self, line: bytes | str) -> dict[str, Any]:
        """Execute one request line; always returns a reply object."""
        try:
            req = json.loads(line)
        except ValueError:
            return {"ok": False, "code": "InvalidArgument", "error": "request is not JSON"}
        if not isinstance(req, dict) or len(req) != 1:
            return {"ok": False, "code": "InvalidArgument", "error": "expected one command object"}
        (name, arg), = req.items()
        command = self.commands.get(name)
        if command is None:
            error = f"unknown command {name!r}"
            if self.list_known:
                error += f" (known: {', '.join(sorted(self.commands))})"
            return {"ok": False, "code": "InvalidArgument", "error": error}
        try:
            extra = await command(arg)
        except KeyError as err:
            return {"ok": False, "code": "NotFound", "error": str(err.args[0]) if err.args else "not found"}
        except (ValueError, TypeError) as err:
            return {"ok": False, "code": "InvalidArgument", "error": str(err)}
        except Exception as err:
            logger.exception("control command failed command=%s", name)
            return {"ok": False, "code": "Internal", "error": str(err)}
        return {"ok": True, **extra}


def request(path: Path, command: Mapping[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """Send one command and wait for its reply (blocking; for CLIs and tests)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(json.dumps(dict(command)).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    reply: dict[str, Any] = json.loads(data)
    return reply


async def arequest(path: Path, command: Mapping[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """Async twin of request()."""
    reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), timeout)
    try:
        writer.write(json.dumps(dict(command)).encode() + b"\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    reply: dict[str, Any] = json.loads(line)
    return reply
