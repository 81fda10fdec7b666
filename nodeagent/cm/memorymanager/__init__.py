"""The memory manager: None and Static policies, memory and hugepages blocks per NUMA node."""
