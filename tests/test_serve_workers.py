"""``kgrag serve --workers 2``: one SO_REUSEPORT socket per worker, so keep-alive connections opened together reach
both workers (uvicorn's shared socket gave them all to one), and SIGTERM stops every worker."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import httpx

from harness.servers.ports import free_port
from harness.servers.process import server_process


def test_two_workers_share_connections_and_stop_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "KGRAG_WORK_DIR": str(tmp_path / "work"), "KGRAG_API_KEY": ""}
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "kgrag.cli", "serve", "--port", str(port), "--workers", "2", "--no-warm"]
    with server_process(command, env, tmp_path / "serve.log", f"{base}/healthz", "kgrag serve --workers 2") as proc:
        pids: set[int] = set()
        deadline = time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline:  # the second worker may still be starting
            clients = [httpx.Client(base_url=base, timeout=10) for _ in range(16)]  # 16 connections at once
            try:
                answers = [client.get("/healthz") for client in clients]
                pids |= {r.json()["pid"] for r in answers if r.status_code == 200}
                # a keep-alive connection stays with its worker
                assert {clients[0].get("/healthz").json()["pid"] for _ in range(3)} == {answers[0].json()["pid"]}
            finally:
                for client in clients:
                    client.close()
            time.sleep(0.5)
        assert len(pids) == 2, f"one worker answered every connection: {pids}"
        assert proc.pid not in pids  # the parent supervises, the workers serve
        proc.send_signal(signal.SIGTERM)  # the parent alone: it stops its workers
        assert proc.wait(timeout=60) == 0
        for pid in pids:
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        try:
            httpx.get(f"{base}/healthz", timeout=2)
            raise AssertionError("a worker still answers after SIGTERM")
        except httpx.TransportError:
            pass
