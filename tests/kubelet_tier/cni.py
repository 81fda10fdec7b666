"""The kubelet tier's CNI plugin: each pod network namespace gets a loopback and one dummy-free
interface of its own, and nothing outside that namespace is touched.

containerd's CRI plugin (1.6) wants two things from CNI before a pod sandbox runs: its own
`loopback` network (it adds that one itself and runs the binary called `loopback`), and an IP address
on the default interface (`eth0`) of the configured network, or it refuses the sandbox ("failed to
find network info"). The kernels of these VMs have no `dummy` link type, so the pod's eth0 is one end
of a veth pair created inside the pod's namespace (both ends stay in it: the peer is `ktier-peer`,
down), with an address from the network's subnet. There is no route out, no bridge, no NAT: the pods of
the tier never talk to each other or to the host, and the real kubelet only needs the sandbox running.

Installed by runtime.install_cni as two executables in one folder, `loopback` and `ktier`, both
running this file with the tier's Python. Addresses are leased as files in the network's `dataDir`
(the file name is the address, its content the container id), created with O_EXCL, so two
concurrent ADDs never share one. CNI spec: ADD, DEL (idempotent), CHECK, VERSION; results in the
requested cniVersion (0.3.1 for containerd's loopback network, 1.0.0 for ours).
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SUPPORTED = ["0.3.0", "0.3.1", "0.4.0", "1.0.0"]


def _ns(netns: str, *args: str) -> None:
    subprocess.run(["nsenter", f"--net={netns}", "ip", *args], check=True, capture_output=True, text=True)


def _error(code: int, msg: str, version: str) -> int:
    print(json.dumps({"cniVersion": version, "code": code, "msg": msg}))
    return 1


def _ip_entry(version: str, address: str, interface: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"interface": interface, "address": address}
    if version.startswith("0.3"):
        entry["version"] = "4"
    return entry


def _loopback(command: str, netns: str, version: str) -> dict[str, Any] | None:
    if command == "ADD":
        _ns(netns, "link", "set", "lo", "up")
        return {"cniVersion": version, "interfaces": [{"name": "lo", "sandbox": netns}],
                "ips": [_ip_entry(version, "127.0.0.1/8", 0)], "dns": {}}
    return None


def _lease(data_dir: Path, subnet: ipaddress.IPv4Network, container: str) -> ipaddress.IPv4Address:
    data_dir.mkdir(parents=True, exist_ok=True)
    for entry in data_dir.iterdir():
        if entry.read_text() == container:
            return ipaddress.IPv4Address(entry.name)
    for host in list(subnet.hosts())[1:]:  # the first address is the (unused) gateway
        try:
            fd = os.open(data_dir / str(host), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w") as f:
            f.write(container)
        return host
    raise RuntimeError(f"no free address in {subnet}")


def _release(data_dir: Path, container: str) -> None:
    if not data_dir.is_dir():
        return
    for entry in data_dir.iterdir():
        if entry.read_text() == container:
            entry.unlink(missing_ok=True)


def _pod_network(command: str, conf: dict[str, Any], env: dict[str, str], version: str) -> dict[str, Any] | None:
    data_dir = Path(conf["dataDir"])
    subnet = ipaddress.IPv4Network(conf["subnet"])
    container, netns, ifname = env["CNI_CONTAINERID"], env.get("CNI_NETNS", ""), env.get("CNI_IFNAME", "eth0")
    if command == "ADD":
        address = _lease(data_dir, subnet, container)
        _ns(netns, "link", "add", ifname, "type", "veth", "peer", "name", "ktier-peer")
        _ns(netns, "addr", "add", f"{address}/{subnet.prefixlen}", "dev", ifname)
        _ns(netns, "link", "set", "ktier-peer", "up")
        _ns(netns, "link", "set", ifname, "up")
        return {"cniVersion": version, "interfaces": [{"name": ifname, "sandbox": netns}],
                "ips": [_ip_entry(version, f"{address}/{subnet.prefixlen}", 0)], "dns": {}}
    if command == "DEL":
        _release(data_dir, container)
        if netns and Path(netns).exists():
            subprocess.run(["nsenter", f"--net={netns}", "ip", "link", "del", ifname], capture_output=True)
    return None


def main() -> int:
    env = dict(os.environ)
    command = env.get("CNI_COMMAND", "")
    raw = sys.stdin.read()
    conf: dict[str, Any] = json.loads(raw) if raw.strip() else {}
    version = str(conf.get("cniVersion", "1.0.0"))
    if command == "VERSION":
        print(json.dumps({"cniVersion": version, "supportedVersions": SUPPORTED}))
        return 0
    if version not in SUPPORTED:
        return _error(1, f"incompatible CNI version {version}", version)
    try:
        if conf.get("type") == "loopback":
            result = _loopback(command, env.get("CNI_NETNS", ""), version)
        else:
            result = _pod_network(command, conf, env, version)
    except (subprocess.CalledProcessError, RuntimeError, OSError, KeyError) as err:
        detail = err.stderr if isinstance(err, subprocess.CalledProcessError) else str(err)
        return _error(999, f"{command} failed: {detail}", version)
    if result is not None:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
