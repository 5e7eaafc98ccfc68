"""An LLM proposes the query graph (with an LLM configured): the question, the candidate topics and the graph's
relations go in; one JSON plan comes back, validated against :class:`~kgrag.query_graph.plan.QueryGraph` and against
the schema it was shown (every topic one of the candidates, every relation one of the graph's), then run by the
same executor as the LLM-free planner's plans. Anything else — a transport failure, no JSON, an invalid plan, an
unknown relation — is a reason, and the caller falls back to the LLM-free planner and says so.

    plan, why = propose_query_graph(client, "how many books did Orwell write",
                                    [Topic(name="George Orwell", id="a:orwell")],
                                    {"wrote": "wrote", "year": "publication year"})

The seam is small on purpose: a planner passes the names it would itself consider, so the LLM chooses among them
and cannot reach past the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError

from kgrag.errors import LLMError
from kgrag.query_graph.plan import QueryGraph, Topic

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.llm.client import ChatClient

__all__ = ["PROMPT", "parse_proposal", "propose_query_graph"]

PROMPT = """You turn a question into a query graph over a knowledge graph. Answer with ONE JSON object and nothing \
else, of this shape (leave out the parts the question does not need):
{{"topics": [{{"name": ..., "id": ...}}],            // the named thing(s) the question starts from: pick from TOPICS
 "path": [{{"relation": ..., "direction": "out"|"in"}}],   // 1-3 hops from the first topic to the answer; RELATIONS only
 "answer_type": "...",                              // the type asked for ("country", "year"), optional
 "entity_constraint": {{"topic": {{"name": ..., "id": ...}}, "path": [...]}},   // a second topic the answers reach
 "literal_constraint": {{"relation": ..., "op": "<"|"<="|">"|">="|"="|"between", "value": 1900, "value2": null,
                         "kind": "year"|"date"|"number", "on": "answer"|"middle", "text": "before 1900"}},
 "aggregation": {{"op": "count"|"argmax"|"argmin", "relation": ..., "limit": 1, "text": "oldest"}}}}

TOPICS (name -> id):
{topics}

RELATIONS (id: readable name):
{relations}

QUESTION: {question}
JSON:"""
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _relations_used(plan: QueryGraph) -> list[str]:
    used = [h.relation for h in plan.path]
    if plan.entity_constraint is not None:
        used += [h.relation for h in plan.entity_constraint.path]
    if plan.literal_constraint is not None:
        used.append(plan.literal_constraint.relation)
    if plan.aggregation is not None and plan.aggregation.relation:
        used.append(plan.aggregation.relation)
    return used


def parse_proposal(text: str, topics: Sequence[Topic], relations: Mapping[str, str]) -> tuple[QueryGraph | None, str]:
    """The plan in a model's reply, checked against the shown topics and relations; else ``(None, why)``."""
    match = _OBJECT.search(text or "")
    if match is None:
        return None, "the LLM's reply holds no JSON object"
    try:
        raw = json.loads(match.group(0))
    except ValueError as exc:
        return None, f"the LLM's JSON does not parse ({exc.msg})"
    if not isinstance(raw, dict):
        return None, "the LLM's JSON is not an object"
    raw = {k: v for k, v in raw.items() if k not in ("score", "confidence", "source", "unused")}
    try:
        plan = QueryGraph.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"the LLM's plan is not a valid query graph ({where}: {first['msg']})"
    known = {t.id: t for t in topics}
    chosen = plan.topics[:1] + ([plan.entity_constraint.topic] if plan.entity_constraint is not None else [])
    for topic in chosen:
        if topic.id not in known:
            return None, f"the LLM's plan starts from {topic.id!r}, not one of the linked topics"
    unknown = [r for r in _relations_used(plan) if r not in relations]
    if unknown:
        return None, f"the LLM's plan uses {unknown[0]!r}, not a relation of this graph"
    named = plan.model_copy(update={"source": "llm", "topics": [known[t.id] for t in plan.topics if t.id in known]})
    hops = [h.model_copy(update={"label": h.label or relations[h.relation]}) for h in named.path]
    return named.model_copy(update={"path": hops}), ""


def propose_query_graph(client: ChatClient, question: str, topics: Sequence[Topic], relations: Mapping[str, str],
                        max_relations: int = 200) -> tuple[QueryGraph | None, str]:
    """Ask ``client`` for the plan of ``question`` (see the module docstring): ``(plan, "")`` or ``(None, why)``."""
    if not topics:
        return None, "no linked topic to start a plan from"
    shown = dict(list(relations.items())[:max_relations])
    prompt = PROMPT.format(topics="\n".join(f"{t.name} -> {t.id}" for t in topics),
                           relations="\n".join(f"{r}: {label}" for r, label in shown.items()), question=question)
    try:
        reply = client.chat([{"role": "user", "content": prompt}], temperature=0.0, max_tokens=400)
    except LLMError as exc:
        return None, f"the LLM failed: {exc}"
    return parse_proposal(reply.text, topics, shown)
