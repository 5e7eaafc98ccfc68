"""The long-running servers: ``kgrag serve`` (the console page and every HTTP route, FastAPI + uvicorn, one or
more worker processes) and ``kgrag mcp`` (the agent-facing tools over MCP, stdio or streamable HTTP).

    kgrag serve --port 8000 --workers 2; kgrag mcp --transport http --port 8765
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated

import typer

from kgrag.cli.output import friendly_errors
from kgrag.config import get_settings

__all__ = ["McpTransport", "mcp_cmd", "serve"]


@friendly_errors
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Server processes (each opens its own stores).")] = 1,
    warm: Annotated[bool, typer.Option("--warm/--no-warm", help="Warm every network's search path in the "
                                       "background at start (models, vector indexes, rerank documents).")] = True,
) -> None:
    """Serve the console page (/) and every HTTP route of the project (FastAPI + uvicorn); GET /healthz answers
    200 once stores are open (and says ``"warming": true`` until the search path is warm)."""
    os.environ["KGRAG_WARM_ON_START"] = "1" if warm else "0"  # the workers build their settings from it
    get_settings.cache_clear()
    # one torch/BLAS thread per server process unless told otherwise: the query embedder's calls are short
    # and come between SQL and Python work of other requests, so extra intra-op threads only spin against them
    # (medical kn_search in-process, 2 cores: 147 ms/request with 2 threads, 102 ms with 1; with every worker
    # using all cores, concurrent encodes oversubscribe the machine and each takes ~10x longer)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if workers > 1:  # one process and one SO_REUSEPORT socket per worker, each building the app from the factory
        from kgrag.api.workers import serve_workers

        serve_workers(host, port, workers)
        return
    import uvicorn

    from kgrag.api.app import create_app

    uvicorn.run(create_app(), host=host, port=port, log_level="info")


class McpTransport(StrEnum):
    stdio = "stdio"
    http = "http"


@friendly_errors
def mcp_cmd(
    transport: Annotated[McpTransport, typer.Option(help="stdio (spawned by an MCP client) or streamable HTTP.")]
    = McpTransport.stdio,
    host: Annotated[str, typer.Option(help="With --transport http: interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="With --transport http: port (the endpoint is /mcp).")] = 8765,
    tool_timeout: Annotated[float, typer.Option(min=0.001, help="Seconds a tool call may take.")] = 120.0,
    max_result_chars: Annotated[int, typer.Option(min=1000, help="Longer tool results are cut.")] = 200_000,
    warm: Annotated[bool, typer.Option("--warm/--no-warm", help="Load the query embedder at start, in the "
                                       "background (else the first search loads it).")] = True,
) -> None:
    """Serve the agent-facing tools over MCP: kn_search, context_search, query_object_instance,
    query_instance_subgraph, query_modes, get_relations / get_triples (one KG session per MCP
    session) and ask (the agent)."""
    from kgrag.mcp import server as mcp_server

    config = mcp_server.McpConfig(transport=transport.value, tool_timeout=tool_timeout,
                                  max_result_chars=max_result_chars, warm=warm)
    mcp_server.serve(config, host=host, port=port)
