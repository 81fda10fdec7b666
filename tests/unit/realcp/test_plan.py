"""The real control plane's pure plan: certificates (subjects, groups, usages, SANs), command lines and
probes, kubeconfigs, RBAC; and the PKI made from it (issued once, reused while it fits)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography import x509

from nodeagent.config.model import KubernetesConfig
from nodeagent.realcp import pki, plan

MULTI = KubernetesConfig(binary="/k/multi", etcd_client_port=3379, etcd_peer_port=3380, scheduler_port=3259,
                         controller_manager_port=3257)
RELEASE = KubernetesConfig(binaries={"etcd": "/bin/etcd", "kube-apiserver": "/bin/kube-apiserver",
                                     "kube-scheduler": "/bin/kube-scheduler",
                                     "kube-controller-manager": "/bin/kube-controller-manager"},
                           extra_args={"kube-apiserver": ("--v=3",)})
LAYOUT = plan.Layout(Path("/s/kubernetes"))


def test_endpoints() -> None:
    ep = plan.endpoints("127.0.0.1:6443", MULTI)
    assert (ep.api_url, ep.etcd_url, ep.etcd_peer_url, ep.loopback) == (
        "https://127.0.0.1:6443", "http://127.0.0.1:3379", "http://127.0.0.1:3380", True)
    assert plan.endpoints("localhost:6443", MULTI).api_host == "127.0.0.1"
    wide = plan.endpoints("0.0.0.0:6443", MULTI)
    assert (wide.bind_host, wide.api_host) == ("0.0.0.0", "127.0.0.1")
    assert plan.endpoints("[::1]:6443", MULTI).api_url == "https://[::1]:6443"
    with pytest.raises(plan.PlanError, match=r'needs an IP address to bind, got "node\.example"'):
        plan.endpoints("node.example:6443", MULTI)


def test_certificates_subjects_groups_and_sans() -> None:
    ep = plan.endpoints("192.0.2.10:6443", MULTI)
    specs = {s.name: s for s in plan.certificates(ep, "10.96.0.0/12", ["n1", "n2"])}
    assert list(specs) == ["apiserver", "apiserver-kubelet-client", "admin", "kube-scheduler",
                           "kube-controller-manager", "kubelet-n1", "kubelet-n2"]
    serving = specs["apiserver"]
    assert serving.server and not serving.client
    assert serving.ip_addresses == ("10.96.0.1", "127.0.0.1", "192.0.2.10")
    assert set(serving.dns_names) == {"kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                      "kubernetes.default.svc.cluster.local", "localhost"}
    assert (specs["admin"].common_name, specs["admin"].organizations) == ("kubernetes-admin", ("system:masters",))
    assert (specs["kube-scheduler"].common_name, specs["kube-scheduler"].organizations) == (
        "system:kube-scheduler", ())
    assert specs["kube-controller-manager"].common_name == "system:kube-controller-manager"
    assert (specs["kubelet-n2"].common_name, specs["kubelet-n2"].organizations) == (
        "system:node:n2", ("system:nodes",))
    assert all(s.client and not s.server and not s.dns_names for n, s in specs.items() if n != "apiserver")
    assert plan.service_ip("fd00:10:96::/108") == "fd00:10:96::1"


def test_command_lines_of_a_multi_role_binary() -> None:
    ep = plan.endpoints("127.0.0.1:6443", MULTI)
    comps = plan.components(MULTI, ep, LAYOUT)
    assert [c.role for c in comps] == ["etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"]
    etcd, api, sched, kcm = comps
    # each role runs from the binary with its own name as argv[0] (its client's user agent, the field manager
    # kube-apiserver records), the role next
    assert {c.executable for c in comps} == {"/k/multi"}
    # the fixture's etcd role and its three flags
    assert etcd.argv == ("etcd", "etcd", "--data-dir", "/s/kubernetes/etcd", "--listen-client-url",
                         "http://127.0.0.1:3379", "--listen-peer-url", "http://127.0.0.1:3380")
    assert etcd.probe == plan.Probe("http://127.0.0.1:3379/health", '"health":"true"', "none")
    assert api.argv[:2] == ("kube-apiserver", "kube-apiserver")
    flags = set(api.argv[2:])
    assert {"--etcd-servers=http://127.0.0.1:3379", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            "--secure-port=6443", "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--client-ca-file=/s/kubernetes/pki/ca.crt", "--tls-cert-file=/s/kubernetes/pki/apiserver.crt",
            "--service-account-key-file=/s/kubernetes/pki/sa.pub",
            "--service-account-signing-key-file=/s/kubernetes/pki/sa.key",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--kubelet-client-certificate=/s/kubernetes/pki/apiserver-kubelet-client.crt",
            "--endpoint-reconciler-type=none", "--service-cluster-ip-range=10.96.0.0/12"} <= flags
    assert api.probe == plan.Probe("https://127.0.0.1:6443/readyz", "ok", "client")
    assert sched.argv == ("kube-scheduler", "kube-scheduler", "--kubeconfig=/s/kubernetes/scheduler.conf",
                          "--authentication-kubeconfig=/s/kubernetes/scheduler.conf",
                          "--authorization-kubeconfig=/s/kubernetes/scheduler.conf", "--bind-address=127.0.0.1",
                          "--secure-port=3259", "--leader-elect=false")
    assert sched.probe == plan.Probe("https://127.0.0.1:3259/healthz", "ok", "self-signed")
    assert "--kubeconfig=/s/kubernetes/controller-manager.conf" in kcm.argv
    assert {"--service-account-private-key-file=/s/kubernetes/pki/sa.key", "--root-ca-file=/s/kubernetes/pki/ca.crt",
            "--use-service-account-credentials=true", "--cluster-signing-key-file=/s/kubernetes/pki/ca.key",
            "--secure-port=3257"} <= set(kcm.argv)


def test_command_lines_of_release_binaries() -> None:
    ep = plan.endpoints("0.0.0.0:6443", RELEASE)
    etcd, api, sched, _ = plan.components(RELEASE, ep, LAYOUT)
    assert etcd.argv == ("/bin/etcd", "--name", "nodeagent", "--data-dir", "/s/kubernetes/etcd",
                         "--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls",
                         "http://127.0.0.1:2379", "--listen-peer-urls", "http://127.0.0.1:2380",
                         "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                         "--initial-cluster", "nodeagent=http://127.0.0.1:2380")
    assert api.argv[0] == "/bin/kube-apiserver" and api.argv[-1] == "--v=3"  # extraArgs last: they win
    # every interface: kube-apiserver picks its advertised address, and it is no loopback one
    assert not any(a.startswith("--advertise-address") or a.startswith("--endpoint-reconciler") for a in api.argv)
    assert sched.argv[0] == "/bin/kube-scheduler" and "--secure-port=10259" in sched.argv


def test_kubeconfig_and_rbac() -> None:
    conf = plan.kubeconfig("https://127.0.0.1:6443", b"CA", b"CERT", b"KEY", "system:node:n1")
    assert conf["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:6443",
                                              "certificate-authority-data": "Q0E="}
    assert conf["users"] == [{"name": "system:node:n1", "user": {"client-certificate-data": "Q0VSVA==",
                                                                 "client-key-data": "S0VZ"}}]
    assert conf["current-context"] == "system:node:n1@kubernetes"
    # a node has a kubelet's identity and asks no more than a kubelet (each claim by GET, none listed):
    # nothing is granted to system:nodes beyond the Node authorizer and upstream's bootstrap policy
    assert plan.rbac_objects() == ()
    # the virtual nodes' one identity: an RBAC user (not a kubelet's), its leases in kube-node-lease only
    objs = plan.rbac_objects(virtual_nodes=True)
    paths = [plan.object_path(o) for o in objs]
    assert paths == ["/apis/rbac.authorization.k8s.io/v1/clusterroles/nodeagent-virtual-nodes",
                     "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/nodeagent-virtual-nodes",
                     "/apis/rbac.authorization.k8s.io/v1/clusterroles/nodeagent-virtual-nodes-lease",
                     "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-node-lease/rolebindings/"
                     "nodeagent-virtual-nodes-lease"]
    assert all(o["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                  "name": "nodeagent:virtual-nodes"}] for o in objs if "subjects" in o)
    specs = plan.certificates(plan.endpoints("127.0.0.1:6443", MULTI), "10.96.0.0/12", [], virtual_nodes=True)
    assert (specs[-1].name, specs[-1].common_name, specs[-1].organizations) == (
        "virtual-nodes", "nodeagent:virtual-nodes", ())


def test_pki_issued_once_and_reissued_only_when_unfit(tmp_path: Path) -> None:
    layout = plan.Layout(tmp_path / "kubernetes")
    now = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)
    ep = plan.endpoints("127.0.0.1:6443", MULTI)
    specs = plan.certificates(ep, "10.96.0.0/12", ["n1"])
    pki.ensure(layout, specs, now)
    for spec in specs:
        cert = x509.load_pem_x509_certificate(layout.cert(spec.name).read_bytes())
        assert pki.describe(cert) == pki.describe_spec(spec), spec.name
        assert oct(layout.key(spec.name).stat().st_mode & 0o777) == "0o600"
    node = x509.load_pem_x509_certificate(layout.cert("kubelet-n1").read_bytes())
    assert node.subject.rfc4514_string() == "CN=system:node:n1,O=system:nodes"
    before = {p.name: p.read_bytes() for p in layout.pki.iterdir()}
    pki.ensure(layout, specs, now + dt.timedelta(days=100))  # a restart: everything fits, nothing changes
    assert {p.name: p.read_bytes() for p in layout.pki.iterdir()} == before
    # a new bind address: only the serving certificate is issued again, by the same CA
    moved = plan.certificates(plan.endpoints("192.0.2.7:6443", MULTI), "10.96.0.0/12", ["n1"])
    pki.ensure(layout, moved, now)
    after = {p.name: p.read_bytes() for p in layout.pki.iterdir()}
    assert sorted(n for n in before if before[n] != after[n]) == ["apiserver.crt", "apiserver.key"]
    # close to expiry: issued again
    pki.ensure(layout, moved, now + dt.timedelta(days=340))
    assert layout.cert("admin").read_bytes() != after["admin.crt"]
    assert layout.cert("ca").read_bytes() == before["ca.crt"]
