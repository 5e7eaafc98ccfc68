"""Start ``kgrag serve`` as a child process on a free loopback port and always stop it: what the console's browser
tests and its benchmark use (:func:`harness.servers.process.server_process`).

    with kgrag_serve({"KGRAG_DATABASE_URL": url}, Path("/tmp/logs")) as base_url:
        httpx.get(base_url + "/healthz")
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from harness.servers.ports import free_port
from harness.servers.process import server_process

__all__ = ["kgrag_serve"]


@contextmanager
def kgrag_serve(env: Mapping[str, str], log_dir: Path, warm: bool = False, startup_seconds: float = 180
                ) -> Iterator[str]:
    """Yield the base URL once ``/healthz`` answers (``KgragError`` with the log's tail when it does not)."""
    port = free_port()
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env}
    kgrag = Path(sys.executable).with_name("kgrag")
    url = f"http://127.0.0.1:{port}"
    log_dir.mkdir(parents=True, exist_ok=True)
    command = [str(kgrag), "serve", "--host", "127.0.0.1", "--port", str(port), "--warm" if warm else "--no-warm"]
    with server_process(command, full_env, log_dir / "serve.log", f"{url}/healthz", "kgrag serve", startup_seconds):
        yield url
