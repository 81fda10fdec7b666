"""The Kubernetes API client a DRA driver publishes its ResourceSlices and reads its claims with.

A submodule of the kit because it loads kubernetes_asyncio and aiohttp, which a device plugin never needs.
"""

from __future__ import annotations

from nodeagent.util.kubeclient import KubeconfigError, error_for_status, load_client, status_of

__all__ = ["KubeconfigError", "error_for_status", "load_client", "status_of"]
