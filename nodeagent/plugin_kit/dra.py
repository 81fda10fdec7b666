"""The API server's own checks of the names and quantities a DRA driver publishes in its ResourceSlices.

A driver validates its profile with them, so what it would publish is refused at start with the
API server's message instead of by the API server later.
"""

from __future__ import annotations

from nodeagent.objects.common import check_device_name, check_driver_name, check_pool_name, check_quantity

__all__ = ["check_device_name", "check_driver_name", "check_pool_name", "check_quantity"]
