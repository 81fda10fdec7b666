"""The gRPC services a DRA plugin may name in its registration (PluginInfo.supported_versions), newest
first, and the kubelet's deadline for its calls.

Why apart from client.py: the registry chooses among them when a plugin registers, and the daemon's
start builds the registry; the client, with the generated DRAPlugin and DRAResourceHealth modules
(~125 M instructions of imports, ~3.5% of a restart to READY=1: issue 25), is imported with the first
plugin that registers. Constants only.
"""

from __future__ import annotations

V1_PLUGIN = "v1.DRAPlugin"
V1BETA1_PLUGIN = "v1beta1.DRAPlugin"
PLUGIN_SERVICES = (V1_PLUGIN, V1BETA1_PLUGIN)
V1_HEALTH = "v1.DRAResourceHealth"
V1BETA1_HEALTH = "v1beta1.DRAResourceHealth"
V1ALPHA1_HEALTH = "v1alpha1.DRAResourceHealth"
HEALTH_SERVICES = (V1_HEALTH, V1BETA1_HEALTH, V1ALPHA1_HEALTH)

CALL_TIMEOUT = 45.0
