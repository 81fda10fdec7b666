"""DRA on the node: the kubelet's cm/dra: driver registration, prepare/unprepare, claim cache, health."""
