"""Hardening of the HTTP app, one pure-ASGI middleware plus CORS (issue 21 §4):

- **Bearer token** (``KGRAG_API_KEY``): when set, every request but ``GET /healthz``, the console page (``/`` and
  its assets under ``/console/assets/``: they hold no data, and the page asks for the key) and CORS preflights needs
  ``Authorization: Bearer <key>``, compared in constant time; otherwise 401 with a JSON message and
  ``WWW-Authenticate: Bearer``. The OpenAPI then declares the ``HTTPBearer`` scheme. Unset: no auth (default).
- **Body size** (``KGRAG_MAX_BODY_BYTES``, default 1 MiB): a ``Content-Length`` above it is a 413 before the route
  runs; a chunked body (no ``Content-Length``) is counted while it is read and is a 413 once it passes the limit.
- **Timeout** (``KGRAG_REQUEST_TIMEOUT``, default 60 s): a handler that has not started its response by then gets a
  504 with a message. Sync routes run in the threadpool and a thread cannot be killed: the timeout bounds the
  *response*; the thread finishes its work in the background and its result is discarded.
- **CORS** (``KGRAG_CORS_ORIGINS``): off by default; a list of origins turns on Starlette's ``CORSMiddleware``.

Errors under ``/api/agent-retrieval/`` and ``/api/query`` use those routes' ``{"error": …, "field": null}`` body;
elsewhere FastAPI's ``{"detail": …}``.

    harden(app, settings)   # in create_app; KGRAG_API_KEY=s3cret kgrag serve; curl -H 'Authorization: Bearer s3cret' …
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware

from kgrag.config import Settings

__all__ = ["BodyTooLarge", "SecurityMiddleware", "harden"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz", "/"})
#: the console page's scripts and styles (no data): served without a key, so the page can load and ask for one
OPEN_PREFIXES = ("/console/assets/",)
ERROR_CONTRACT_PREFIXES = ("/api/agent-retrieval/", "/api/query")


class BodyTooLarge(HTTPException):
    """Raised by the counting ``receive`` once a body passes the limit (FastAPI re-raises HTTPExceptions met
    while it reads a body; the middleware answers 413 for any route that lets it through)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body larger than {limit} bytes (KGRAG_MAX_BODY_BYTES)")


def _error_body(path: str, message: str) -> bytes:
    body = {"error": message, "field": None} if path.startswith(ERROR_CONTRACT_PREFIXES) else {"detail": message}
    return json.dumps(body).encode()


async def _send_error(send: Send, path: str, status: int, message: str,
                      headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = _error_body(path, message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """Auth, body limit and handler timeout in one pass (pure ASGI: no per-request Request object or streaming
    wrapper). ``api_key`` empty = no auth; ``timeout`` ≤ 0 = no timeout."""

    def __init__(self, app: ASGIApp, *, api_key: str = "", max_body_bytes: int = 1 << 20,
                 timeout: float = 60.0) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode() if api_key else b""
        self.max_body_bytes = max_body_bytes
        self.timeout = timeout

    def _authorised(self, scope: Scope) -> bool:
        if not self.expected or scope["path"] in OPEN_PATHS or scope["path"].startswith(OPEN_PREFIXES):
            return True
        given = b""
        preflight = False
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
            elif name == b"access-control-request-method":
                preflight = scope["method"] == "OPTIONS"  # a CORS preflight carries no credentials
        if preflight:
            return True
        # the scheme is case-insensitive (RFC 7235); the key is compared in constant time
        if given[:7].lower() == b"bearer ":
            given = b"Bearer " + given[7:].strip()
        return hmac.compare_digest(given, self.expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if not self._authorised(scope):
            await _send_error(send, path, 401, "missing or invalid bearer token (Authorization: Bearer <key>)",
                              [(b"www-authenticate", b"Bearer")])
            return
        limit = self.max_body_bytes
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    too_large = int(value) > limit
                except ValueError:
                    too_large = False  # the server rejects a malformed length itself
                if too_large:
                    await _send_error(send, path, 413, BodyTooLarge(limit).detail, [(b"connection", b"close")])
                    return
                break
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        started = timed_out = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if timed_out:
                return  # the handler finished after its 504: its response is dropped
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        if self.timeout <= 0:
            await self._run(scope, counting_receive, guarded_send, path, lambda: started)
            return
        # a timer, not a task per request (cheap): on expiry it sends the 504 from a task of its own and cancels
        # this one; a sync route's thread cannot be cancelled, so this task may only end once the thread is done
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        responder: asyncio.Task[None] | None = None

        def expire() -> None:
            nonlocal timed_out, responder
            if started:
                return  # a response is already on its way: let it finish
            timed_out = True
            responder = loop.create_task(_send_error(
                send, path, 504, f"the handler did not answer within {self.timeout:g} s (KGRAG_REQUEST_TIMEOUT)"))
            if task is not None:
                task.cancel()

        timer = loop.call_later(self.timeout, expire)
        try:
            await self._run(scope, counting_receive, guarded_send, path, lambda: started)
        except asyncio.CancelledError:
            if not timed_out or task is None:
                raise
            task.uncancel()  # our own cancellation: the 504 below is the answer
        finally:
            timer.cancel()
        if responder is not None:
            await responder

    async def _run(self, scope: Scope, receive: Receive, send: Send, path: str,
                   started: Callable[[], bool]) -> None:
        """The app, with a body that passed the limit answered 413 (unless a response had already started)."""
        try:
            await self.app(scope, receive, send)
        except BodyTooLarge as exc:
            if started():
                raise
            await _send_error(send, path, 413, exc.detail, [(b"connection", b"close")])


def _declare_bearer(app: FastAPI) -> None:
    """The OpenAPI says every operation needs the ``HTTPBearer`` scheme, but ``/healthz``."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["HTTPBearer"] = {
            "type": "http", "scheme": "bearer", "description": "KGRAG_API_KEY"}
        schema["security"] = [{"HTTPBearer": []}]
        for path in OPEN_PATHS:
            for operation in schema.get("paths", {}).get(path, {}).values():
                operation["security"] = []
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def harden(app: FastAPI, settings: Settings) -> None:
    """Add the security middleware (and CORS when origins are configured, outermost so preflights are answered
    before auth) to ``app``; declare the bearer scheme in the OpenAPI when a key is set."""
    api_key = settings.api_key.get_secret_value()
    app.add_middleware(SecurityMiddleware, api_key=api_key, max_body_bytes=settings.max_body_bytes,
                       timeout=settings.request_timeout)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["*"],
                           allow_headers=["*"], allow_credentials=False)
    if api_key:
        _declare_bearer(app)
