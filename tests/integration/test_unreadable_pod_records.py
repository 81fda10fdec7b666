"""Unreadable pod records across a restart: holdings kept for re-admission, released if the pod is gone.

A pod whose record in state.db cannot be read is still bound to the node in the object store.
The kubelet re-admits such a pod reusing the devices its checkpoint holds (no plugin call is
needed), so it must come back Running with the same devices even though the restarted
daemon re-admits it before the device plugin has re-registered. A pod with an unreadable
record that does not come back (a static pod whose file was removed while down) has its
devices released after the node's first sync pass.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import alive, running_daemon, wait_for
from tests.integration.test_devices_e2e import (
    KUBELET,
    agent,
    apply,
    gpu_pod,
    plugin_pid,
    pod,
    pod_devices,
    registered,
    rest_gets_the_other_gpus,
    settled,
    static_pod_holding_gpus,
    static_pod_kubelet,
)

pytestmark = pytest.mark.integration


def _damage_record(state_db: Path, uid: str) -> None:
    """Make the pod's record unreadable (valid JSON, not a pod record)."""
    conn = sqlite3.connect(state_db)
    try:
        cur = conn.execute("UPDATE kv SET value = ? WHERE bucket = 'pods' AND key = ?",
                           (json.dumps({"pod": "not a pod"}), uid))
        assert cur.rowcount == 1, f"no pod record for uid {uid}"
        conn.commit()
    finally:
        conn.close()


def _kill(d: object) -> None:
    plugin = plugin_pid(d.proc.pid)  # type: ignore[attr-defined]
    assert plugin is not None
    d.stop(signal.SIGKILL)  # type: ignore[attr-defined]
    wait_for(lambda: not alive(plugin), timeout=10, what="orphaned plugin exits")


def test_unreadable_record_readmitted_with_its_devices_before_the_plugin_returns(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        registered(d)
        apply(d, gpu_pod("keep", 2))
        running = settled(d, "keep")
        assert running["status"]["phase"] == "Running"
        uid = running["metadata"]["uid"]
        before = pod_devices(d, "keep")
        assert len(before) == 2
        _kill(d)
    _damage_record(short_dir / "state" / "state.db", uid)
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        # Re-admitted at the node's first sync pass, before the plugin (spawned later) registers.
        assert pod_devices(d, "keep") == before
        registered(d)
        wait_for(lambda: pod(d, "keep")["status"].get("phase") == "Running", timeout=10, what="keep Running")
        assert pod_devices(d, "keep") == before
        rest_gets_the_other_gpus(d, before)
        assert "unreadable" in (short_dir / "daemon.log").read_text()


def test_unreadable_record_of_a_pod_gone_releases_its_devices(short_dir: Path) -> None:
    static, kubelet = static_pod_kubelet(short_dir)
    with running_daemon(short_dir, kubelet, agent(short_dir)) as d:
        static_pod_holding_gpus(d, static)
        uid = pod(d, "st-test-node")["metadata"]["annotations"]["kubernetes.io/config.mirror"]
        _kill(d)
    (static / "st.yaml").unlink()
    _damage_record(short_dir / "state" / "state.db", uid)
    with running_daemon(short_dir, kubelet, agent(short_dir)) as d:
        registered(d)
        apply(d, gpu_pod("new", 4))
        assert settled(d, "new")["status"]["phase"] == "Running"
