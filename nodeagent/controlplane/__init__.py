"""The control plane: object-level loops (claim controller, scheduler) and the pure DRA allocator.

nodeagent.cel evaluates device selectors (a package of its own: the API's validation compiles
them too); `allocator` decides which devices a pod's claims get on one node. Both are pure (no
I/O, no asyncio) so the scheduler can call them per node in a tight loop.
"""
