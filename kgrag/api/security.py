"""Hardening of the HTTP app, one pure-ASGI middleware plus CORS (issue 21 §4):

- **Bearer token**: when ``KGRAG_API_KEY`` is set or any scoped key exists (``kgrag keys create``,
  :mod:`kgrag.access.keys`), every request but ``GET /healthz``, the console page (``/`` and its assets under
  ``/console/assets/``: they hold no data, and the page asks for the key) and CORS preflights needs
  ``Authorization: Bearer <key>``; otherwise 401 with a JSON message and ``WWW-Authenticate: Bearer``.
  ``KGRAG_API_KEY`` (compared in constant time) is an admin key over everything; a scoped key's
  :class:`~kgrag.access.grants.Grant` is put on the request (``request.state.kgrag_grant``) for the routes to
  enforce (:mod:`kgrag.api.access`). The key store unreachable: 503 (closed, never open). The OpenAPI declares the
  ``HTTPBearer`` scheme. No key at all: no auth (default).
- **Rate** (``KGRAG_KEY_RATE_PER_MINUTE``, default 0 = none; a key's own ``--rate-per-minute`` wins): a key over its
  rate gets 429 with ``Retry-After`` (:mod:`kgrag.access.limits`).
- **Body size** (``KGRAG_MAX_BODY_BYTES``, default 1 MiB; a key's own ``--max-body-bytes`` when smaller): a
  ``Content-Length`` above it is a 413 before the route
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
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware

from kgrag.access.grants import OPEN, Grant
from kgrag.access.keys import LEGACY_GRANT, MISS, KeyStore
from kgrag.access.limits import RateLimiter
from kgrag.config import Settings

log = logging.getLogger(__name__)

__all__ = ["BodyTooLarge", "LEGACY_GRANT", "SecurityMiddleware", "harden", "key_store_of"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: no key needed: liveness (``/healthz``; ``/ok`` of the LangGraph server this app is mounted on) and the console page
OPEN_PATHS = frozenset({"/healthz", "/ok", "/"})
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
                 timeout: float = 60.0, keys: Callable[[], KeyStore] | None = None,
                 rate_per_minute: int = 0) -> None:
        self.app = app
        self.api_key = api_key
        self.expected = f"Bearer {api_key}".encode() if api_key else b""
        self.max_body_bytes = max_body_bytes
        self.timeout = timeout
        self.keys = keys
        self._store: KeyStore | None = None  # the key store once opened (in a worker thread: it reads the database)
        self.rate_per_minute = rate_per_minute
        self.limiter = RateLimiter()

    def _credentials(self, scope: Scope) -> tuple[bytes, bool]:
        """``(the Authorization header normalised to "Bearer <token>", whether the request is a CORS preflight)``."""
        given = b""
        preflight = False
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
            elif name == b"access-control-request-method":
                preflight = scope["method"] == "OPTIONS"  # a CORS preflight carries no credentials
        # the scheme is case-insensitive (RFC 7235)
        if given[:7].lower() == b"bearer ":
            given = b"Bearer " + given[7:].strip()
        return given, preflight

    def _open_or_credentials(self, scope: Scope) -> Grant | bytes:
        """:data:`~kgrag.access.grants.OPEN` for an open path or a CORS preflight, :data:`LEGACY_GRANT` for
        ``KGRAG_API_KEY`` (no database needed), else the normalised header."""
        if scope["path"] in OPEN_PATHS or scope["path"].startswith(OPEN_PREFIXES):
            return OPEN
        given, preflight = self._credentials(scope)
        if preflight:
            return OPEN
        if self.expected and hmac.compare_digest(given, self.expected):
            return LEGACY_GRANT
        return given

    def _grant(self, scope: Scope) -> Grant | None:
        """The caller's grant (:data:`~kgrag.access.grants.OPEN` when no key exists), ``None`` when a key is needed
        and the request has no valid one. Blocking (the key store's database): run in a worker thread."""
        given = self._open_or_credentials(scope)
        if isinstance(given, Grant):
            return given
        if self.keys is not None:
            if self._store is None:
                self._store = self.keys()
            return self._store.resolve(given, self.api_key)
        return None if self.expected else OPEN  # no key store (a bare middleware): the single key alone

    def _cached_grant(self, scope: Scope) -> Grant | None | object:
        """:meth:`_grant` from the key store's memory alone (:data:`~kgrag.access.keys.MISS` when it cannot tell):
        most requests of a busy key never leave the event loop."""
        given = self._open_or_credentials(scope)
        if isinstance(given, Grant):
            return given
        if self._store is None:  # not opened yet: that reads the database, off the event loop
            return MISS
        return self._store.resolve_cached(given, self.api_key)

    def _authorised(self, scope: Scope) -> bool:
        """Whether the request may pass (the legacy single-key check; tests call it directly)."""
        return self._grant(scope) is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        try:
            grant = self._grant(scope) if self.keys is None else self._cached_grant(scope)
            if grant is MISS:  # the key store's database must be asked: off the event loop
                grant = await anyio.to_thread.run_sync(self._grant, scope)
        except SQLAlchemyError as exc:  # closed, never open: whether a key is needed cannot be known
            orig = getattr(exc, "orig", None) or exc
            reason = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
            log.warning("key store unavailable: %s", reason)
            await _send_error(send, path, 503, f"database unavailable ({reason}): the key store cannot be read; "
                                               "try again")
            return
        if grant is None:
            await _send_error(send, path, 401, "missing or invalid bearer token (Authorization: Bearer <key>)",
                              [(b"www-authenticate", b"Bearer")])
            return
        scope.setdefault("state", {})["kgrag_grant"] = grant
        if grant is not OPEN:
            wait = self.limiter.retry_after(grant.name, grant.rate_per_minute or self.rate_per_minute)
            if wait is not None:
                await _send_error(send, path, 429, f"key {grant.name!r} is over its rate; retry in {wait} s",
                                  [(b"retry-after", str(wait).encode())])
                return
        limit = self.max_body_bytes
        if grant.max_body_bytes:
            limit = min(limit, grant.max_body_bytes)
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


#: the change routes (a write scope on the network in the path); every other keyed route reads
WRITE_ROUTE = re.compile(r"^/api/kn/\{kn_id\}/(instances|links|changes)")


#: the key management routes (:mod:`kgrag.api.keys_routes`): an admin key
ADMIN_ROUTE = re.compile(r"^/api/keys(/|$)")


def route_scope(path: str, method: str) -> str:
    """The scope a route needs: ``none`` (open), ``admin`` (key management), ``write`` (a change route) or
    ``read``."""
    if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or method.upper() == "OPTIONS":
        return "none"
    if ADMIN_ROUTE.match(path):
        return "admin"
    return "write" if WRITE_ROUTE.match(path) else "read"


def _declare_bearer(app: FastAPI) -> None:
    """The OpenAPI declares the ``HTTPBearer`` scheme on every operation but the open ones, and each operation's
    scope (``x-kgrag-scope``: read / write / admin; a key that may not read the named network or KG gets its 404)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["HTTPBearer"] = {
            "type": "http", "scheme": "bearer",
            "description": "KGRAG_API_KEY (admin) or a scoped key from `kgrag keys create` (read / write / admin over "
                           "named networks and KGs). Required once either exists."}
        schema["security"] = [{"HTTPBearer": []}]
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                if not isinstance(operation, dict):
                    continue
                scope = route_scope(path, method)
                operation["x-kgrag-scope"] = scope
                if scope == "none":
                    operation["security"] = []
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def harden(app: FastAPI, settings: Settings) -> None:
    """Add the security middleware (and CORS when origins are configured, outermost so preflights are answered
    before auth) to ``app``; declare the bearer scheme in the OpenAPI when a key is set."""
    api_key = settings.api_key.get_secret_value()
    app.add_middleware(SecurityMiddleware, api_key=api_key, max_body_bytes=settings.max_body_bytes,
                       timeout=settings.request_timeout, keys=lambda: key_store_of(app),
                       rate_per_minute=settings.key_rate_per_minute)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["*"],
                           allow_headers=["*"], allow_credentials=False)
    _declare_bearer(app)  # keys may be created while the server runs: the scheme is always declared


def key_store_of(app: FastAPI) -> KeyStore:
    """The app's key store, on the network store's database (opened on first use)."""
    store = getattr(app.state, "key_store", None)
    if store is None:
        from kgrag.api.kn_search import app_network_store  # the network store opens the database once

        store = app.state.key_store = KeyStore(app_network_store(app).engine)
    return store
