"""A free TCP port to start a server on: what every launcher of :mod:`harness.servers` and the tests' own
servers ask for.

    python -c "from harness.servers.ports import free_port; print(free_port(), free_port('::1'))"
"""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A currently free TCP port on ``host`` (IPv6 when it holds a colon)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
