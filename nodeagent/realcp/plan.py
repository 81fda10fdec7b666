"""The real control plane on paper: certificates, command lines, probes and RBAC, as pure values.

Follows what kubeadm makes for a single control-plane node (cmd/kubeadm/app/phases/certs and
kubeconfig, controlplane/manifests.go), with these intended differences, each for a reason:
- etcd listens on loopback over plain HTTP, without kubeadm's etcd CA and client certificates: the
  project's multi-role binary (tests/fixtures/kube-apiserver) embeds an etcd that takes no TLS flags,
  and a single-machine control plane keeps etcd off the network; anyone with a local account can
  reach a loopback port, so this is for development machines, as the README says;
- the admin kubeconfig's user is in system:masters (kubeadm's super-admin.conf) rather than
  kubeadm:cluster-admins, which would need a ClusterRoleBinding before the first request;
- kube-scheduler and kube-controller-manager run with --leader-elect=false: the daemon's lock on its
  state dir already makes each one the only instance, and a restarted one would otherwise wait out
  its predecessor's lease;
- when kube-apiserver's address is a loopback one, --endpoint-reconciler-type=none: the `kubernetes`
  Service's endpoints may not be a loopback address (upstream's integration framework does the same).

Nothing here touches a file, a process or the network: pki.py, supervise.py and bootstrap.py do.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeagent.config.model import KubernetesConfig

ETCD, APISERVER, SCHEDULER, CONTROLLER_MANAGER = "etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"

# kubeadm's names: the certificate files (pki/NAME.crt, pki/NAME.key) and the users they authenticate.
CA = "ca"
SERVING = "apiserver"
KUBELET_CLIENT = "apiserver-kubelet-client"
ADMIN = "admin"
SERVICE_ACCOUNT_KEY = "sa"
ADMIN_USER, ADMIN_GROUPS = "kubernetes-admin", ("system:masters",)
KUBELET_CLIENT_USER = "kube-apiserver-kubelet-client"
SCHEDULER_USER = "system:kube-scheduler"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
NODES_GROUP = "system:nodes"
# The virtual nodes of this process share one API client (nodeapi/virtual.py), so one identity: not a kubelet's
# (the Node authorizer holds a system:node:NAME credential to one node), an RBAC user with the rules below.
VIRTUAL_NODES = "virtual-nodes"
VIRTUAL_NODES_USER = "nodeagent:virtual-nodes"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
CLUSTER_NAME = "kubernetes"
# The serving certificate names every way a client inside or outside the cluster reaches the API
# server (kubeadm's apiserver certificate: GetAPIServerAltNames).
SERVING_DNS = ("kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
               "localhost")


class PlanError(ValueError):
    """The settings cannot make a control plane (an address kube-apiserver cannot bind)."""


def node_user(node: str) -> str:
    """A kubelet's user name: the Node authorizer and NodeRestriction key on it."""
    return f"system:node:{node}"


@dataclass(frozen=True)
class CertSpec:
    """One certificate the CA issues: its file stem under pki/, subject and usages."""

    name: str
    common_name: str
    organizations: tuple[str, ...] = ()
    server: bool = False  # serverAuth, with the SANs below
    client: bool = False  # clientAuth: the user is the CN, the groups the Os
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()


@dataclass(frozen=True)
class Endpoints:
    """Where each component listens; kube-apiserver's host is an IP (the one clients dial)."""

    api_host: str
    api_port: int
    bind_host: str  # what --bind-address gets: the host, or the unspecified address it was given
    etcd_client_port: int
    etcd_peer_port: int
    scheduler_port: int
    controller_manager_port: int

    @property
    def api_url(self) -> str:
        host = f"[{self.api_host}]" if ":" in self.api_host else self.api_host
        return f"https://{host}:{self.api_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_client_port}"

    @property
    def etcd_peer_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_peer_port}"

    @property
    def loopback(self) -> bool:
        """Whether kube-apiserver listens on loopback only (and so advertises a loopback address)."""
        return ipaddress.ip_address(self.bind_host).is_loopback


