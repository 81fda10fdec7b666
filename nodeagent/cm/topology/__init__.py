"""The machine's cpu topology (sockets, cores, threads, NUMA nodes, L3 groups) for the resource managers."""
