"""The knowledge-network query tools over HTTP (context-loader parity, :mod:`kgrag.agent.kn.instance_queries`):

    POST /api/agent-retrieval/in/v1/kn/query_object_instance
         {"kn_id": "medical", "object_type": "Disease",
          "condition": {"operation": "==", "field": "name", "value": "百日咳"}, "limit": 1}
    POST /api/agent-retrieval/in/v1/kn/query_instance_subgraph
         {"kn_id": "medical", "start": {"object_type": "Disease", "condition": {…}},
          "relation_type_path": ["has_symptom"], "limit": 20}
    POST /api/agent-retrieval/in/v1/kn/query_plan
         {"kn_id": "pets_1", "question": "How many dogs weigh over 10 kg?"}   # or "plan": {…} to run one

Bodies are validated by pydantic; an unknown network, object type, relation type, field or operation is a 400
``{"error": …, "field": …}`` naming it (the tools raise ``ToolInputError``, a ``ValueError``, even for an unknown
network); limits are capped (the response says the limit used); a backend failure is a 500 with a message —
the error contract of every route under ``/api/agent-retrieval/`` (:func:`kgrag.api.kn_search.answer_or_error`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from kgrag.agent.kn.instance_queries import (
    InstanceSubgraphQuery,
    ObjectInstanceQuery,
    query_instance_subgraph,
    query_object_instance,
)
from kgrag.agent.query_plans import PlanRequest, network_view, query_plan
from kgrag.api.kn_search import answer_or_error, network_service

router = APIRouter(tags=["kn_query"])

ERRORS = {400: {"description": "invalid request (unknown network, type, relation, field or operation: named)"},
          500: {"description": "backend failure"}}


@router.post("/api/agent-retrieval/in/v1/kn/query_object_instance", responses=ERRORS)
def query_object_instance_route(query: ObjectInstanceQuery, request: Request) -> Any:
    """Instances of one object type matching a condition tree (optionally only some properties)."""
    store = network_service(request)
    return answer_or_error("query_object_instance", query.kn_id, lambda: query_object_instance(store, query),
                           request, unknown_is_bad_input=True)


@router.post("/api/agent-retrieval/in/v1/kn/query_instance_subgraph", responses=ERRORS)
def query_instance_subgraph_route(query: InstanceSubgraphQuery, request: Request) -> Any:
    """Instances reached from start instances along a path of relation types, with the links walked."""
    store = network_service(request)
    return answer_or_error("query_instance_subgraph", query.kn_id,
                           lambda: query_instance_subgraph(store, query), request,
                           unknown_is_bad_input=True)


@router.post("/api/agent-retrieval/in/v1/kn/query_plan", responses=ERRORS)
def query_plan_route(body: PlanRequest, request: Request) -> Any:
    """A question planned over the network's rows (the plan scorer's best plan, its calibrated confidence, the
    words it did not link, its answers and the rows they rest on), or a given plan run (:mod:`kgrag.agent.query_plans`;
    the MCP tool ``query_plan`` also takes a prepared KG)."""
    if body.kn_id is None:
        return JSONResponse(status_code=400, content={"error": "this route plans over a network: give kn_id (the MCP "
                                                               "tool query_plan also takes kg)", "field": "kn_id"})
    store = network_service(request)
    kn_id = body.kn_id
    return answer_or_error("query_plan", kn_id, lambda: query_plan(body, network_view(store, kn_id)), request)
