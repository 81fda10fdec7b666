"""The netdev driver's pure rules: device names, filters, inventory, health, profile parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.errors import ConfigError
from nodeagent.network.model import Link
from plugins.netdev_driver.devices import (
    LinkFilter,
    attributes,
    cdi_env,
    claim_uid_of,
    device_name,
    inventory,
    link_health,
    pod_netns_name,
)
from plugins.netdev_driver.profile import load_profile, parse_profile

REPO = Path(__file__).resolve().parents[3]


def _link(ifname: str, kind: str = "veth", operstate: str = "UP", pci: str | None = None) -> Link:
    return Link(3, ifname, "02:00:00:00:00:01", 1500, kind, operstate, pci, None, admin_up=True)


def test_device_names_are_dns_labels_and_distinct() -> None:
    assert device_name("veth0") == "veth0"
    assert device_name("eth0.100") != device_name("eth0-100")
    assert device_name("eth0.100").startswith("eth0-100-")
    assert device_name("Wlan_1").startswith("wlan-1-")
    long = device_name("x" * 15 + "." + "y" * 60)
    assert len(long) <= 63 and long[-1] != "-"


def test_filter() -> None:
    f = LinkFilter(include=("veth*", "eth*"), exclude=("eth9",), kinds=("veth", "device"))
    assert f.matches(_link("veth1"))
    assert f.matches(_link("eth0", kind="device"))
    assert not f.matches(_link("eth9", kind="device"))
    assert not f.matches(_link("br0", kind="bridge"))
    assert not f.matches(_link("veth2", kind="dummy"))
    assert not LinkFilter().matches(_link("lo", kind="device"))
    assert LinkFilter().matches(_link("anything", kind="bridge"))


def test_health_and_attributes() -> None:
    assert link_health(_link("a", operstate="UP")) == "Healthy"
    assert link_health(_link("a", operstate="UNKNOWN")) == "Healthy"
    assert link_health(_link("a", operstate="DOWN")) == "Unhealthy"
    assert link_health(_link("a", operstate="LOWERLAYERDOWN")) == "Unhealthy"
    assert link_health(None) == "Unknown"
    attrs = attributes(_link("eth0", kind="device", pci="0000:00:03.0"))
    assert attrs == {"ifname": {"string": "eth0"}, "mac": {"string": "02:00:00:00:00:01"},
                     "mtu": {"int": 1500}, "kind": {"string": "device"}, "pciAddress": {"string": "0000:00:03.0"}}
    assert "pciAddress" not in attributes(_link("veth0"))


def test_inventory_keeps_moved_links_published() -> None:
    home = {"veth0": _link("veth0"), "veth1": _link("veth1", operstate="DOWN"), "lo": _link("lo", kind="device")}
    saved = _link("veth2")
    moved = {"veth2": ("nadra-u1", saved)}
    views = inventory(LinkFilter(), home, moved, {"nadra-u1": {}})
    assert [(v.name, v.health, v.prepared_in) for v in views] == [
        ("veth0", "Healthy", None), ("veth1", "Unhealthy", None), ("veth2", "Unknown", "nadra-u1")]
    views = inventory(LinkFilter(), home, moved, {"nadra-u1": {"veth2": _link("veth2", operstate="DOWN")}})
    assert views[2].health == "Unhealthy" and views[2].link == saved
    # moved back already: the live home entry wins
    home["veth2"] = _link("veth2", operstate="UP")
    views = inventory(LinkFilter(), home, moved, {"nadra-u1": {}})
    assert (views[2].health, views[2].prepared_in) == ("Healthy", None)


def test_pod_netns_names() -> None:
    name = pod_netns_name("nadra-", "0b5a6c2e-1111-4222-8333-944445555666")
    assert name == "nadra-0b5a6c2e-1111-4222-8333-944445555666"
    assert claim_uid_of("nadra-", name) == "0b5a6c2e-1111-4222-8333-944445555666"
    assert claim_uid_of("nadra-", "other") is None
    assert cdi_env("ns1", ["a", "b"]) == ("NETDEV_IFNAMES=a,b", "NETDEV_NETNS=/var/run/netns/ns1")


def test_profile_defaults_and_errors() -> None:
    p = parse_profile({})
    assert (p.driver_name, p.pool, p.netns, p.move_to_pod_netns) == ("netdev.nodeagent.dev", "netdev", None, True)
    p = parse_profile({"netns": "lab", "include": ["veth*"], "kinds": ["veth"], "cdiDir": "/var/run/cdi"})
    assert p.netns == "lab" and p.links.include == ("veth*",) and p.links.exclude == ("lo",)
    assert p.cdi_dir == Path("/var/run/cdi")
    for doc, msg in [
        ({"bogus": 1}, r"profile\.bogus: unknown field"),
        ({"netns": "a/b"}, r"profile\.netns"),
        ({"driverName": "Nodots"}, r"profile\.driverName"),
        ({"driverName": "nodots"}, r"must be a domain name"),
        ({"include": [1]}, r"profile\.include\[0\]"),
        ({"cdiDir": "rel"}, r"absolute"),
        ({"cdiKind": "nokind"}, r"profile\.cdiKind"),
        ({"moveToPodNetns": "yes"}, r"profile\.moveToPodNetns: expected bool"),
        ({"healthTimeoutSeconds": True}, r"healthTimeoutSeconds"),
        ({"healthResendSeconds": 0}, r"must be positive"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            parse_profile(doc)


def test_shipped_profile_parses() -> None:
    p = load_profile(REPO / "configs" / "plugins" / "netdev.yaml")
    assert p.driver_name == "netdev.nodeagent.dev"


def test_main_bad_profile_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from plugins.netdev_driver.main import main

    bad = tmp_path / "p.yaml"
    bad.write_text("netns: a/b\n")
    assert main(["--config", str(bad)]) == 2
    assert "netns" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.yaml")]) == 2
