"""``kgrag mcp``: the agent-facing tools (:mod:`kgrag.mcp.tools`) over MCP, on stdio or streamable HTTP.

    kgrag mcp                                          # stdio: an MCP client spawns it
    kgrag mcp --transport http --host 127.0.0.1 --port 8765   # streamable HTTP at http://127.0.0.1:8765/mcp

Contract:
- ``tools/list`` names every tool of :data:`kgrag.mcp.tools.TOOLS`; each input schema is the JSON schema of the
  tool's pydantic argument model (an object schema).
- ``tools/call`` never fails the request and never stops the server: an unknown tool, arguments the model rejects
  (the fields named), an unknown network/KG, a backend failure or a call over the time limit is a result with
  ``isError: true`` and a one-paragraph message. A success is the tool's JSON as text plus ``structuredContent``;
  a result longer than ``max_result_chars`` is cut (text only, saying so) instead of flooding the client.
- Bounds: ``tool_timeout`` seconds per call (the worker thread is abandoned, not killed: at most
  ``max_concurrent_calls`` calls run at once, later ones wait), arguments at most ``MAX_ARGUMENT_CHARS`` of JSON,
  HTTP bodies at most 4 MiB, at most ``max_sessions`` open MCP sessions.
- KG sessions (get_relations / get_triples): one per MCP session and kg, dropped when the MCP session ends (HTTP:
  the client's DELETE or the idle timeout; stdio: the process). The stdio process serves one client, so all of
  its calls share its sessions. A stateless HTTP call (no ``Mcp-Session-Id``) must name ``session_id``.
- ``GET /healthz`` (HTTP) answers ``{"status": "ok", "tools": [...], "kg_sessions": n}``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.to_thread
import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kgrag import __version__
from kgrag.access.grants import OPEN, Grant
from kgrag.access.keys import KeyStore
from kgrag.api.security import SecurityMiddleware
from kgrag.config import Settings, get_settings
from kgrag.data.registry import dataset_names, unknown_dataset
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.mcp.tools import TOOLS, CallScope, ToolContext, ToolSpec
from kgrag.network.store.core import make_engine
from kgrag.rank.sentence_embedder import load_model

__all__ = ["MAX_ARGUMENT_CHARS", "McpConfig", "build_http_app", "build_server", "serve"]

log = logging.getLogger(__name__)

MAX_ARGUMENT_CHARS = 1_000_000
MCP_SESSION_HEADER = "mcp-session-id"
INSTRUCTIONS = (
    "kgrag: retrieval over networks (kn_search, context_search, query_object_instance, "
    "query_instance_subgraph, query_modes) and KGs (get_relations, then get_triples with relations it "
    "returned, in one session), and `ask` for the whole agent. Errors come back as tool results saying what to fix."
)


@dataclass(frozen=True)
class McpConfig:
    """How the server runs; every limit has a default that keeps one call from taking the server down."""

    transport: Literal["stdio", "http"] = "stdio"
    tool_timeout: float = 120.0
    max_result_chars: int = 200_000
    max_concurrent_calls: int = 4
    session_idle_timeout: float = 1800.0
    max_sessions: int = 1_000
    warm: bool = True  # load the query embedder in the background at start (the first search would wait ~10 s)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _validation_message(tool: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        problems.append(f"{where}: {err.get('msg')}")
    more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return f"invalid arguments for {tool}: " + "; ".join(problems) + more


def _failure_message(tool: str, exc: BaseException) -> str:
    if isinstance(exc, NetworkNotFound):
        name = exc.args[0] if exc.args else "?"
        return f"{tool}: knowledge network {name!r} not found (kgrag kn list; kgrag kn load NAME)"
    if isinstance(exc, ValidationError):
        return _validation_message(tool, exc)
    if isinstance(exc, ValueError | LookupError | KgragError):
        return f"{tool}: {exc}"
    log.error("%s failed", tool, exc_info=(type(exc), exc, exc.__traceback__))
    return f"{tool} failed: {type(exc).__name__}: {exc}"


def _success(value: Any, max_chars: int) -> types.CallToolResult:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > max_chars:
        note = (f"\n…[truncated: {max_chars} of {len(text)} characters shown; ask for less (a smaller limit or "
                f"top_k, fewer properties)]")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text[:max_chars] + note)])
    structured = value if isinstance(value, dict) else {"result": value}
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def _warm(settings: Settings) -> None:
    """Load the query embedder (a failure here only means the first search loads it, and reports it)."""
    try:
        load_model(settings.embedder)
    except Exception:  # noqa: BLE001
        log.warning("warming the embedder failed; the first search will load it", exc_info=True)


def _mcp_session(ctx: ServerRequestContext[Any, Any], transport: str) -> str | None:
    """The key of the caller's MCP session: the process on stdio, the ``Mcp-Session-Id`` on HTTP (None when the
    connection is stateless)."""
    if transport == "stdio":
        return "stdio"
    request = ctx.request
    headers = getattr(request, "headers", None)
    session_id = headers.get(MCP_SESSION_HEADER) if headers is not None else None
    return f"mcp:{session_id}" if session_id else None


def _grant(ctx: ServerRequestContext[Any, Any], transport: str) -> Grant:
    """The caller's grant: on HTTP the one :class:`~kgrag.api.security.SecurityMiddleware` put on the request; on
    stdio the local user's (everything: the process is theirs)."""
    if transport == "stdio":
        return OPEN
    request = getattr(ctx, "request", None)
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    return state.get("kgrag_grant", OPEN)


