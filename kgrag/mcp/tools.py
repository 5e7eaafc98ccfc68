"""The agent-facing tools of ``kgrag mcp``: name, description, argument model and the function each one runs.

A tool's MCP input schema is its argument model's JSON schema (``model_json_schema()``), and its arguments are
validated by that model before anything runs. Each tool calls the same function as the HTTP route it mirrors:

| tool                      | arguments                    | runs (HTTP route)                                                    |
|---------------------------|------------------------------|----------------------------------------------------------------------|
| `kn_search`               | `KnSearchRequest`            | `kgrag.search.pipeline.kn_search`, behind the route's per-version cache (`…/kn/kn_search`) |
| `context_search`          | `KnSearchRequest`            | `kgrag.search.pipeline.context_search` (`…/kn/context_search`)        |
| `query_object_instance`   | `ObjectInstanceQuery`        | `kgrag.agent.kn.instance_queries.query_object_instance` (`…/kn/query_object_instance`) |
| `query_instance_subgraph` | `InstanceSubgraphQuery`      | `kgrag.agent.kn.instance_queries.query_instance_subgraph` (`…/kn/query_instance_subgraph`) |
| `query_plan`              | `PlanRequest`                | `kgrag.agent.query_plans.query_plan` on a network (`…/kn/query_plan`) or a prepared KG |
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

from graphs.agent.run import agent_answerer
from kgrag.access.grants import OPEN, Grant
from kgrag.agent.kn.instance_queries import (
    InstanceSubgraphQuery,
    ObjectInstanceQuery,
    query_instance_subgraph,
    query_object_instance,
)
from kgrag.agent.query_plans import PlanRequest, plan_view, query_plan
from kgrag.agent.resources import resources_for
from kgrag.api.kg_tools import KGQueryResponse, SessionId
from kgrag.config import Settings
from kgrag.modes.params import QueryRequest
from kgrag.modes.query import kg_query
from kgrag.search.cache import KnSearchCache
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import context_search, kn_search
from kgrag.threads import load_history, save_history
from kgrag.tools.factory import follow_version, open_session
from kgrag.tools.parse import GetRelations, GetTriples
from kgrag.tools.session_store import SessionStore

__all__ = ["TOOLS", "AskArgs", "CallScope", "GetRelationsArgs", "GetTriplesArgs", "ToolContext", "ToolSpec"]


class ToolContext:
    """What the tools share in one server process besides the lazily opened stores and clients
    (:class:`kgrag.agent.resources.Resources`, the one class that opens them): the kn_search cache and the KG
    sessions, with the MCP session each belongs to. Thread-safe: tools run in worker threads."""

    def __init__(self, settings: Settings, session_ttl: float = 1800.0, max_sessions: int = 10_000) -> None:
        self.settings = settings
        self.resources = resources_for(settings)  # the agent graph's own: one store per process
        self.kn_search_cache = KnSearchCache(settings.kn_search_cache_size)
        self.kg_sessions = SessionStore(ttl=session_ttl, max_sessions=max_sessions)
        self._lock = threading.Lock()
        self._session_keys: dict[str, set[str]] = {}  # MCP session -> its KG-session keys

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
        self.resources.close()


@dataclass(frozen=True)
class CallScope:
    """Where a call comes from: ``mcp_session`` keys its KG sessions (None on a stateless connection); ``grant``:
    what its key may read (the ``ask`` tool runs the agent on those graphs only)."""

    mcp_session: str | None
    grant: Grant = OPEN


# ---------------------------------------------------------------------------------------------- argument models


class _KGToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kg: str = Field("metaqa", max_length=50, description="a built-in or registered KG (kgrag kg list; "
                    "kgrag prepare --dataset NAME)")
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
    kn: str = Field("medical", min_length=1, max_length=200, description="network id (kgrag kn list)")
    kg: str | None = Field(None, max_length=50,
                           description="a prepared KG (kgrag kg list) instead of the network")
    thread: str | None = Field(None, max_length=64,
                               description="conversation thread id: a follow-up resolves to the thread's topic")
    llm: bool | None = Field(None, description="plan with the LLM (default: when KGRAG_LLM_BASE_URL is set)")
    style: Literal["kg-query", "tools"] = Field("kg-query", description="with kg and an LLM: <kg-query> or tools")


# ---------------------------------------------------------------------------------------------- runners


def _kn_search(ctx: ToolContext, args: KnSearchRequest, _: CallScope) -> Any:
    store = ctx.resources.store
    response = ctx.kn_search_cache.get_or_compute(args, store.network_version(args.kn_id),
                                                  lambda: kn_search(args, store))
    return response.model_dump(mode="json", exclude_none=True)


def _context_search(ctx: ToolContext, args: KnSearchRequest, _: CallScope) -> Any:
    return context_search(args, ctx.resources.store).model_dump(mode="json", exclude_none=True)


def _query_object_instance(ctx: ToolContext, args: ObjectInstanceQuery, _: CallScope) -> Any:
    return query_object_instance(ctx.resources.store, args)


def _query_instance_subgraph(ctx: ToolContext, args: InstanceSubgraphQuery, _: CallScope) -> Any:
    return query_instance_subgraph(ctx.resources.store, args)


def _query_plan(ctx: ToolContext, args: PlanRequest, _: CallScope) -> Any:
    return query_plan(args, plan_view(args, ctx.resources))


def _query_modes(ctx: ToolContext, args: QueryRequest, _: CallScope) -> Any:
    return kg_query(args.query, ctx.resources.store, args.kn_id, args.param, ctx.resources.llm()).model_dump(mode="json")


def _kg_call(ctx: ToolContext, args: _KGToolArgs, scope: CallScope, query: GetRelations | GetTriples) -> Any:
    spec, store = ctx.resources.kg_store(args.kg)  # the one resolution of the KG's name
    owner = f"id:{args.session_id}" if args.session_id else scope.mcp_session
    if owner is None:
        raise ValueError("this connection has no MCP session (stateless): pass session_id to keep one KG session "
                         "across get_relations and get_triples")
    key = f"{owner}|{args.kg}"
    entry, created = ctx.kg_sessions.get_or_create(
        key, args.kg, lambda: open_session(spec, question=args.question, topics=args.topics,
                                           settings=ctx.settings, store=store))
    ctx.remember(owner, key)
    with entry.lock:
        follow_version(entry.session, store)
        start = len(entry.session.trace)
        text = entry.session.execute(query)
        records = entry.session.trace[start:]
        calls = entry.session.calls
    response = KGQueryResponse(session_id=args.session_id or owner, created=created, call_number=calls, text=text,
                               trace=records)
    return response.model_dump(mode="json")


def _get_relations(ctx: ToolContext, args: GetRelationsArgs, scope: CallScope) -> Any:
    return _kg_call(ctx, args, scope, GetRelations(entity=args.entity.strip()))


def _get_triples(ctx: ToolContext, args: GetTriplesArgs, scope: CallScope) -> Any:
    relations = tuple(dict.fromkeys(r.strip() for r in args.relations))
    return _kg_call(ctx, args, scope, GetTriples(entity=args.entity.strip(), relations=relations))


def _ask(ctx: ToolContext, args: AskArgs, scope: CallScope) -> Any:
    history = load_history(ctx.settings, args.thread) if args.thread else []
    readable = scope.grant.readable()
    state = agent_answerer(args.kn, args.llm, args.kg, args.style, readable["readable_kns"],
                           readable["readable_kgs"])(args.question, history)
    if args.thread:
        save_history(ctx.settings, args.thread, state.get("history", []))
    return state


# ---------------------------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    model: type[BaseModel]
    run: Callable[[ToolContext, Any, CallScope], Any]

    def input_schema(self) -> dict[str, Any]:
        return self.model.model_json_schema()


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("kn_search", "Network search",
             "Concept recall (object, relation and action types, with a schema brief) and semantic instance recall "
             "for `query` on network `kn_id` (spec kn-search.md). Same body as POST "
             "/api/agent-retrieval/in/v1/kn/kn_search.", KnSearchRequest, _kn_search),
    ToolSpec("context_search", "Network search with contextual recall",
             "kn_search plus `contextual_knowledge` (spec contextual-recall.md): how the question's keywords, "
             "attribute values and relations are stored in the network.", KnSearchRequest, _context_search),
    ToolSpec("query_object_instance", "Query object instances",
             "Instances of one object type of a network matching a condition tree (optionally only some "
             "properties), sorted by a property (`order_by`, `order` asc/desc, with `limit`: the oldest, the "
             "largest), by their number of links of one relation type (`order_by_links`: the author who wrote the most "
             "books), or only their number (`count_only`).", ObjectInstanceQuery, _query_object_instance),
    ToolSpec("query_instance_subgraph", "Query an instance subgraph",
             "Instances reached from start instances along a path of relation types, with the links walked.",
             InstanceSubgraphQuery, _query_instance_subgraph),
    ToolSpec("query_plan", "Plan a question over rows",
             "Plan a question as SQL would over a network's rows (`kn_id`) or a prepared KG's classes as "
             "tables (`kg`): the learned scorer's best plan (filters on stored values, a join, a count, max / min, "
             "an order), its calibrated `confidence` (below `min_confidence` the agent says it is not sure), the "
             "words it did not link, its answers and the rows they rest on, and the alternatives; or run a `plan` "
             "you wrote.", PlanRequest, _query_plan),
    ToolSpec("query_modes", "Query modes (local / global / hybrid / naive / mix / bypass)",
             "LightRAG-style retrieval over a network in one mode and an answer (LLM when configured), or "
             "only the context / prompt (spec query-modes.md). Same body as POST /api/query.",
             QueryRequest, _query_modes),
    ToolSpec("get_relations", "KG tool: get_relations",
             "Relations of an entity in a prepared KG, ranked for the question (spec kg-tools.md §2). "
             "Runs in this MCP session's KG session: get_triples then accepts only relations it returned. "
             "`text` is what the model reads. On a stateless connection (no MCP session) pass `session_id`.",
             GetRelationsArgs, _get_relations),
    ToolSpec("get_triples", "KG tool: get_triples",
             "Triples of an entity along up to 4 relations returned by get_relations in the same KG session, CVT "
             "nodes flattened (spec kg-tools.md §3). `text` is what the model reads.", GetTriplesArgs, _get_triples),
    ToolSpec("ask", "Ask the agent",
             "Answer a question with the kgrag agent over a network (or a KG with `kg`): "
             "keywords, schema recall, contextual recall, tool calls, answer; returns the final state "
             "(`answer`, `answers`, evidence, per-step trace). LLM-free unless KGRAG_LLM_BASE_URL is set.",
             AskArgs, _ask),
)
