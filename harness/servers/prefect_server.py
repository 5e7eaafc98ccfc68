"""A real Prefect server (``prefect server start``) on a free loopback port, its database under ``home``: for
tests, benchmarks and the docs' screenshot (:mod:`harness.screenshot`); always stopped on exit.

    with prefect_server(tmp_path / "prefect") as api_url:     # "http://127.0.0.1:<port>/api"
        os.environ["PREFECT_API_URL"] = api_url
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.servers.ports import free_port
from harness.servers.process import server_process

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
    url = f"http://127.0.0.1:{port}/api"
    env["PREFECT_UI_API_URL"] = url  # the UI it serves calls this API (its default is another port)
    with server_process([str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env,
                        log_path, f"{url}/health", "prefect server", startup_seconds):
        yield url
