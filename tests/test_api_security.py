"""The hardened HTTP app (kgrag.api.security) through the real app: bearer auth, body limit (Content-Length and
chunked, the latter through a real uvicorn server), handler timeouts (sync and async), CORS, the settings' bounds.

    .venv/bin/python -m pytest -q tests/test_api_security.py
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError

from harness.servers.ports import free_port
from kgrag.api.app import create_app
from kgrag.config import Settings

KEY = "s3cret-key"
QUERY = "/api/query"
KN_SEARCH = "/api/agent-retrieval/in/v1/kn/kn_search"


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(work_dir=tmp_path / "work", database_url=f"sqlite:///{tmp_path / 'kn.db'}", llm_base_url="",
                    sparql_endpoint="", **overrides)


@contextmanager
def served(app: FastAPI) -> Iterator[str]:
    """``app`` under a real uvicorn server on a free port (stopped on exit)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# -- auth ----------------------------------------------------------------------------------------------------


def test_without_a_key_every_route_is_open_and_the_openapi_declares_each_scope(tmp_path: Path) -> None:
    """No key: every route answers without one; the schema still declares the scheme and each operation's scope
    (a key created later, `kgrag keys create`, turns it on without a restart)."""
    with TestClient(create_app(settings_for(tmp_path))) as client:
        assert client.get("/api/datasets").status_code == 200
        refused = client.post("/api/keys", json={"name": "first", "scope": "admin"})  # an open server mints none
        assert refused.status_code == 403 and "kgrag keys create" in refused.json()["detail"]
        schema = client.get("/openapi.json").json()
        assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
        paths = schema["paths"]
        assert paths["/healthz"]["get"]["security"] == [] and paths["/healthz"]["get"]["x-kgrag-scope"] == "none"
        assert paths["/api/kn/{kn_id}/instances"]["put"]["x-kgrag-scope"] == "write"
        assert paths["/api/keys"]["post"]["x-kgrag-scope"] == "admin"
        assert paths["/api/agent-retrieval/in/v1/kn/kn_search"]["post"]["x-kgrag-scope"] == "read"


def test_with_a_key_every_route_but_healthz_needs_the_bearer_token(tmp_path: Path) -> None:
    app = create_app(settings_for(tmp_path, api_key=KEY))
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY},
                        {"Authorization": f"Basic {KEY}"}, {"Authorization": f"Bearer {KEY}x"}):
            resp = client.get("/api/datasets", headers=headers)
            assert resp.status_code == 401, headers
            assert resp.headers["www-authenticate"] == "Bearer"
            assert "bearer token" in resp.json()["detail"]
        assert client.get("/openapi.json").status_code == 401
        assert client.get("/docs").status_code == 401
        # the kn routes keep their {"error": …} contract, and nothing runs before auth (no body parsing)
        resp = client.post(KN_SEARCH, content=b"{not json")
        assert resp.status_code == 401 and resp.json() == {"error": resp.json()["error"], "field": None}
        good = {"Authorization": f"Bearer {KEY}"}
        assert client.get("/api/datasets", headers=good).status_code == 200
        assert client.get("/api/datasets", headers={"Authorization": f"bearer  {KEY} "}).status_code == 200
        assert client.post(KN_SEARCH, json={"query": "x"}, headers=good).status_code == 400  # kn_id missing
        schema = client.get("/openapi.json", headers=good).json()
    scheme = schema["components"]["securitySchemes"]["HTTPBearer"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer" and "KGRAG_API_KEY" in scheme["description"]
    assert schema["security"] == [{"HTTPBearer": []}]
    assert schema["paths"]["/healthz"]["get"]["security"] == []


def test_the_key_comes_from_the_environment_and_is_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGRAG_API_KEY", KEY)
    settings = settings_for(tmp_path)
    assert settings.api_key.get_secret_value() == KEY and KEY not in repr(settings)
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/datasets").status_code == 401


# -- body size -----------------------------------------------------------------------------------------------


def test_a_declared_body_over_the_limit_is_413_before_the_route_runs(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path, max_body_bytes=2048))) as client:
        resp = client.post(QUERY, content=b"x" * 4096, headers={"content-type": "application/json"})
        assert resp.status_code == 413 and "larger than 2048 bytes" in resp.json()["error"]
        resp = client.post("/api/kg/query", content=b"x" * 4096, headers={"content-type": "application/json"})
        assert resp.status_code == 413 and "KGRAG_MAX_BODY_BYTES" in resp.json()["detail"]
        # under the limit the route answers as before (unknown network: 404)
        resp = client.post(QUERY, json={"query": "x", "kn_id": "nope"})
        assert resp.status_code == 404, resp.text