def _refused(tool: str, args: Any, grant: Grant, settings: Settings) -> str | None:
    """The error a tool call gets for a network or KG its key may not read: the same as for one not served (the
    known KGs listed are those the key may read), so a key learns nothing of the others."""
    if grant is OPEN:
        return None
    kn = getattr(args, "kn_id", None) or (getattr(args, "kn", None) if getattr(args, "kg", None) is None else None)
    if kn is not None and not grant.can_read_kn(kn):
        return _failure_message(tool, NetworkNotFound(kn))
    kg = getattr(args, "kg", None)
    if kg is not None and not grant.can_read_kg(kg):
        return f"{tool}: {unknown_dataset(kg, grant.readable_kgs(dataset_names(settings)))}"
    return None


def build_server(config: McpConfig | None = None, settings: Settings | None = None,
                 context: ToolContext | None = None) -> Server[Any]:
    """The MCP server (low-level SDK server) with every tool of :data:`TOOLS`."""
    config = config or McpConfig()
    context = context or ToolContext(settings or get_settings(), session_ttl=config.session_idle_timeout)
    specs: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
    listed = types.ListToolsResult(tools=[
        types.Tool(name=spec.name, title=spec.title, description=spec.description, input_schema=spec.input_schema(),
                   annotations=types.ToolAnnotations(title=spec.title, read_only_hint=True, open_world_hint=False))
        for spec in TOOLS])
    limiter: dict[str, anyio.CapacityLimiter] = {}

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[ToolContext]:
        limiter["calls"] = anyio.CapacityLimiter(config.max_concurrent_calls)
        if config.warm:
            threading.Thread(target=_warm, args=(context.settings,), name="kgrag-mcp-warm", daemon=True).start()
        try:
            yield context
        finally:
            context.close()

    async def on_list_tools(ctx: ServerRequestContext[Any, Any],
                            params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return listed

    async def on_call_tool(ctx: ServerRequestContext[Any, Any],
                           params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            return _error(f"unknown tool {params.name!r}; tools: {', '.join(specs)}")
        arguments = params.arguments or {}
        size = len(json.dumps(arguments, ensure_ascii=False, default=str))
        if size > MAX_ARGUMENT_CHARS:
            return _error(f"arguments for {spec.name} too large: {size} characters of JSON (at most "
                          f"{MAX_ARGUMENT_CHARS})")
        try:
            args = spec.model.model_validate(arguments)
        except ValidationError as exc:
            return _error(_validation_message(spec.name, exc))
        grant = _grant(ctx, config.transport)
        refused = None if spec.name == "ask" else _refused(spec.name, args, grant, context.settings)
        if refused is not None:  # (the agent answers a graph its key may not read as one not there: CallScope)
            return _error(refused)
        scope = CallScope(mcp_session=_mcp_session(ctx, config.transport), grant=grant)
        try:
            with anyio.fail_after(config.tool_timeout):
                value = await anyio.to_thread.run_sync(spec.run, context, args, scope, abandon_on_cancel=True,
                                                       limiter=limiter.get("calls"))
        except TimeoutError:
            return _error(f"{spec.name} timed out after {config.tool_timeout:g} s (the server's --tool-timeout); "
                          f"ask for less (a smaller limit or top_k) or try again")
        except Exception as exc:  # noqa: BLE001 - every failure is a tool error, never a crashed server
            return _error(_failure_message(spec.name, exc))
        return _success(value, config.max_result_chars)

    return Server("kgrag", version=__version__, title="kgrag", instructions=INSTRUCTIONS, lifespan=lifespan,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool)


class _DropEndedSessions:
    """ASGI wrapper: when a client ends its MCP session (``DELETE`` with ``Mcp-Session-Id``), its KG sessions
    are dropped too (an idle session's expire with the same timeout as the MCP session)."""

    def __init__(self, app: ASGIApp, context: ToolContext) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "DELETE":
            await self.app(scope, receive, send)
            return
        raw = dict(scope.get("headers") or []).get(MCP_SESSION_HEADER.encode())
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        await self.app(scope, receive, watch)
        if raw and status and (status[0] < 300 or status[0] == 404):
            self.context.drop_mcp_session(f"mcp:{raw.decode('latin-1')}")


def build_http_app(server: Server[Any], context: ToolContext, config: McpConfig,
                   host: str = "127.0.0.1") -> ASGIApp:
    """The streamable-HTTP ASGI app of ``server`` (built on ``context``): ``/mcp`` (MCP) and ``/healthz``, behind
    the same keys as ``kgrag serve`` (``KGRAG_API_KEY``, scoped keys: :class:`~kgrag.api.security.SecurityMiddleware`;
    a tool call names only what its key may read)."""

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__, "tools": [t.name for t in TOOLS],
                             "kg_sessions": len(context.kg_sessions)})

    app = server.streamable_http_app(host=host, session_idle_timeout=config.session_idle_timeout,
                                     max_sessions=config.max_sessions,
                                     custom_starlette_routes=[Route("/healthz", healthz, methods=["GET"])])
    keys: list[KeyStore] = []

    def key_store() -> KeyStore:
        if not keys:
            keys.append(KeyStore(make_engine(context.settings.db_url)))
        return keys[0]

    return SecurityMiddleware(_DropEndedSessions(app, context),
                              api_key=context.settings.api_key.get_secret_value(), max_body_bytes=4 << 20,
                              timeout=0, keys=key_store, rate_per_minute=context.settings.key_rate_per_minute)


def serve(config: McpConfig, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run until stopped: stdio until the client closes stdin, HTTP until interrupted."""
    context = ToolContext(get_settings(), session_ttl=config.session_idle_timeout)
    server = build_server(config, context=context)
    if config.transport == "http":
        uvicorn.run(build_http_app(server, context, config, host), host=host, port=port, log_level="warning",
                    timeout_graceful_shutdown=5)
        return

    async def run_stdio() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run_stdio)
