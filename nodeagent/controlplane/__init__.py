"""The control plane: object-level loops (claim controller, scheduler) and the pure DRA allocator.

`cel` evaluates device selectors; `allocator` decides which devices a pod's claims get on one
node. Both are pure (no I/O, no asyncio) so the scheduler can call them per node in a tight loop.
"""
