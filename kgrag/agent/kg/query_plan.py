"""The ``query_graph`` tool of the KG agent: plan the question's query graph over the linked topics
(:class:`~kgrag.query_graph.triple_planner.KGTopic`) with :class:`~kgrag.query_graph.triple_planner.TriplePlanner`
(over the KG's zero-shot chain ranker) and run the best plan as SPARQL
(:class:`~kgrag.query_graph.sparql.QueryExecutor`).

    result = query_graph_result(kg, "how many prizes did Marie Curie win?", [{"entity_id": "e.curie_1", …}])
    result["answers"], result["query_graph"]["aggregation"], result["sparql"]

The result (JSON): ``query_graph`` (the executed plan) and ``candidates`` (the next ones), ``answers`` (name, id,
literal or not; a count's single number), ``items`` (what was counted or ranked), ``evidence`` (per answer: the
path's triples with names and ids, each hop's direction, whether the store holds each triple), ``checked`` /
``total`` (answers whose path was checked, of all), ``not_applied`` (constraints the graph could not apply),
``sparql``, ``text`` (the tool's one-screen view), and ``reason`` when no plan could be built.

With ``propose`` (the LLM's query graph, :func:`kgrag.query_graph.llm_proposal.propose_query_graph` bound to a
client), the LLM is shown the linked topics and the relations of the LLM-free candidates and of the first topic;
its plan, when it holds and returns answers, is the one executed (``source: "llm"``) and the LLM-free best joins
the candidates; else the LLM-free best is executed and ``llm_note`` says why.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kgrag.graph.iri import ENTITY_ID_RE
from kgrag.query_graph.plan import QueryGraph, Topic
from kgrag.query_graph.sparql import QueryExecutor
from kgrag.query_graph.triple_planner import KGTopic, TriplePlanner

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.agent.kg.triple_kg import TripleKG

__all__ = ["Proposer", "kg_topics", "query_graph_result"]

#: the LLM's plan of a question over the shown topics and relations: ``(plan, "")`` or ``(None, why)``
Proposer = Callable[[str, list[Topic], Mapping[str, str]], tuple[QueryGraph | None, str]]

_PARTS: weakref.WeakKeyDictionary[Any, tuple[TriplePlanner, QueryExecutor]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
#: link kinds and how much they are trusted as a topic (exact spans first)
_MATCH_SCORE = {"bracket": 1.0, "exact": 1.0, "history": 1.0, "normalised": 0.95}


def _parts(kg: TripleKG) -> tuple[TriplePlanner, QueryExecutor]:
    with _LOCK:
        parts = _PARTS.get(kg)
        if parts is None:
            parts = (TriplePlanner(kg.zero_shot), QueryExecutor(kg.client))
            _PARTS[kg] = parts
        return parts


def kg_topics(links: list[dict[str, Any]]) -> list[KGTopic]:
    """The topics the planner may start from, out of the state's entity matches (``entity_id``, ``name``,
    ``keyword``, ``match_type``, ``similarity``, optional ``score`` / ``is_class``: :class:`EntityMatch` dicts); ids
    that are not entity ids are dropped."""
    out: dict[str, KGTopic] = {}
    for link in links:
        entity = link.get("entity_id")
        if not isinstance(entity, str) or not ENTITY_ID_RE.match(entity) or entity in out:
            continue
        score = link.get("score")
        if not isinstance(score, int | float):
            score = _MATCH_SCORE.get(str(link.get("match_type")), float(link.get("similarity") or 0.5) * 0.9)
        is_class = link.get("is_class")
        out[entity] = KGTopic(entity, str(link.get("name") or entity), str(link.get("keyword") or ""),
                              float(score), is_class if isinstance(is_class, bool) else None)
    return list(out.values())


def _shown_relations(kg: TripleKG, plans: list[QueryGraph], first_topic: str) -> dict[str, str]:
    """The relations an LLM may use: those of the LLM-free candidates (with their labels), then the first topic's."""
    shown: dict[str, str] = {}
    for plan in plans:
        hops = [*plan.path, *(plan.entity_constraint.path if plan.entity_constraint else [])]
        for hop in hops:
            shown.setdefault(hop.relation, hop.label or hop.relation)
        for part in (plan.literal_constraint, plan.aggregation):
            if part is not None and part.relation:
                shown.setdefault(part.relation, part.label or part.relation)
    for relation in kg.client.relations(first_topic, limit=100):
        shown.setdefault(relation, relation)
    return shown


def query_graph_result(kg: TripleKG, question: str, links: list[dict[str, Any]],
                       propose: Proposer | None = None) -> dict[str, Any]:
    """Plan and run (see the module docstring); ValueError for an id that cannot name a term."""
    planner, executor = _parts(kg)
    def answers_of(plan: QueryGraph) -> frozenset[str]:
        return frozenset(a.id for a in executor.run(plan).answers)

    topics = kg_topics(links)[:4]
    planned = planner.plan(question, topics, answers_of)
    if planned.best is None:
        return {"query_graph": None, "candidates": [], "answers": [], "reason": planned.reason,
                "text": f"No query graph: {planned.reason}"}
    best, candidates, llm_note = planned.best, list(planned.candidates), ""
    run = None
    if propose is not None and topics:
        shown = [Topic(name=t.name[:500], id=t.id) for t in topics]
        proposal, why = propose(question, shown, _shown_relations(kg, [best, *candidates], topics[0].id))
        if proposal is not None:
            tried = executor.run(proposal.model_copy(update={"confidence": best.confidence}))
            if tried.answers:
                best, candidates, run = proposal.model_copy(update={"confidence": best.confidence}), \
                    [planned.best, *candidates], tried
            else:
                llm_note = "the LLM's query graph found no answer; the LLM-free plan was used"
        else:
            llm_note = f"the LLM's query graph was not used ({why}); the LLM-free plan was used"
    run = run or executor.run(best)
    answers = [{"name": a.label, "entity_id": a.id, "is_literal": a.is_literal} for a in run.answers]
    items = [{"name": a.label, "entity_id": a.id, "is_literal": a.is_literal} for a in run.items]
    result: dict[str, Any] = {
        "query_graph": best.model_dump(), "candidates": [c.model_dump() for c in planned.candidates],
        "answers": answers, "items": items, "count": run.count, "evidence": run.evidence,
        "checked": run.checked, "total": len(run.items), "not_applied": run.not_applied, "sparql": run.sparql,
        "reason": "", "llm_note": llm_note,
    }
    shown = " | ".join(a["name"] for a in answers[:30]) + (f" | … ({len(answers) - 30} more)" if len(answers) > 30
                                                           else "")
    lines = [f"Answers ({len(answers)}): {shown or 'none'}", f"Plan: {best.describe()} (score {best.score:.2f}, "
             f"confidence {best.confidence:.2f})",
             f"{run.checked} of {len(run.items)} answers' paths checked on the store"]
    lines += [f"Not applied: {note}" for note in run.not_applied]
    result["text"] = "\n".join(lines)
    return result
