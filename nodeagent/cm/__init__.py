"""Container manager: capacity, reservations, allocatable, cgroups, eviction, cpu manager.

Entry point: nodeagent.cm.manager.ContainerManager. Pure cores: capacity, allocatable,
resources, cgroups.names/limits, cpumanager.policy, eviction.decision.
"""
