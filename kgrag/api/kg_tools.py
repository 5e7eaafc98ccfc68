"""HTTP surface of the KG tools: ``POST /api/kg/query`` runs one ``<kg-query>`` in a server-side session. The
route is the edge where the request's KG name becomes a spec (once, against the app's settings); an unknown name
is a standard 422 on ``body.kg``.

    curl -X POST http://127.0.0.1:8000/api/kg/query -d '{"session_id": "s1", "kg": "demo", "query": "get_relations(\"Carnival Lights\")"}'
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field

from kgrag.access.grants import OPEN, grant_of
from kgrag.api.access import require_kg
from kgrag.data.registry import dataset_names, dataset_spec, unknown_dataset
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError
from kgrag.tools.factory import follow_version, open_session
from kgrag.tools.session_store import SessionConflict, SessionStore

router = APIRouter(prefix="/api/kg", tags=["kg-tools"])

SessionId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:-]{1,128}$", description="client-chosen session id")]


class KGQueryRequest(BaseModel):
    session_id: SessionId
    query: str = Field(max_length=20_000, description='raw model output: <kg-query>get_relations("…")</kg-query>')
    kg: str = Field("metaqa", max_length=40, description="a built-in or registered KG (kgrag kg list): metaqa, "
                    "demo, or the NAME of `kgrag prepare --dataset NAME --triples …`")
    question: str = Field("", max_length=5_000, description="the question (first call of a session only)")
    topics: list[Annotated[str, Field(max_length=500)]] = Field(default_factory=list, max_length=20,
                                                                description="topic entities (names or ids)")


class KGQueryResponse(BaseModel):
    session_id: str
    created: bool
    call_number: int
    text: str = Field(description="what the model sees next")
    trace: list[dict[str, Any]] = Field(description="trace records of this call")


def _kg_spec(kg: str, request: Request) -> DatasetSpec:
    """The KG the request names, resolved once: an unknown name is a validation error (422 with the standard
    body, on ``body.kg``), before any store is touched."""
    settings = request.app.state.settings
    try:
        return dataset_spec(kg, settings)
    except KgragError:  # the datasets it names are those the caller's key may read
        message = unknown_dataset(kg, grant_of(request).readable_kgs(dataset_names(settings)))
        raise RequestValidationError([{"type": "value_error", "loc": ("body", "kg"), "msg": f"Value error, {message}",
                                       "input": kg, "ctx": {"error": message}}]) from None


def _sessions(request: Request) -> SessionStore:
    store = getattr(request.app.state, "kg_sessions", None)
    if store is None:
        store = request.app.state.kg_sessions = SessionStore()
    return store


#: OpenAPI links: the session a query made is the one the trace and drop routes take (stateful API testing)
SESSION_LINKS = {"links": {
    name: {"operationId": op, "parameters": {"session_id": "$response.body#/session_id"}}
    for name, op in (("SessionTrace", "session_trace"), ("DropSession", "drop_session"))}}


def _owned(request: Request, session_id: str) -> str:
    """The store's key of the caller's session ``session_id``: a scoped key's sessions are its own (another key
    naming the same id gets a session of its own, and a 404 for the other's trace)."""
    grant = grant_of(request)
    return session_id if grant is OPEN or grant.name == "KGRAG_API_KEY" else f"{grant.name}\x1f{session_id}"


@router.post("/query", response_model=KGQueryResponse, responses={200: SESSION_LINKS})
def kg_query(body: KGQueryRequest, request: Request) -> KGQueryResponse:
    """Run one query in the session ``session_id`` (created on first use, expires when idle)."""
    require_kg(request, body.kg)  # a KG the key may not read: the 404 of a KG not served
    spec = _kg_spec(body.kg, request)
    graph_store = request.app.state.stores.get(body.kg)
    if graph_store is None:
        raise HTTPException(404, f"kg {body.kg!r} is not prepared here; run `kgrag prepare --dataset {body.kg}`")
    try:
        entry, created = _sessions(request).get_or_create(
            _owned(request, body.session_id), body.kg,
            lambda: open_session(spec, question=body.question, topics=body.topics, settings=request.app.state.settings,
                                 store=graph_store))
    except SessionConflict as exc:
        raise HTTPException(409, str(exc)) from None
    with entry.lock:
        follow_version(entry.session, graph_store)
        start = len(entry.session.trace)
        text = entry.session.run(body.query)
        records = entry.session.trace[start:]
        calls = entry.session.calls
    return KGQueryResponse(session_id=body.session_id, created=created, call_number=calls, text=text, trace=records)


@router.get("/sessions/{session_id}/trace", operation_id="session_trace")
def session_trace(session_id: SessionId, request: Request) -> dict[str, Any]:
    """The whole trace of a live session."""
    entry = _sessions(request).get(_owned(request, session_id))
    if entry is None:
        raise HTTPException(404, f"no live session {session_id!r}")
    with entry.lock:
        return {"session_id": session_id, "kg": entry.kg, "calls": entry.session.calls, "trace": list(entry.session.trace)}


@router.delete("/sessions/{session_id}", operation_id="drop_session")
def drop_session(session_id: SessionId, request: Request) -> dict[str, Any]:
    """End a session now."""
    if not _sessions(request).drop(_owned(request, session_id)):
        raise HTTPException(404, f"no live session {session_id!r}")
    return {"session_id": session_id, "dropped": True}
