"""The workload controllers' decisions (upstream pkg/controller/{deployment,replicaset,...}): pure
modules over store JSON that the managers in controllers/ apply. podhash.py computes the
pod-template-hash exactly as kube-controller-manager does; pods.py holds the rules every
workload controller shares."""
