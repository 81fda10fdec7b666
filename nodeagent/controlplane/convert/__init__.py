"""Between store objects (validated resource.k8s.io, Pod and Node JSON) and the allocator's model,
for the scheduler and the controllers alike. Pure: no I/O.

- basic.py: the fields every class, slice, claim and node has, the allocation result back to
  `status.allocation`, and small readers of Pod and Node JSON the controllers share.
- sharing.py: partitionable devices (KEP-4815) and consumable capacity (KEP-5075).
- taints.py: device taints (KEP-5055) and binding conditions (KEP-5007).
The feature-gated fields sit apart so basic.py reads what every object has.
"""
