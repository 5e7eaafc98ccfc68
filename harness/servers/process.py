"""A server started as a child process: wait until its health URL answers 200, always stop it (its whole process
group: terminate, then kill). What the ``langgraph dev``, ``prefect server start`` and ``kgrag serve`` launchers
share.

    with server_process(["prefect", "server", "start", "--port", "4200"], env, log, "http://127.0.0.1:4200/api/health",
                        "prefect server"):
        ...
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from kgrag.errors import KgragError

__all__ = ["server_process"]


@contextmanager
def server_process(command: Sequence[str], env: Mapping[str, str], log_path: Path, health_url: str, name: str,
                   startup_seconds: float = 180, cwd: Path | None = None) -> Iterator[subprocess.Popen]:
    """Start ``command`` (output to ``log_path``), yield it once ``health_url`` answers 200; :class:`KgragError` with
    the log's tail when it exits or is not ready in ``startup_seconds``."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if proc.poll() is not None:
                raise KgragError(f"{name} exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(health_url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise KgragError(f"{name} not ready in {startup_seconds} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
