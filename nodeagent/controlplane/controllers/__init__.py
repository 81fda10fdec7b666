"""The controllers: one module per control loop that keeps store objects in step with others
(upstream pkg/controller/*), each a synchronous class that loop.py drives from the store's watch.

- claims.py: the ResourceClaim controller (claims from templates, their release when pods end,
  ResourceQuota's charge through ../quota.py).
- devicetainteviction.py: the device taint eviction controller (KEP-5055).
- nodelifecycle.py: the node lifecycle controller over every Node (condition taints, Ready Unknown when
  heartbeats stop, NoExecute taints per zone); nodetaints.py: its pure rules.
- resourcequota.py: the resourcequota controller (status.hard and status.used of every ResourceQuota,
  objects/resourcequota.py's evaluators).
- virtual_nodes.py: the configured virtual Nodes with their ResourceSlices and the tiny agent that
  runs their pods on paper.

What goes elsewhere: the scheduler (a loop too, but with a queue, a cache and the allocator) in
scheduler/; classic DRA's controller and scheduling in classic/; what the controllers and the
scheduler both read (store JSON to the allocator's model, DeviceTaintRules, quota, events) beside
them in convert/ and at the control plane's root.
"""
