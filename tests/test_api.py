"""The HTTP app: /healthz through the real `kgrag serve` process, and the app in-process."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
from fastapi.testclient import TestClient

from harness.servers.ports import free_port
from kgrag.api.app import create_app
from kgrag.prep import steps


def _prepare_demo(settings) -> None:
    out = settings.dataset_dir("demo")
    fp = steps.input_fingerprint("demo", settings.data_dir)
    steps.build_graph("demo", settings.data_dir, out, fp)
    steps.load_store(out, fp)


def test_healthz_is_503_until_stores_open(work_settings):
    app = create_app(work_settings)
    assert TestClient(app).get("/healthz").status_code == 503  # lifespan not started
    _prepare_demo(work_settings)
    with TestClient(app) as client:
        body = client.get("/healthz").json()
        assert body["status"] == "ok" and body["datasets"] == ["demo"]
        datasets = client.get("/api/datasets").json()
        assert datasets["demo"]["triples"] == 754
        assert client.get("/openapi.json").status_code == 200


def test_kgrag_serve_process_answers_healthz(work_settings):
    _prepare_demo(work_settings)
    port = free_port()
    env = {**os.environ, "KGRAG_WORK_DIR": str(work_settings.work_dir)}
    proc = subprocess.Popen([sys.executable, "-m", "kgrag.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode(errors="replace")
            try:
                resp = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                if resp.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "kgrag serve did not answer /healthz"
            time.sleep(0.2)
        assert resp.json()["datasets"] == ["demo"]
        while resp.json()["warming"]:  # kgrag serve warms the search path in the background, then says so
            assert time.monotonic() < deadline + 120, "kgrag serve never finished warming"
            time.sleep(0.5)
            resp = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        assert resp.json()["warming"] is False
    finally:
        proc.terminate()
        proc.wait(timeout=20)
