"""Classic DRA (KEP-3063): claims allocated by a driver's control-plane controller.

A claim with spec.controllerName is not allocated by the structured allocator. The scheduler
negotiates with the driver controller through a PodSchedulingContext: `scheduling` is the
scheduler's side (potentialNodes, selectedNode, deallocation recovery), `controller` the
driver's side loop (unsuitableNodes, allocate, deallocate, finalizer) around a `driver`
plug-in; `cxl` is the built-in driver for network-attached accelerator pools, `runner`
starts the configured controllers when classic DRA is on (NodeAgentConfiguration.classicDRA).
"""

from nodeagent.controlplane.classic.api import ClassicDecision, ClassicScheduling
from nodeagent.controlplane.classic.runner import ClassicRunner

__all__ = ["ClassicDecision", "ClassicRunner", "ClassicScheduling"]
