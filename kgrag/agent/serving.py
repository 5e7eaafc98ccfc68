"""Start ``langgraph dev`` (in-memory runtime) serving the agent graph of ``langgraph.json`` on a loopback port, and
always stop it: what tests and the agent benchmark use.

    with langgraph_dev(env={"KGRAG_DATABASE_URL": url}) as base_url:
        get_sync_client(url=base_url).runs.wait(None, "agent", input={"question": "百日咳有哪些症状"})
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from kgrag.errors import KgragError
from kgrag.graph.oxigraph_server import free_port

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
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(langgraph), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
                                 "--port", str(port), "--config", str(REPO_ROOT / "langgraph.json")],
                                cwd=REPO_ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if proc.poll() is not None:
                raise KgragError(f"langgraph dev exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise KgragError(f"langgraph dev not ready in {startup_seconds} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
