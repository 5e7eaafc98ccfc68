"""The inline agent routes, on the LangGraph API server (mounted by ``kgrag/api/langgraph_http.py`` through
langgraph.json ``http.app``) and on ``kgrag serve``: the compiled agent graph, run inline, for callers who want one
answer (``POST /agent/ask``) or its steps as they finish (``POST /agent/stream``, NDJSON events of
:mod:`kgrag.console.agent_events`: what the console page shows) without the run queue.

    curl -X POST http://127.0.0.1:2024/agent/ask -d '{"question": "who directed [Carnival Lights]?", "kg": "demo"}'
    curl -N -X POST http://127.0.0.1:8000/agent/stream -d '{"question": "百日咳有哪些症状", "kn_id": "medical"}'

Why: ``langgraph dev``'s in-memory runtime starts a queued run only on a poll that began after the run was created
(it sleeps 0.5 s between polls), so every ``runs.wait`` / ``runs.stream`` waits 0.5–1.0 s before the graph starts
(bench/agent_kg.py measures both). This route answers in the graph's own time. It keeps no thread: pass the
``history`` and ``session_id`` a previous answer returned to follow up. Bad input is a 422 naming the field; a run
longer than ``ASK_TIMEOUT_S`` is a 504 (on the stream: an ``error`` event, the steps sent so far stay).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from kgrag.access.grants import grant_of
from kgrag.agent.turn.messages import plain_state
from kgrag.console.agent_events import agent_events

__all__ = ["ASK_TIMEOUT_S", "AskRequest", "agent_router", "make_app"]

ASK_TIMEOUT_S = 60.0


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(max_length=100_000)
    kg: str | None = Field(default=None, min_length=1, max_length=200, description="a KG (metaqa, demo, an import: kgrag kg list)")
    kn_id: str | None = Field(default=None, min_length=1, max_length=200, description="a network (kgrag kn list)")
    session_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$", description="the KG session to reuse")
    history: list[dict[str, Any]] = Field(default_factory=list, max_length=20)
    max_tool_calls: int | None = Field(default=None, ge=1, le=16)


def _input(request: AskRequest) -> dict[str, Any]:
    return {k: v for k, v in request.model_dump(exclude={"max_tool_calls"}).items() if v not in (None, [])}


async def _ndjson(graph: Any, state: dict[str, Any], context: Any) -> AsyncIterator[bytes]:
    """The run's events as NDJSON lines, each sent as its node finishes: the graph runs in a thread of its own
    and hands each event to the event loop."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def hand(event: dict[str, Any] | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone (the server stopped): nobody reads the rest
            loop.call_soon_threadsafe(queue.put_nowait, event)

    def run() -> None:
        try:
            for event in agent_events(graph, state, context):
                hand(event)
        finally:
            hand(None)

    threading.Thread(target=run, name="kgrag-agent-stream", daemon=True).start()
    deadline = loop.time() + ASK_TIMEOUT_S
    while True:
        try:
            event = await asyncio.wait_for(queue.get(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            event = {"event": "error", "message": f"the agent did not answer within {ASK_TIMEOUT_S:.0f} s"}
            yield (json.dumps(event) + "\n").encode()
            return
        if event is None:
            return
        yield (json.dumps(event, ensure_ascii=False, default=str) + "\n").encode()


def _scoped(request: AskRequest, http: Request) -> dict[str, Any]:
    """The agent plans only over graphs the caller's key may read: the run context's ``readable_kns`` /
    ``readable_kgs`` (a named graph it may not read is answered as one that does not exist); a key that does not
    cover every graph must name the one to ask (400)."""
    grant = grant_of(http)
    if request.kg is None and request.kn_id is None and (grant.kns is not None or grant.kgs is not None):
        raise HTTPException(400, f"key {grant.name!r} covers only some graphs: name the kg or kn_id to ask")
    return grant.readable()


def agent_router(graph: Any, context_type: Any) -> APIRouter:
    """``POST /agent/ask`` and ``POST /agent/stream`` running ``graph`` (its run context built with
    ``context_type``)."""
    router = APIRouter(tags=["agent"])

    async def ask(request: AskRequest, http: Request) -> dict[str, Any]:
        """Run the agent on one question and return its final state."""
        context = context_type(max_tool_calls=request.max_tool_calls, **_scoped(request, http))
        try:
            state = await asyncio.wait_for(run_in_threadpool(graph.invoke, _input(request), context=context),
                                           ASK_TIMEOUT_S)
        except TimeoutError:
            raise HTTPException(504, f"the agent did not answer within {ASK_TIMEOUT_S:.0f} s") from None
        return plain_state(state)  # its messages as LangChain's JSON dicts

    async def stream(request: AskRequest, http: Request) -> StreamingResponse:
        """Run the agent on one question; NDJSON events (start, one step per finished node, end or error)."""
        context = context_type(max_tool_calls=request.max_tool_calls, **_scoped(request, http))
        return StreamingResponse(_ndjson(graph, _input(request), context), media_type="application/x-ndjson",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    router.add_api_route("/agent/ask", ask, methods=["POST"])
    router.add_api_route("/agent/stream", stream, methods=["POST"], response_class=StreamingResponse)
    return router


def make_app(graph: Any, context_type: Any) -> FastAPI:
    """An app with the agent routes (:func:`agent_router`) running ``graph``."""
    app = FastAPI(title="kgrag agent (inline)")
    app.include_router(agent_router(graph, context_type))
    return app
