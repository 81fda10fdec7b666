"""A real control plane, one setting away (NodeAgentConfiguration.controlPlane.kubernetes).

etcd, kube-apiserver, kube-scheduler and kube-controller-manager from binaries the user names, laid
out as kubeadm lays out a single control-plane node: one CA, the serving and client certificates, the
service-account key and a kubeconfig per component, all under STATE_DIR/kubernetes and reused across
restarts, with etcd's data beside them. The parts:

- plan.py: pure: which certificates (subjects, SANs, usages), which command lines, which probes, which
  RBAC objects; what a test checks without starting anything;
- pki.py: makes or reuses the certificates and keys the plan names, and writes the kubeconfigs;
- supervise.py: the processes: started in order, each only once the one before answers its readiness
  probe, restarted with backoff when one dies (reported once per exit, with its last log lines),
  stopped in reverse with SIGTERM and, after a bound, SIGKILL;
- bootstrap.py: the HTTP edge: readiness probes and the RBAC objects applied once kube-apiserver is up.

nodeagent/wiring/real_control_plane.py puts them together for the daemon; the daemon's nodes then join
the API server as any node joins a cluster (`cluster.kubeconfig`). Nothing here imports the embedded
API server: this is the path for whoever outgrows it.
"""
