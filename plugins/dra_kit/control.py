"""The kit's control socket: plugins.common.control, re-exported so drivers and tests keep importing it here.

`<dra.sock>.ctl` speaks JSON lines; see plugins/common/control.py for the protocol.
"""

from __future__ import annotations

from plugins.common.control import Command, ControlServer, arequest, request

__all__ = ["Command", "ControlServer", "arequest", "request"]
