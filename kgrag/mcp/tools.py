"""The agent-facing tools of ``kgrag mcp``: name, description, argument model and the function each one runs.

A tool's MCP input schema is its argument model's JSON schema (``model_json_schema()``), and its arguments are
validated by that model before anything runs. Each tool calls the same function as the HTTP route it mirrors:

| tool                      | arguments                    | runs (HTTP route)                                                    |
|---------------------------|------------------------------|----------------------------------------------------------------------|
| `kn_search`               | `KnSearchRequest`            | `kgrag.search.pipeline.kn_search`, behind the route's per-version cache (`…/kn/kn_search`) |
| `context_search`          | `KnSearchRequest`            | `kgrag.search.pipeline.context_search` (`…/kn/context_search`)        |
| `query_object_instance`   | `ObjectInstanceQuery`        | `kgrag.agent.kn_tools.query_object_instance` (`…/kn/query_object_instance`) |
| `query_instance_subgraph` | `InstanceSubgraphQuery`      | `kgrag.agent.kn_tools.query_instance_subgraph` (`…/kn/query_instance_subgraph`) |
| `query_modes`             | `QueryRequest`               | `kgrag.modes.query.kg_query` (`/api/query`)                          |
| `get_relations`           | `GetRelationsArgs`           | `KGSession.execute(GetRelations)` in the caller's KG session (`/api/kg/query`) |
| `get_triples`             | `GetTriplesArgs`             | `KGSession.execute(GetTriples)` in the caller's KG session (`/api/kg/query`) |
| `ask`                     | `AskArgs`                    | the agent graph, as `kgrag ask` runs it (`graphs.agent.run`)         |

KG sessions: one :class:`kgrag.tools.session.KGSession` per (MCP session, kg), kept in a
:class:`kgrag.tools.session_store.SessionStore` (the HTTP surface's) and dropped when the MCP session closes or has
been idle as long as the transport's session timeout; ``session_id`` in the arguments names a session explicitly
instead (needed on stateless connections, which have no MCP session). ``question`` and ``topics`` are read on a
session's first call only, as on ``POST /api/kg/query``.

    .venv/bin/python -c "from kgrag.mcp.tools import TOOLS; print([t.name for t in TOOLS])"
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgrag.agent.kn_tools import (
    InstanceSubgraphQuery,
    ObjectInstanceQuery,
    query_instance_subgraph,
    query_object_instance,
)
from kgrag.api.kg_tools import KGQueryResponse, SessionId
from kgrag.config import Settings
from kgrag.graph import GraphStore
from kgrag.modes.params import QueryRequest
from kgrag.modes.query import kg_query
from kgrag.search.cache import KnSearchCache
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import context_search, kn_search
from kgrag.tools.factory import NAMESPACES, open_session
from kgrag.tools.parse import GetRelations, GetTriples
from kgrag.tools.session_store import SessionStore

__all__ = ["TOOLS", "AskArgs", "CallScope", "GetRelationsArgs", "GetTriplesArgs", "Resources", "ToolSpec"]


class Resources:
    """What the tools share in one server process: the settings, the knowledge-network store and the prepared
    graph stores (opened on first use), the LLM client (when configured), the kn_search cache and the KG
    sessions. Thread-safe: tools run in worker threads."""

    def __init__(self, settings: Settings, session_ttl: float = 1800.0, max_sessions: int = 10_000) -> None:
        self.settings = settings
        self.kn_search_cache = KnSearchCache(settings.kn_search_cache_size)
        self.kg_sessions = SessionStore(ttl=session_ttl, max_sessions=max_sessions)
        self._lock = threading.Lock()
        self._network_store: Any = None
        self._graph_stores: dict[str, GraphStore] | None = None
        self._llm: Any = None
        self._session_keys: dict[str, set[str]] = {}  # MCP session -> its KG-session keys

    def network_store(self) -> Any:
        """The knowledge-network store on ``settings.db_url`` (what the HTTP routes query)."""
        with self._lock:
            if self._network_store is None:
                from kgrag.network.store import NetworkStore

                self._network_store = NetworkStore(self.settings.db_url)
            return self._network_store

    def graph_store(self, kg: str) -> GraphStore:
        """The prepared store of ``kg`` (``ValueError`` naming the fix when it is unknown or not prepared)."""
        if kg not in NAMESPACES:
            raise ValueError(f"unknown kg {kg!r}; choose one of {', '.join(NAMESPACES)}")
        with self._lock:
            if self._graph_stores is None:
                from kgrag.api.app import open_prepared_stores

                self._graph_stores = open_prepared_stores(self.settings)
            store = self._graph_stores.get(kg)
        if store is None:
            raise ValueError(f"kg {kg!r} is not prepared here; run `kgrag prepare --dataset {kg}`")
        return store

    def llm(self) -> Any:
        """The chat client when ``KGRAG_LLM_BASE_URL`` is set (created once), else None."""
        if not self.settings.llm_enabled:
            return None
        with self._lock:
            if self._llm is None:
                from kgrag.llm.client import ChatClient

                self._llm = ChatClient.from_settings(self.settings)
            return self._llm

    def remember(self, mcp_session: str, key: str) -> None:
        """Note that ``key`` belongs to ``mcp_session`` (owners whose sessions all expired are forgotten)."""
        with self._lock:
            self._session_keys.setdefault(mcp_session, set()).add(key)
            if len(self._session_keys) > self.kg_sessions.max_sessions:
                self._session_keys = {owner: keys for owner, keys in self._session_keys.items()
                                      if any(self.kg_sessions.get(k) is not None for k in keys)}

    def drop_mcp_session(self, mcp_session: str) -> int:
        """Drop the KG sessions of an MCP session that ended; how many were live."""
        with self._lock:
            keys = self._session_keys.pop(mcp_session, set())
        return sum(self.kg_sessions.drop(key) for key in keys)

    def close(self) -> None:
        with self._lock:
            for store in (self._graph_stores or {}).values():
                store.close()
            if self._network_store is not None:
                self._network_store.close()
            if self._llm is not None:
                self._llm.close()
            self._graph_stores, self._network_store, self._llm = None, None, None


@dataclass(frozen=True)
class CallScope:
    """Where a call comes from: ``mcp_session`` keys its KG sessions (None on a stateless connection)."""

    mcp_session: str | None


# ---------------------------------------------------------------------------------------------- argument models


class _KGToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kg: str = Field("metaqa", max_length=50, description="prepared KG to query (kgrag prepare --dataset NAME)",
                    json_schema_extra={"enum": list(NAMESPACES)})
    question: str = Field("", max_length=5_000,
                          description="the user's question (ranks the relations; read on the session's first call)")
    topics: list[Annotated[str, Field(max_length=500)]] = Field(
        default_factory=list, max_length=20, description="topic entities, names or ids (session's first call)")
    session_id: SessionId | None = Field(
        None, description="KG session to use; default: this MCP session's own (required on stateless connections)")


class GetRelationsArgs(_KGToolArgs):
    """``get_relations(entity)`` (spec kg-tools.md §2): the entity's relations ranked for the question."""

    entity: str = Field(min_length=1, max_length=500, description="entity name (as shown by a previous call) or id")


