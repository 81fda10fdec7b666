"""The control plane: the scheduler and the controllers over the pure DRA allocator.

- allocator/: which devices a pod's claims get on one node (pure: no I/O, no asyncio, so the
  scheduler calls it per node in a tight loop). nodeagent.cel evaluates device selectors (a leaf
  package of its own: the API's validation compiles them too).
- scheduler/: the scheduler (cluster cache, queue, node pass, binder; extended resources backed by
  DRA in scheduler/extended.py, which only the scheduler uses).
- controllers/: one module per controller loop (claims, device taint eviction, node lifecycle,
  virtual nodes).
- classic/: classic DRA (PodSchedulingContext) controller and scheduling.
- convert/: store JSON <-> the allocator's model, shared by the scheduler and the controllers.
- At the root, what several of them share: loop.py (asyncio tasks driving the synchronous
  controllers and scheduler from the store's watch), events.py (the Event recorders), metrics.py,
  quota.py (ResourceQuota's evaluator: the claim controller and the admin API), taint_rules.py
  (DeviceTaintRules merged into devices: the scheduler's cache and the eviction controller).
"""
