"""The resource.k8s.io kinds (and Node and PodSchedulingContext, which the same store hooks admit).

validation.py is the entry point (validate, the store hooks, the kind table) and re-exports what
callers use; beside it one module per kind or per feature-gated field family (claim, claim_status,
device_class, slice, slice_features, device_taints, list_attributes, taint_rule, nodes, admin_access);
shared.py holds the vocabulary they share (objects/common.py the field checks, shared with pod/);
views.py gives the scheduler and allocator typed read-only views of validated objects.
"""