def endpoints(bind_address: str, k: KubernetesConfig) -> Endpoints:
    """kube-apiserver's bind address ("host:port", controlPlane.apiServer.bindAddress) and the other ports.

    "localhost" means 127.0.0.1 (--bind-address takes an IP); an unspecified address (0.0.0.0, ::)
    binds every interface and clients dial loopback.
    """
    host, _, port = bind_address.rpartition(":")
    host = host.strip("[]")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise PlanError(f'kube-apiserver needs an IP address to bind, got "{host}" ({bind_address})') from None
    dial = ("::1" if ip.version == 6 else "127.0.0.1") if ip.is_unspecified else host
    return Endpoints(api_host=dial, api_port=int(port), bind_host=host, etcd_client_port=k.etcd_client_port,
                     etcd_peer_port=k.etcd_peer_port, scheduler_port=k.scheduler_port,
                     controller_manager_port=k.controller_manager_port)


def service_ip(service_range: str) -> str:
    """The `kubernetes` Service's ClusterIP: the first address of the range (as kube-apiserver picks it)."""
    net = ipaddress.ip_network(service_range)
    return str(net.network_address + 1)


def certificates(ep: Endpoints, service_range: str, nodes: Sequence[str],
                 virtual_nodes: bool = False) -> tuple[CertSpec, ...]:
    """Every certificate of the control plane and of the nodes joining it, in kubeadm's shapes."""
    ips = [service_ip(service_range), "127.0.0.1", ep.api_host]
    if ep.bind_host not in ips and not ipaddress.ip_address(ep.bind_host).is_unspecified:
        ips.append(ep.bind_host)
    specs = [
        CertSpec(SERVING, "kube-apiserver", server=True, dns_names=SERVING_DNS,
                 ip_addresses=tuple(dict.fromkeys(ips))),
        # how kube-apiserver authenticates to kubelets (node proxy, logs, exec)
        CertSpec(KUBELET_CLIENT, KUBELET_CLIENT_USER, ADMIN_GROUPS, client=True),
        CertSpec(ADMIN, ADMIN_USER, ADMIN_GROUPS, client=True),
        CertSpec(SCHEDULER, SCHEDULER_USER, client=True),
        CertSpec(CONTROLLER_MANAGER, CONTROLLER_MANAGER_USER, client=True),
    ]
    specs += [CertSpec(f"kubelet-{n}", node_user(n), (NODES_GROUP,), client=True) for n in nodes]
    if virtual_nodes:
        specs.append(CertSpec(VIRTUAL_NODES, VIRTUAL_NODES_USER, client=True))
    return tuple(specs)


