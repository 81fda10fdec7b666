"""Container manager: capacity, reservations, allocatable, cgroups, eviction, cpu manager.

Entry point: nodeagent.cm.manager.ContainerManager. Pure cores: capacity, allocatable,
cgroups.names/limits, cpumanager.policy, eviction.decision. A pod's effective requests and the
eviction manager's admit handler are in pods/ (resources.py, eviction_admit.py): pods/ runs them and
sits below cm/.
"""
