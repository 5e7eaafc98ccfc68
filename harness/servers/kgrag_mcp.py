"""Start ``kgrag mcp --transport http`` on a free loopback port and always stop it (the MCP tests).

    with kgrag_mcp_http(env, log_path) as base:   # base + "/mcp", base + "/healthz"
        ...
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from harness.servers.ports import free_port
from harness.servers.process import server_process

__all__ = ["kgrag_mcp_http"]


@contextmanager
def kgrag_mcp_http(env: Mapping[str, str], log_path: Path, startup_seconds: float = 60) -> Iterator[str]:
    """Yield the server's base URL once ``/healthz`` answers (``KgragError`` with the log's tail otherwise)."""
    port = free_port()
    kgrag = Path(sys.executable).parent / "kgrag"
    base = f"http://127.0.0.1:{port}"
    with server_process([str(kgrag), "mcp", "--transport", "http", "--host", "127.0.0.1", "--port", str(port)],
                        env, log_path, f"{base}/healthz", "kgrag mcp --transport http", startup_seconds):
        yield base
