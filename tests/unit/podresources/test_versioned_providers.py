"""Every provider the daemon hands to pod-resources reports a generation.

Without it the lister cannot reuse its encoded List answer and rebuilds it on every call
(bench/podresources.py fell from 0.82 to 0.08 of the empty handler when one was missing).
"""

from __future__ import annotations

import pytest

from nodeagent.cm.cpumanager.manager import CPUManager, NoMemoryManager
from nodeagent.devices.manager import DeviceManager
from nodeagent.dra.manager import DRAManager
from nodeagent.podresources.lister import Versioned
from nodeagent.pods.manager import PodManager


@pytest.mark.parametrize("provider", [PodManager, DeviceManager, CPUManager, NoMemoryManager, DRAManager])
def test_daemon_providers_are_versioned(provider: type) -> None:
    assert issubclass(provider, Versioned), f"{provider.__name__} has no generation()"
