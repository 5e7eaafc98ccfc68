"""A real Prefect server (``prefect server start``) on a free loopback port, its database under ``home``: for
tests and local use; always stopped on exit.

    with prefect_server(tmp_path / "prefect") as api_url:     # "http://127.0.0.1:<port>/api"
        os.environ["PREFECT_API_URL"] = api_url
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from kgrag.errors import KgragError
from kgrag.graph.oxigraph_server import free_port

__all__ = ["prefect_server"]


@contextmanager
def prefect_server(home: Path, port: int | None = None, startup_seconds: float = 240) -> Iterator[str]:
    """Yield the API URL once ``/api/health`` answers; :class:`KgragError` with the log's tail when the server does
    not come up. The process group is terminated (then killed) on exit."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log_path = home / "server.log"
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home / 'prefect.db'}"}
    env.pop("PREFECT_API_URL", None)
    prefect = Path(sys.executable).with_name("prefect")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if proc.poll() is not None:
                raise KgragError(f"prefect server exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise KgragError(f"prefect server not ready in {startup_seconds} s:\n{log_path.read_text()[-3000:]}")
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
