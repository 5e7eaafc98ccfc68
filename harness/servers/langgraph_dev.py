"""Start ``langgraph dev`` (in-memory runtime) serving the agent graph of ``langgraph.json`` on a loopback port, and
always stop it: what tests and the agent benchmark use.

    with langgraph_dev(env={"KGRAG_DATABASE_URL": url}) as base_url:
        get_sync_client(url=base_url).runs.wait(None, "agent", input={"question": "百日咳有哪些症状"})
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from harness.servers.ports import free_port
from harness.servers.process import server_process

__all__ = ["REPO_ROOT", "langgraph_dev"]

REPO_ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def langgraph_dev(env: Mapping[str, str] | None = None, port: int | None = None, startup_seconds: float = 180,
                  log_path: Path | None = None) -> Iterator[str]:
    """Yield the server's base URL once ``/ok`` answers; :class:`KgragError` with the log's tail when it does not
    come up. The process group is terminated (then killed) on exit."""
    port = port or free_port()
    log_path = log_path or Path(tempfile.mkdtemp(prefix="langgraph-")) / "langgraph.log"
    full_env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false",
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    langgraph = Path(sys.executable).with_name("langgraph")
    url = f"http://127.0.0.1:{port}"
    with server_process([str(langgraph), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port",
                         str(port), "--config", str(REPO_ROOT / "langgraph.json")], full_env, log_path,
                        f"{url}/ok", "langgraph dev", startup_seconds, cwd=REPO_ROOT):
        yield url