@dataclass(frozen=True)
class Layout:
    """The files under STATE_DIR/kubernetes, with kubeadm's names where kubeadm has one."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def cert(self, name: str) -> Path:
        return self.pki / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.pki / f"{name}.key"

    @property
    def sa_key(self) -> Path:
        return self.pki / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.pki / "sa.pub"

    def kubeconfig(self, name: str) -> Path:
        """admin.conf, scheduler.conf, controller-manager.conf, kubelet-NODE.conf."""
        return self.root / f"{name}.conf"

    def log(self, role: str) -> Path:
        return self.logs / f"{role}.log"


# which certificate each component kubeconfig carries, and the kubeconfig's file stem
KUBECONFIGS = {ADMIN: ADMIN, SCHEDULER: "scheduler", CONTROLLER_MANAGER: "controller-manager"}


@dataclass(frozen=True)
class Probe:
    """A readiness probe: GET `url`, ready on 200 with `expect` in the body. `tls`: "none" (plain
    HTTP), "client" (the cluster CA, the admin's certificate) or "self-signed" (the component's own
    serving certificate, which nothing else vouches for: kubeadm's static-pod probes skip verification too)."""

    url: str
    expect: str
    tls: str


@dataclass(frozen=True)
class Component:
    """One process: `argv` run from `executable` when given (a multi-role binary, run with the role's
    own name as argv[0]), else from argv[0]."""

    role: str
    argv: tuple[str, ...]
    probe: Probe
    executable: str = ""


def _command(k: KubernetesConfig, role: str) -> tuple[tuple[str, ...], str]:
    """(argv's start, executable). A multi-role binary runs as `ROLE ROLE ...`: the component names its
    client after argv[0] (client-go's default user agent), and kube-apiserver records that name as the
    field manager of its writes, so kube-controller-manager's and kube-scheduler's managedFields say
    so as with upstream's release binaries, not the binary's file name."""
    if k.binary:
        return (role, role), k.binary
    return k.program(role), ""


def components(k: KubernetesConfig, ep: Endpoints, layout: Layout) -> tuple[Component, ...]:
    """The four processes in start order: each needs the one before it serving."""
    cmd, exe = _command(k, ETCD)
    out = [Component(ETCD, (*cmd, *_etcd_flags(k, ep, layout), *k.extra_args.get(ETCD, ())),
                     Probe(f"{ep.etcd_url}/health", '"health":"true"', "none"), exe)]
    cmd, exe = _command(k, APISERVER)
    out.append(Component(APISERVER, (*cmd, *apiserver_flags(k, ep, layout), *k.extra_args.get(APISERVER, ())),
                         Probe(f"{ep.api_url}/readyz", "ok", "client"), exe))
    for role, port, extra in ((SCHEDULER, ep.scheduler_port, ()),
                              (CONTROLLER_MANAGER, ep.controller_manager_port, controller_manager_flags(k, layout))):
        conf = layout.kubeconfig(KUBECONFIGS[role])
        flags = (f"--kubeconfig={conf}", f"--authentication-kubeconfig={conf}", f"--authorization-kubeconfig={conf}",
                 "--bind-address=127.0.0.1", f"--secure-port={port}", "--leader-elect=false", *extra)
        cmd, exe = _command(k, role)
        out.append(Component(role, (*cmd, *flags, *k.extra_args.get(role, ())),
                             Probe(f"https://127.0.0.1:{port}/healthz", "ok", "self-signed"), exe))
    return tuple(out)


def _etcd_flags(k: KubernetesConfig, ep: Endpoints, layout: Layout) -> tuple[str, ...]:
    """A single-member etcd on loopback. The multi-role binary's etcd role has its own three flags
    (tests/fixtures/kube-apiserver/etcd.go); a release etcd takes upstream's."""
    if k.binary:
        return ("--data-dir", str(layout.etcd_data), "--listen-client-url", ep.etcd_url,
                "--listen-peer-url", ep.etcd_peer_url)
    return ("--name", "nodeagent", "--data-dir", str(layout.etcd_data),
            "--listen-client-urls", ep.etcd_url, "--advertise-client-urls", ep.etcd_url,
            "--listen-peer-urls", ep.etcd_peer_url, "--initial-advertise-peer-urls", ep.etcd_peer_url,
            "--initial-cluster", f"nodeagent={ep.etcd_peer_url}")


def apiserver_flags(k: KubernetesConfig, ep: Endpoints, layout: Layout) -> tuple[str, ...]:
    """kube-apiserver as kubeadm's manifest runs it, less etcd's TLS (see the module docstring)."""
    flags = [
        f"--etcd-servers={ep.etcd_url}",
        f"--bind-address={ep.bind_host}", f"--secure-port={ep.api_port}",
        f"--tls-cert-file={layout.cert(SERVING)}", f"--tls-private-key-file={layout.key(SERVING)}",
        f"--client-ca-file={layout.cert(CA)}",
        f"--service-account-key-file={layout.sa_pub}", f"--service-account-signing-key-file={layout.sa_key}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-cluster-ip-range={k.service_cluster_ip_range}",
        "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
        "--allow-privileged=true",
        f"--kubelet-client-certificate={layout.cert(KUBELET_CLIENT)}",
        f"--kubelet-client-key={layout.key(KUBELET_CLIENT)}",
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
        "--profiling=false",
    ]
    if not ipaddress.ip_address(ep.bind_host).is_unspecified:
        flags.insert(2, f"--advertise-address={ep.api_host}")
    if ep.loopback:
        flags.append("--endpoint-reconciler-type=none")
    return tuple(flags)


def controller_manager_flags(k: KubernetesConfig, layout: Layout) -> tuple[str, ...]:
    """kubeadm's: service-account tokens signed with the API server's key, CSRs signed by the cluster CA."""
    return (f"--service-account-private-key-file={layout.sa_key}", f"--root-ca-file={layout.cert(CA)}",
            "--use-service-account-credentials=true", f"--service-cluster-ip-range={k.service_cluster_ip_range}",
            f"--cluster-signing-cert-file={layout.cert(CA)}", f"--cluster-signing-key-file={layout.key(CA)}",
            "--controllers=*,bootstrapsigner,tokencleaner")


def kubeconfig(server: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes, user: str,
               namespace: str = "default") -> dict[str, Any]:
    """A clientcmd v1 Config authenticating as `user` by client certificate (data inlined, as kubeadm writes)."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    context = f"{user}@{CLUSTER_NAME}"
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": user, "user": {"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)}}],
        "contexts": [{"name": context, "context": {"cluster": CLUSTER_NAME, "user": user, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }


# A nodeagent node needs nothing beyond a kubelet's rights (the Node authorizer and upstream's bootstrap
# policy, made by kube-apiserver itself): it GETs each ResourceClaim of its pods, as the kubelet does,
# and lists none (the ClusterRole nodeagent-node-claims that granted such a list is no longer applied).
_RBAC = "rbac.authorization.k8s.io"
# What the virtual nodes' shared client asks (nodeagent/nodeapi/remote.py through nodeapi/virtual.py): their
# Nodes (list by label, create, label patch, status PUT), the pods bound to them (list/watch all, status
# patch, delete), events, claims (list/watch), their ResourceSlices; their Leases in kube-node-lease only.
VIRTUAL_NODES_RULES: tuple[Mapping[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "create", "patch"]},
    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["update"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
     "verbs": ["get", "list", "watch", "create", "update", "delete", "deletecollection"]},
)
VIRTUAL_NODES_LEASE_RULES = ({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["get", "create", "update"]},)


def _role_and_binding(name: str, rules: Sequence[Mapping[str, Any]], user: str,
                      namespace: str | None = None) -> tuple[Mapping[str, Any], ...]:
    """A ClusterRole and its binding to `user`: cluster-wide, or a RoleBinding in `namespace`."""
    binding: dict[str, Any] = {
        "apiVersion": f"{_RBAC}/v1", "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": _RBAC, "kind": "User", "name": user}]}
    return ({"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": list(rules)},
            binding)


def rbac_objects(virtual_nodes: bool = False) -> tuple[Mapping[str, Any], ...]:
    """The RBAC objects applied once kube-apiserver is ready (server-side apply: idempotent): the
    virtual nodes' shared identity's, if any (the daemon's own nodes have a kubelet's identity)."""
    if not virtual_nodes:
        return ()
    return (*_role_and_binding("nodeagent-virtual-nodes", VIRTUAL_NODES_RULES, VIRTUAL_NODES_USER),
            *_role_and_binding("nodeagent-virtual-nodes-lease", VIRTUAL_NODES_LEASE_RULES, VIRTUAL_NODES_USER,
                               "kube-node-lease"))


def object_path(obj: Mapping[str, Any]) -> str:
    """The REST path of an RBAC object rbac_objects makes."""
    plural = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
              "RoleBinding": "rolebindings"}[obj["kind"]]
    namespace = obj["metadata"].get("namespace")
    scope = f"namespaces/{namespace}/" if namespace else ""
    return f"/apis/rbac.authorization.k8s.io/v1/{scope}{plural}/{obj['metadata']['name']}"
