"""A synchronous ask route for the LangGraph API server (mounted by ``graphs/agent/webapp.py`` through
langgraph.json ``http.app``): the compiled agent graph, invoked inline, for callers who want one answer without
the run queue.

    curl -X POST http://127.0.0.1:2024/agent/ask -d '{"question": "who directed [Carnival Lights]?", "kg": "demo"}'

Why: ``langgraph dev``'s in-memory runtime starts a queued run only on a poll that began after the run was created
(it sleeps 0.5 s between polls), so every ``runs.wait`` / ``runs.stream`` waits 0.5–1.0 s before the graph starts
(bench/agent_kg.py measures both). This route answers in the graph's own time. It keeps no thread: pass the
``history`` and ``session_id`` a previous answer returned to follow up. Bad input is a 422 naming the field; a run
longer than ``ASK_TIMEOUT_S`` is a 504.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

__all__ = ["ASK_TIMEOUT_S", "AskRequest", "make_app"]

ASK_TIMEOUT_S = 60.0


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(max_length=100_000)
    kg: str | None = Field(default=None, min_length=1, max_length=200, description="a triple graph (metaqa, demo…)")
    kn_id: str | None = Field(default=None, min_length=1, max_length=200, description="a knowledge network")
    session_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$", description="the KG session to reuse")
    history: list[dict[str, Any]] = Field(default_factory=list, max_length=20)
    max_tool_calls: int | None = Field(default=None, ge=1, le=16)


def make_app(graph: Any, context_type: Any) -> FastAPI:
    """The app with ``POST /agent/ask`` running ``graph`` (its run context built with ``context_type``)."""
    app = FastAPI(title="kgrag agent (inline)")

    async def ask(request: AskRequest) -> dict[str, Any]:
        """Run the agent on one question and return its final state."""
        state = {k: v for k, v in request.model_dump(exclude={"max_tool_calls"}).items() if v not in (None, [])}
        context = context_type(max_tool_calls=request.max_tool_calls)
        try:
            return await asyncio.wait_for(run_in_threadpool(graph.invoke, state, context=context), ASK_TIMEOUT_S)
        except TimeoutError:
            raise HTTPException(504, f"the agent did not answer within {ASK_TIMEOUT_S:.0f} s") from None

    app.add_api_route("/agent/ask", ask, methods=["POST"])
    return app
