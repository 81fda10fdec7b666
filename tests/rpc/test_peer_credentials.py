"""The admin socket's peer-credential check (SO_PEERCRED) over a real unix socket.

A server with peer_check answers root and its own uid, and refuses any other uid with
PERMISSION_DENIED naming it, even when the socket's mode lets everyone connect. The other
uid is a child process that switches to nobody, so this runs as root only.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nodeagent.rpc.peercred import uid_of_peer
from nodeagent.rpc.server import UnixServer, channel

REPO = Path(__file__).resolve().parents[2]

CLIENT = """
import os, sys, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
# Imported as root (the venv may not be readable by nobody), then switched for the call.
os.setgroups([])
os.setgid(int(sys.argv[2]))
os.setuid(int(sys.argv[2]))
with grpc.insecure_channel("unix:" + sys.argv[1]) as ch:
    try:
        health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=10)
        print("OK")
    except grpc.RpcError as err:
        print(err.code().name, err.details())
"""


def _nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


async def _check(path: Path) -> int:
    async with channel(path) as ch:
        resp = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return int(resp.status)


def test_uid_of_peer_reads_only_our_tag() -> None:
    assert uid_of_peer("unix-abstract:nodeagent-peer-ab12-65534-ff00", "nodeagent-peer-ab12-") == 65534
    assert uid_of_peer("unix-abstract:nodeagent-peer-zz99-0-ff00", "nodeagent-peer-ab12-") is None
    assert uid_of_peer("unix:", "nodeagent-peer-ab12-") is None


async def test_own_uid_is_served_through_the_check(short_dir: Path) -> None:
    server = UnixServer(short_dir / "a.sock", [], mode=0o600, peer_check=True, what="admin socket")
    await server.start()
    try:
        assert (short_dir / "a.sock").stat().st_mode & 0o777 == 0o600
        assert await _check(short_dir / "a.sock") == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(grace=0.1)
    assert not (short_dir / "a.sock").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another uid (nobody)")
async def test_other_uid_is_refused_with_permission_denied_naming_it(short_dir: Path) -> None:
    short_dir.chmod(0o755)
    sock = short_dir / "a.sock"
    server = UnixServer(sock, [], mode=0o666, peer_check=True, what="admin socket")
    await server.start()
    try:
        nobody = _nobody()
        # Asynchronously: the server's accept loop runs on this test's event loop.
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CLIENT, str(sock), str(nobody), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd="/",
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, stderr.decode()
        out = stdout.decode()
        assert out.startswith("PERMISSION_DENIED"), out
        assert f"peer uid {nobody} is not allowed" in out
        assert "admin socket" in out
        # root (this process) still gets through on the same socket
        assert await _check(sock) == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(grace=0.1)


async def test_without_peer_check_no_proxy_is_involved(short_dir: Path) -> None:
    server = UnixServer(short_dir / "b.sock", [], mode=0o600)
    await server.start()
    try:
        async with channel(short_dir / "b.sock") as ch:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await ch.unary_unary("/no.Such/Method", None, None)(b"", timeout=5)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        await server.stop(grace=0.1)