class GetTriplesArgs(_KGToolArgs):
    """``get_triples(entity, relations)`` (spec kg-tools.md §3): triples of relations returned by get_relations."""

    entity: str = Field(min_length=1, max_length=500, description="entity name (as shown by a previous call) or id")
    relations: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        min_length=1, max_length=20, description="relations from the latest get_relations (the first 4 are used)")


class AskArgs(BaseModel):
    """The agent (``kgrag ask``): keywords → schema recall → contextual recall → tool calls → answer."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=4_000, description="the question, in the network's language")
    kn: str = Field("medical", min_length=1, max_length=200, description="knowledge network id")
    kg: str | None = Field(None, max_length=50,
                           description="a prepared triple graph (metaqa, demo, freebase) instead of the network")
    thread: str | None = Field(None, max_length=64,
                               description="conversation thread id: a follow-up resolves to the thread's topic")
    llm: bool | None = Field(None, description="plan with the LLM (default: when KGRAG_LLM_BASE_URL is set)")
    style: Literal["kg-query", "tools"] = Field("kg-query", description="with kg and an LLM: <kg-query> or tools")


# ---------------------------------------------------------------------------------------------- runners


def _kn_search(res: Resources, args: KnSearchRequest, _: CallScope) -> Any:
    store = res.network_store()
    response = res.kn_search_cache.get_or_compute(args, store.network_version(args.kn_id),
                                                  lambda: kn_search(args, store))
    return response.model_dump(mode="json", exclude_none=True)


def _context_search(res: Resources, args: KnSearchRequest, _: CallScope) -> Any:
    return context_search(args, res.network_store()).model_dump(mode="json", exclude_none=True)


def _query_object_instance(res: Resources, args: ObjectInstanceQuery, _: CallScope) -> Any:
    return query_object_instance(res.network_store(), args)


def _query_instance_subgraph(res: Resources, args: InstanceSubgraphQuery, _: CallScope) -> Any:
    return query_instance_subgraph(res.network_store(), args)


def _query_modes(res: Resources, args: QueryRequest, _: CallScope) -> Any:
    return kg_query(args.query, res.network_store(), args.kn_id, args.param, res.llm()).model_dump(mode="json")


def _kg_call(res: Resources, args: _KGToolArgs, scope: CallScope, query: GetRelations | GetTriples) -> Any:
    store = res.graph_store(args.kg)
    owner = f"id:{args.session_id}" if args.session_id else scope.mcp_session
    if owner is None:
        raise ValueError("this connection has no MCP session (stateless): pass session_id to keep one KG session "
                         "across get_relations and get_triples")
    key = f"{owner}|{args.kg}"
    entry, created = res.kg_sessions.get_or_create(
        key, args.kg, lambda: open_session(args.kg, question=args.question, topics=args.topics,
                                           settings=res.settings, store=store))
    res.remember(owner, key)
    with entry.lock:
        start = len(entry.session.trace)
        text = entry.session.execute(query)
        records = entry.session.trace[start:]
        calls = entry.session.calls
    response = KGQueryResponse(session_id=args.session_id or owner, created=created, call_number=calls, text=text,
                               trace=records)
    return response.model_dump(mode="json")


def _get_relations(res: Resources, args: GetRelationsArgs, scope: CallScope) -> Any:
    return _kg_call(res, args, scope, GetRelations(entity=args.entity.strip()))


def _get_triples(res: Resources, args: GetTriplesArgs, scope: CallScope) -> Any:
    relations = tuple(dict.fromkeys(r.strip() for r in args.relations))
    return _kg_call(res, args, scope, GetTriples(entity=args.entity.strip(), relations=relations))


def _ask(res: Resources, args: AskArgs, _: CallScope) -> Any:
    from graphs.agent.run import agent_answerer
    from kgrag.agent.threads import load_history, save_history

    history = load_history(res.settings, args.thread) if args.thread else []
    state = agent_answerer(args.kn, args.llm, args.kg, args.style)(args.question, history)
    if args.thread:
        save_history(res.settings, args.thread, state.get("history", []))
    return state


# ---------------------------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    model: type[BaseModel]
    run: Callable[[Resources, Any, CallScope], Any]

    def input_schema(self) -> dict[str, Any]:
        return self.model.model_json_schema()


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("kn_search", "Knowledge-network search",
             "Concept recall (object, relation and action types, with a schema brief) and semantic instance recall "
             "for `query` on knowledge network `kn_id` (spec kn-search.md). Same body as POST "
             "/api/agent-retrieval/in/v1/kn/kn_search.", KnSearchRequest, _kn_search),
    ToolSpec("context_search", "Knowledge-network search with contextual recall",
             "kn_search plus `contextual_knowledge` (spec contextual-recall.md): how the question's keywords, "
             "attribute values and relations are stored in the network.", KnSearchRequest, _context_search),
    ToolSpec("query_object_instance", "Query object instances",
             "Instances of one object type of a knowledge network matching a condition tree (optionally only some "
             "properties).", ObjectInstanceQuery, _query_object_instance),
    ToolSpec("query_instance_subgraph", "Query an instance subgraph",
             "Instances reached from start instances along a path of relation types, with the links walked.",
             InstanceSubgraphQuery, _query_instance_subgraph),
    ToolSpec("query_modes", "Query modes (local / global / hybrid / naive / mix / bypass)",
             "LightRAG-style retrieval over a knowledge network in one mode and an answer (LLM when configured), or "
             "only the context / prompt (spec query-modes.md). Same body as POST /api/query.",
             QueryRequest, _query_modes),
    ToolSpec("get_relations", "KG tool: get_relations",
             "Relations of an entity in a prepared triple graph, ranked for the question (spec kg-tools.md §2). "
             "Runs in this MCP session's KG session: get_triples then accepts only relations it returned. "
             "`text` is what the model reads. On a stateless connection (no MCP session) pass `session_id`.",
             GetRelationsArgs, _get_relations),
    ToolSpec("get_triples", "KG tool: get_triples",
             "Triples of an entity along up to 4 relations returned by get_relations in the same KG session, CVT "
             "nodes flattened (spec kg-tools.md §3). `text` is what the model reads.", GetTriplesArgs, _get_triples),
    ToolSpec("ask", "Ask the agent",
             "Answer a question with the kgrag agent over a knowledge network (or a triple graph with `kg`): "
             "keywords, schema recall, contextual recall, tool calls, answer; returns the final state "
             "(`answer`, `answers`, evidence, per-step trace). LLM-free unless KGRAG_LLM_BASE_URL is set.",
             AskArgs, _ask),
)
