"""The agent's tools on a triple graph: ``reason_paths`` (H-RAG), ``get_relations`` / ``get_triples`` (the
kg-tools session, spec kg-tools.md, the specification of the KG tools for LLM agents), ``verify_path`` (each
triple of a path asked of the store) and, LLM-free without a trained reasoner, ``rank_chains``
(:mod:`kgrag.agent.kg.zero_shot`: the topics' chains ranked, the best chain's ends, its triples checked on
the store) and ``query_graph`` (:mod:`kgrag.agent.kg.query_plan`: the question's query graph planned over the
linked topics and run as SPARQL: counts, filters, superlatives, answer types) and ``query_plan``
(:mod:`kgrag.agent.kg.table_plans`: a plan over the KG's classes as tables — filters on values, a join, a
count, an order), run the same way for both planners and both LLM styles.

    call = run_kg_call(kg, session, ToolCall(name="get_relations", args={"entity": "Tom Hanks"}), turn)
    call["result"]["text"]          # exactly what the model reads next

A call's ``result`` always has ``text`` (the model's view); ``reason_paths`` adds the ranked answers with their
paths (names and ids), ``verify_path`` the check per triple. Nothing raises on what a model wrote: a bad call,
an unknown entity or relation, hostile text and store failures come back as text the model can read, and the
call's ``error`` says what went wrong for the trace. ``kg_query`` runs one ``<kg-query>`` text: the spec's two
shapes go to the session, and ``reason_paths("…")`` to the reasoner.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from kgrag.agent.kg.query_plan import Proposer, query_graph_result
from kgrag.agent.kg.table_plans import query_plan_result
from kgrag.agent.turn.state import ToolCall
from kgrag.errors import KgragError
from kgrag.hrag.gflownet.llm_answer import verbalise_path
from kgrag.tools.parse import GetRelations, GetTriples, ParseError, extract_query, parse_query

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.agent.kg.triple_kg import EntityMatch, TripleKG
    from kgrag.tools.session import KGSession

__all__ = ["KG_TOOL_NAMES", "kg_openai_tools", "reason_text", "run_kg_call"]

KG_TOOL_NAMES = ("reason_paths", "get_relations", "get_triples", "verify_path", "kg_query", "rank_chains",
                 "query_graph", "query_plan")
_REASON = re.compile(r"reason_paths\s*\(\s*([\"'])(.*?)\1\s*\)", re.DOTALL)
#: ranked answers a ``reason_paths`` text shows with their path
REASON_SHOWN = 3
MAX_ARG_CHARS = 2000


def reason_text(answers: list[dict[str, Any]], predicted: list[str], shown: int = REASON_SHOWN,
                listed: int = 30) -> str:
    """The answer set (at most ``listed`` names) and the best ``shown`` answers with one path each::

        Answers (2): Steven Spielberg | Ron Howard
        1. Steven Spielberg (0.93): Tom Hanks <-[starred_actors]- Saving Private Ryan -[directed_by]-> …
    """
    if not answers:
        return "No answer path found."
    more = f" | … ({len(predicted) - listed} more)" if len(predicted) > listed else ""
    lines = [f"Answers ({len(predicted)}): " + " | ".join(predicted[:listed]) + more]
    for i, a in enumerate(answers[:shown], 1):
        if a.get("paths"):
            lines.append(f"{i}. {a['name']} ({a['score']:.2f}): {a['paths'][0]}")
    return "\n".join(lines)


def _reason(kg: TripleKG, question: str, topics: list[EntityMatch], k: int) -> tuple[dict[str, Any], str]:
    if kg.reasoner is None:
        return {"text": f"[reason_paths is not available on {kg.dataset}: {kg.reasoner_note}]"}, "no reasoner"
    rows = [t.row for t in topics] or None
    answer = kg.reasoner.answer(question, rows, k=k)
    answers = [{"name": a.name, "entity_id": a.entity_id, "score": round(float(a.score), 4),
                "paths": [verbalise_path(p) for p in a.paths],
                "triples": [[list(t) for t in p.triples] for p in a.paths],
                "id_triples": [[list(t) for t in p] for p in a.id_paths]} for a in answer.answers]
    result = {"answers": answers, "predicted": answer.predicted, "linked": answer.linked,
              "ms": {k2: round(v, 2) for k2, v in answer.ms.items()}, "note": answer.note}
    result["text"] = reason_text(answers, answer.predicted) if answers else f"No answer path found: {answer.note}"
    return result, ""


def _verify(kg: TripleKG, triples: Any) -> tuple[dict[str, Any], str]:
    if not isinstance(triples, list) or not triples or not all(
            isinstance(t, list | tuple) and len(t) == 3 and all(isinstance(x, str) for x in t) for t in triples):
        return {"text": "[verify_path needs triples as [head id, relation, tail id] lists]"}, "bad arguments"
    checks = []
    for head, relation, tail in triples[:8]:
        try:
            held = kg.client.has_triple(head, relation, tail)
        except ValueError as exc:  # an id or relation that cannot name a term
            return {"text": f"[verify_path: {exc}]"}, str(exc)
        checks.append({"triple": [head, relation, tail], "held": bool(held)})
    ok = all(c["held"] for c in checks)
    return {"checks": checks, "verified": ok,
            "text": f"{sum(c['held'] for c in checks)}/{len(checks)} triples held by the store"}, ""


def _rank_chains(kg: TripleKG, question: str, entities: Any, topics: list[EntityMatch]) -> tuple[dict[str, Any], str]:
    if not isinstance(entities, list) or not entities or not all(isinstance(e, str) for e in entities):
        return {"text": "[rank_chains needs a list of topic entity ids]"}, "bad arguments"
    known = {t.entity_id: t.name for t in topics}
    try:
        found = kg.zero_shot.answer(question, {e: known.get(e, "") for e in dict.fromkeys(entities[:3])})
    except ValueError as exc:  # an id that cannot name a term
        return {"text": f"[rank_chains: {exc}]"}, str(exc)
    answers = [{"name": a.label, "entity_id": a.id, "is_literal": a.is_literal, "score": round(found.score, 4)}
               for a in found.answers]
    result = {"chain": found.chain, "chains": [c.as_dict() for c in found.chains], "score": round(found.score, 4),
              "answers": answers, "evidence": found.evidence, "verified": found.verified,
              "candidates": [c.as_dict() for c in found.candidates], "note": found.note}
    if not answers:
        result["text"] = f"No chain with a named end: {found.note}"
        return result, ""
    names = " | ".join(a["name"] for a in answers[:30]) + (f" | … ({len(answers) - 30} more)" if len(answers) > 30
                                                           else "")
    held = sum(found.held)
    result["text"] = (f"Answers ({len(answers)}): {names}\nChain: {found.chain} (score {found.score:.2f}); "
                      f"{held}/{len(found.held)} triples held by the store")
    return result, ""


def _query_graph(kg: TripleKG, question: str, topics: Any, propose: Proposer | None = None
                 ) -> tuple[dict[str, Any], str]:
    if not isinstance(topics, list) or not topics or not all(
            isinstance(t, dict) and isinstance(t.get("entity_id"), str) for t in topics):
        return {"text": "[query_graph needs a list of topics, each with an entity_id]"}, "bad arguments"
    try:
        return query_graph_result(kg, question, topics[:4], propose), ""
    except ValueError as exc:  # an id or relation that cannot name a term
        return {"text": f"[query_graph: {exc}]"}, str(exc)


def _session_call(session: KGSession, query: GetRelations | GetTriples | ParseError) -> tuple[dict[str, Any], str]:
    """Run a query in the session; the error (if any) is read off the trace records it appended."""
    before = len(session.trace)
    text = session.execute(query)
    records = session.trace[before:]
    error = next((r["content"] for r in records if r.get("type") in ("error", "max_calls_reached")), "")
    result: dict[str, Any] = {"text": text}
    for record in records:
        if record.get("type") == "tool_call":
            result["entity_resolved"] = record["args"].get("entity_resolved")
            if "triples" in record:  # get_triples: the shown triples with their ids
                result["triples"] = record["triples"]
            if record.get("cvt_info"):
                result["cvt_info"] = [{k: v for k, v in c.items() if k != "flattened_triples"}
                                      for c in record["cvt_info"]]
    return result, error[:300]


def _string(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and 0 < len(value) <= MAX_ARG_CHARS else None


def _dispatch(kg: TripleKG, session: KGSession, name: str, args: Any, question: str, topics: list[EntityMatch],
              k: int, propose: Proposer | None = None) -> tuple[dict[str, Any], str]:
    if not isinstance(args, dict):
        return {"text": "[arguments must be a JSON object]"}, "arguments are not a JSON object"
    if name == "reason_paths":
        return _reason(kg, _string(args, "question") or question, topics, k)
    if name == "verify_path":
        return _verify(kg, args.get("triples"))
    if name == "rank_chains":
        return _rank_chains(kg, _string(args, "question") or question, args.get("entities"), topics)
    if name == "query_graph":
        return _query_graph(kg, _string(args, "question") or question, args.get("topics"), propose)
    if name == "query_plan":
        return query_plan_result(kg, args)
    if name == "get_relations":
        entity = _string(args, "entity")
        if entity is None:
            return {"text": "[get_relations needs an entity name or id]"}, "bad arguments"
        return _session_call(session, GetRelations(entity))
    if name == "get_triples":
        entity, relations = _string(args, "entity"), args.get("relations")
        if entity is None or not isinstance(relations, list) or not all(isinstance(r, str) for r in relations):
            return {"text": "[get_triples needs an entity and a list of relation names]"}, "bad arguments"
        return _session_call(session, GetTriples(entity, tuple(dict.fromkeys(relations))))
    if name == "kg_query":
        text = _string(args, "text") or ""
        match = _REASON.fullmatch(extract_query(text))
        if match:
            return _reason(kg, match.group(2).strip() or question, topics, k)
        return _session_call(session, parse_query(text))  # a parse error is a counted call too (spec §1)
    return {"text": f"[unknown tool {name!r}; use {', '.join(KG_TOOL_NAMES[:3])}]"}, f"unknown tool {name!r}"


def run_kg_call(kg: TripleKG, session: KGSession, call: ToolCall, question: str, topics: list[EntityMatch],
                k: int = 10, propose: Proposer | None = None) -> ToolCall:
    """Run one call; the returned copy has ``result`` (with ``text``), ``ms`` and, when it failed, ``error``
    (``propose``: the LLM's query graph, for ``query_graph``)."""
    started = time.perf_counter()
    try:
        result, error = _dispatch(kg, session, call.get("name", ""), call.get("args"), question, topics, k, propose)
    except KgragError as exc:  # the store or the reasoner failed: said, the session stays usable
        result, error = {"text": f"[KG query failed: {exc}]"}, str(exc)
    done = ToolCall(**call, result=result, ms=round((time.perf_counter() - started) * 1000, 2))
    if error:
        done["error"] = error
    return done


def kg_openai_tools() -> list[dict[str, Any]]:
    """The tools as OpenAI functions (the tool-calling LLM style)."""
    def function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": description, "parameters": {
            "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}

    return [
        function("reason_paths", "Ranked answers to the question with the KG paths that reach them.",
                 {"question": {"type": "string", "description": "the question"}}, ["question"]),
        function("get_relations", "The relations of an entity, ranked for the question.",
                 {"entity": {"type": "string", "description": "an entity name or id as shown"}}, ["entity"]),
        function("get_triples", "Triples of an entity along up to 4 relations returned by get_relations.",
                 {"entity": {"type": "string"},
                  "relations": {"type": "array", "items": {"type": "string"}, "maxItems": 4}},
                 ["entity", "relations"]),
    ]