def test_a_chunked_body_over_the_limit_is_413_over_real_http(tmp_path: Path) -> None:
    def chunks(n: int) -> Iterator[bytes]:
        yield b'{"query": "'
        for _ in range(n):
            yield b"y" * 1024
        yield b'", "kn_id": "nope"}'

    with served(create_app(settings_for(tmp_path, max_body_bytes=4096))) as url:
        resp = httpx.post(url + QUERY, content=chunks(16), headers={"content-type": "application/json"}, timeout=10)
        assert "content-length" not in resp.request.headers and resp.request.headers["transfer-encoding"] == "chunked"
        assert resp.status_code == 413 and "larger than 4096 bytes" in resp.text
        small = httpx.post(url + QUERY, content=chunks(1), headers={"content-type": "application/json"}, timeout=10)
        assert small.status_code == 404, small.text  # read whole, then the route's own answer
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200


# -- timeout -------------------------------------------------------------------------------------------------


def test_a_slow_handler_is_504_and_its_thread_finishes_in_the_background(tmp_path: Path) -> None:
    app = create_app(settings_for(tmp_path, request_timeout=0.5))
    finished = threading.Event()

    @app.get("/slow-sync")
    def slow_sync() -> dict:  # a sync route: runs in the threadpool
        time.sleep(2.0)
        finished.set()
        return {"late": True}

    @app.get("/slow-async")
    async def slow_async() -> dict:
        await asyncio.sleep(30)
        return {"late": True}

    with served(app) as url:
        for path in ("/slow-sync", "/slow-async"):
            start = time.monotonic()
            resp = httpx.get(url + path, timeout=10)
            took = time.monotonic() - start
            assert resp.status_code == 504 and "within 0.5 s" in resp.json()["detail"], resp.text
            assert took < 1.8, took
            if path == "/slow-sync":
                assert not finished.is_set()  # answered while the thread still sleeps
        assert finished.wait(5), "the sync handler's thread should finish in the background"
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        assert httpx.get(url + "/api/datasets", timeout=5).status_code == 200


# -- CORS ----------------------------------------------------------------------------------------------------

PREFLIGHT = {"Origin": "http://ui.example", "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type"}


def test_cors_is_off_by_default(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path))) as client:
        resp = client.get("/api/datasets", headers={"Origin": "http://ui.example"})
        assert resp.status_code == 200 and "access-control-allow-origin" not in resp.headers
        assert client.options(QUERY, headers=PREFLIGHT).status_code == 405


def test_configured_origins_get_cors_headers_even_with_auth_on(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, cors_origins=["http://ui.example"], api_key=KEY)
    with TestClient(create_app(settings)) as client:
        pre = client.options(QUERY, headers=PREFLIGHT)
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "http://ui.example"
        denied = client.get("/api/datasets", headers={"Origin": "http://ui.example"})
        assert denied.status_code == 401 and denied.headers["access-control-allow-origin"] == "http://ui.example"
        other = client.options(QUERY, headers={**PREFLIGHT, "Origin": "http://evil.example"})
        assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
        ok = client.get("/api/datasets", headers={"Origin": "http://ui.example", "Authorization": f"Bearer {KEY}"})
        assert ok.status_code == 200


# -- settings ------------------------------------------------------------------------------------------------


def test_settings_bounds_and_origin_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = settings_for(tmp_path)
    assert (defaults.max_body_bytes, defaults.request_timeout, defaults.cors_origins) == (1 << 20, 60.0, [])
    assert defaults.api_key.get_secret_value() == ""
    for bad in ({"max_body_bytes": 0}, {"max_body_bytes": 1 << 31}, {"request_timeout": 0},
                {"request_timeout": 10_000}):
        with pytest.raises(ValidationError):
            settings_for(tmp_path, **bad)
    monkeypatch.setenv("KGRAG_CORS_ORIGINS", "http://a.example, http://b.example")
    assert settings_for(tmp_path).cors_origins == ["http://a.example", "http://b.example"]
    monkeypatch.setenv("KGRAG_CORS_ORIGINS", '["http://c.example"]')
    assert settings_for(tmp_path).cors_origins == ["http://c.example"]
