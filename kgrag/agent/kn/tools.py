"""The agent's tool registry: the calls both planners make, validated, run and reported the same way.

    call = run_tool(store, ToolCall(name="query_object_instance", args={...}), kn_id="medical")
    call["result"] or call["error"]

Tools: ``kn_search`` and ``context_search`` (schema + instance recall, storage forms; args ``{"query"}``),
``query_object_instance`` and ``query_instance_subgraph`` (:mod:`kgrag.agent.kn.instance_queries`), ``query_modes`` (the
context of one query mode, :mod:`kgrag.modes`; its ``summary`` gives the mode and tokens per section), ``query_plan``
(a :class:`~kgrag.reading.table_plan.TablePlan` — filters on property values, a join, a count, an order, a
projection — run on the network's rows at its current version, :mod:`kgrag.reading.execute`). Every call runs on the
run's network: a ``kn_id`` argument naming another one is an error, never a switch. Invalid arguments (pydantic
validation, unknown types / relations / fields) come back as ``error`` — for the LLM path the model reads it and
may try again; nothing raises out of :func:`run_tool` but a bug.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgrag.agent.kn.instance_queries import (
    InstanceSubgraphQuery,
    ObjectInstanceQuery,
    ToolInputError,
    query_instance_subgraph,
    query_object_instance,
)
from kgrag.agent.turn.row_plans import plan_result
from kgrag.agent.turn.state import ToolCall
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.modes.params import QueryParam
from kgrag.modes.query import kg_query
from kgrag.modes.render import trace_summary
from kgrag.reading.table_plan import TablePlan
from kgrag.reading.tables import MAX_ROWS, view_for
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import context_search, kn_search

__all__ = ["TOOL_NAMES", "llm_result_text", "openai_tools", "run_tool"]

#: what one tool result may put in front of the model (characters of JSON)
LLM_RESULT_CHARS = 6000


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000, description="the user's question or keywords")


def _search(store: Any, args: SearchArgs, kn_id: str, context: bool) -> dict[str, Any]:
    request = KnSearchRequest(query=args.query, kn_id=kn_id)
    response = context_search(request, store, use_llm=False) if context else kn_search(request, store)
    return response.model_dump(mode="json", exclude_none=True)


class QueryModesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000, description="the question")
    mode: Literal["local", "global", "hybrid", "naive", "mix"] = Field(
        default="mix", description="local: named things + their texts; global: their relations; hybrid: both; "
        "naive: text passages by similarity; mix: everything")
    top_k: int = Field(default=20, ge=1, le=100, description="entities retrieved")
    chunk_top_k: int = Field(default=5, ge=1, le=50, description="text chunks per chunk route")
    max_total_tokens: int = Field(default=4000, ge=256, le=30000, description="context budget in tokens")
    hl_keywords: list[str] = Field(default_factory=list, max_length=20)
    ll_keywords: list[str] = Field(default_factory=list, max_length=20)


def _query_modes(store: Any, args: QueryModesArgs, kn_id: str) -> dict[str, Any]:
    """The context of one query mode (no LLM answer: the agent answers), sized for a tool result: the spec's
    entity / relation budgets scaled to ``max_total_tokens`` (6000 and 8000 of 30000)."""
    total = args.max_total_tokens
    param = QueryParam(mode=args.mode, top_k=args.top_k, chunk_top_k=args.chunk_top_k, max_total_tokens=total,
                       max_entity_tokens=total * 6000 // 30000, max_relation_tokens=total * 8000 // 30000,
                       only_need_context=True, hl_keywords=args.hl_keywords, ll_keywords=args.ll_keywords)
    raw = kg_query(args.query, store, kn_id, param).raw_data
    return {
        "mode": args.mode,
        "summary": trace_summary(raw),
        "keywords": raw["keywords"],
        "tokens": raw["tokens"],
        "entities": [f"{e['entity']} ({e['type']})" for e in raw["entities"]],
        "relations": [r["description"] for r in raw["relations"]],
        "chunks": [{"reference_id": c["reference_id"], "content": c["content"]} for c in raw["chunks"]],
        "references": raw["references"],
    }


class PlanArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kn_id: str = Field(min_length=1, max_length=200)
    plan: TablePlan


def _query_plan(store: Any, args: PlanArgs, kn_id: str) -> dict[str, Any]:
    view = view_for(store, kn_id)
    if view is None:
        raise ToolInputError(f"network {kn_id!r} has over {MAX_ROWS} instances: plans over rows are not offered on it")
    try:
        return plan_result(args.plan, view)
    except KgragError as exc:
        raise ToolInputError(str(exc)) from exc


_TOOLS: dict[str, tuple[type[BaseModel], Callable[[Any, Any, str], dict[str, Any]], str]] = {
    "kn_search": (SearchArgs, lambda store, a, kn: _search(store, a, kn, False),
                  "Recall the schema (object and relation types) and instances related to a query."),
    "context_search": (SearchArgs, lambda store, a, kn: _search(store, a, kn, True),
                       "kn_search plus how the query's keywords are stored (storage forms: the stored names), "
                       "attribute formats and relation patterns."),
    "query_object_instance": (ObjectInstanceQuery, lambda store, a, kn: query_object_instance(store, a),
                              "Instances of one object type matching a condition, e.g. one instance by its "
                              "stored name (the type's display property); optionally only some properties, "
                              "sorted by a property (order_by, order asc/desc, limit) or by their number "
                              "of links of one relation type (order_by_links), or only counted (count_only)."),
    "query_instance_subgraph": (InstanceSubgraphQuery, lambda store, a, kn: query_instance_subgraph(store, a),
                                "Instances reached from start instances along a path of relation types "
                                "(direction out, in, both or auto), with the links."),
    "query_modes": (QueryModesArgs, lambda store, a, kn: _query_modes(store, a, kn),
                    "LightRAG-style retrieval over the network's entities, relations and text chunks (the "
                    "long texts of its instances: descriptions and the like) in one mode; returns the context "
                    "with reference ids. Use it for open questions the structured tools cannot answer."),
    "query_plan": (PlanArgs, lambda store, a, kn: _query_plan(store, a, kn),
                   "Run a query plan over the network's rows, as SQL would: the answer type's rows, filtered on "
                   "property values (=, contains, <, >, between), optionally joined from a start type along "
                   "relation types, then a projected property listed, counted (distinct), its max / min, or "
                   "the rows with the largest / smallest value of a property."),
}
TOOL_NAMES = tuple(_TOOLS)


def _validate(name: str, args: Any, kn_id: str) -> BaseModel:
    if name not in _TOOLS:
        raise ToolInputError(f"unknown tool {name!r} (tools: {', '.join(TOOL_NAMES)})")
    if not isinstance(args, dict):
        raise ToolInputError(f"arguments of {name} must be a JSON object, not {type(args).__name__}")
    model = _TOOLS[name][0]
    if "kn_id" in model.model_fields:
        given = args.get("kn_id", kn_id)
        if given != kn_id:
            raise ToolInputError(f"kn_id is fixed to {kn_id!r} for this run (got {given!r})")
        args = {**args, "kn_id": kn_id}
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise ToolInputError(f"invalid arguments for {name}: {problems}") from None


def run_tool(store: Any, call: ToolCall, kn_id: str) -> ToolCall:
    """``call`` with ``result`` (JSON) or ``error`` (why) and ``ms``; never raises for bad input."""
    started = time.perf_counter()
    out = ToolCall(**call)
    try:
        parsed = _validate(call.get("name", ""), call.get("args"), kn_id)
        out["result"] = _TOOLS[call["name"]][1](store, parsed, kn_id)
    except (ToolInputError, NetworkNotFound) as exc:
        out["result"], out["error"] = None, str(exc) or type(exc).__name__
    except ValueError as exc:  # a condition the store refuses (unknown field, malformed value)
        out["result"], out["error"] = None, f"{type(exc).__name__}: {exc}"
    out["ms"] = round((time.perf_counter() - started) * 1000, 2)
    return out


def openai_tools() -> list[dict[str, Any]]:
    """The tools as OpenAI function-calling definitions (``kn_id`` left out: the run fixes it)."""
    tools = []
    for name, (model, _, description) in _TOOLS.items():
        schema = model.model_json_schema()
        schema.get("properties", {}).pop("kn_id", None)
        schema["required"] = [r for r in schema.get("required", []) if r != "kn_id"]
        tools.append({"type": "function", "function": {"name": name, "description": description,
                                                        "parameters": schema}})
    return tools


def llm_result_text(call: ToolCall, limit: int = LLM_RESULT_CHARS) -> str:
    """What the model reads back: the result's JSON (cut at ``limit`` characters, saying so) or the error."""
    if call.get("error"):
        return json.dumps({"error": call["error"]}, ensure_ascii=False)
    text = json.dumps(call.get("result"), ensure_ascii=False)
    if len(text) > limit:
        text = text[:limit] + f' … [truncated: {len(text)} characters in all; narrow the query]'
    return text
