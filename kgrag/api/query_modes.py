"""The query modes over HTTP (spec query-modes.md, the specification of LightRAG-style query modes):

    POST /api/query  {"query": "百日咳有哪些症状", "kn_id": "medical", "param": {"mode": "hybrid"}}
         -> {"response": …, "context": …, "raw_data": {…}}

The body is validated by pydantic: an unknown mode, a negative budget or an unknown field is a 400
``{"error": "param.mode: …", "field": "param.mode"}``; an unknown network a 404; a backend failure a 500 with a
message (:func:`kgrag.api.kn_search.answer_or_error`). The LLM answers when ``KGRAG_LLM_BASE_URL`` is set.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from kgrag.api.kn_search import answer_or_error, network_service
from kgrag.llm.client import ChatClient
from kgrag.modes.params import QueryRequest, QueryResult
from kgrag.modes.query import kg_query

router = APIRouter(tags=["query_modes"])

ERRORS = {400: {"description": "invalid request (the field is named)"}, 404: {"description": "unknown network"},
          500: {"description": "backend failure"}}


def _llm(request: Request) -> Any:
    """The app's chat client when an endpoint is configured (created once), else None."""
    settings = request.app.state.settings
    if not settings.llm_enabled:
        return None
    client = getattr(request.app.state, "llm_client", None)
    if client is None:
        client = request.app.state.llm_client = ChatClient.from_settings(settings)
    return client


@router.post("/api/query", response_model=QueryResult, responses=ERRORS)
def query_route(body: QueryRequest, request: Request) -> Any:
    """Retrieve in one of the modes local / global / hybrid / naive / mix / bypass and answer (or return the
    context / the prompt with ``only_need_context`` / ``only_need_prompt``)."""
    store = network_service(request)
    return answer_or_error("query", body.kn_id, lambda: kg_query(body.query, store, body.kn_id, body.param,
                                                                  _llm(request)), request)
