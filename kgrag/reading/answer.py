"""A question answered on a network's rows: read once, link, generate the candidate plans, run them, score them,
and say how sure — with what the answer rests on and the words it did not use.

    out = answer_on_view("How many pets are heavier than 10?", view)
    out.answers, out.confidence, out.plan.describe(), out.unlinked      # (['2'], 0.93, 'count Pets · weight > 10', [])

Contract: candidates from :mod:`kgrag.reading.candidates`, each run by :mod:`kgrag.reading.execute` and scored by
the scorer (:func:`kgrag.reading.scorer.load_scorer`: the learned one when trained, else the rules); plans that
give the same answers are one reading (their best score counts), so the **margin** is over the best *different*
answer. ``confidence`` is the scorer's calibrated probability that the answer is right; ``unlinked`` the
question's content words no part of the plan explains (no type, property, value or number took them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgrag.reading.candidates import plan_candidates
from kgrag.reading.execute import PlanResult, run_plan
from kgrag.reading.features import plan_features, plan_words
from kgrag.reading.linking import element_words, explained
from kgrag.reading.reader import read_question
from kgrag.reading.scorer import PlanScorer, load_scorer
from kgrag.reading.table_plan import TablePlan
from kgrag.reading.tables import TableView

__all__ = ["TableAnswer", "answer_on_view", "scored_candidates"]


@dataclass
class TableAnswer:
    question: str
    plan: TablePlan
    result: PlanResult
    confidence: float
    score: float
    margin: float
    coverage: float
    unlinked: list[str]
    scorer: str
    #: the next readings: (describe, score, answers)
    alternatives: list[tuple[str, float, list[str]]] = field(default_factory=list)

    @property
    def answers(self) -> list[str]:
        return self.result.answers

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "plan": self.plan.model_dump(mode="json"), "describe": self.plan.describe(),
                "answers": self.answers, "count": self.result.count, "evidence": self.result.evidence,
                "confidence": round(self.confidence, 4), "score": round(self.score, 4),
                "margin": round(self.margin, 4), "coverage": round(self.coverage, 4), "unlinked": self.unlinked,
                "scorer": self.scorer,
                "alternatives": [{"describe": d, "score": round(s, 4), "answers": a[:5]}
                                 for d, s, a in self.alternatives]}


def scored_candidates(question: str, view: TableView, scorer: PlanScorer | None = None
                      ) -> tuple[Any, list[PlanResult], list[dict[str, float]], np.ndarray]:
    """``(candidates, results, feature rows, scores)`` of every candidate plan."""
    reading = read_question(question)
    found = plan_candidates(reading, view)
    results = [run_plan(p, view) for p in found.plans]
    rows = plan_features(found, results, view)
    scores = (scorer or load_scorer()).score(rows) if rows else np.zeros(0)
    return found, results, rows, scores


def answer_on_view(question: str, view: TableView, scorer: PlanScorer | None = None) -> TableAnswer | None:
    """The best reading of ``question`` on ``view`` (None when no plan can be made: nothing links)."""
    scorer = scorer or load_scorer()
    found, results, rows, scores = scored_candidates(question, view, scorer)
    if not found.plans:
        return None
    best_by_answer: dict[tuple[str, ...], int] = {}
    for i, result in enumerate(results):
        if result.problem:
            continue
        key = tuple(sorted(a.lower() for a in result.answers))
        if key not in best_by_answer or scores[i] > scores[best_by_answer[key]]:
            best_by_answer[key] = i
    if not best_by_answer:
        return None
    ranked = sorted(best_by_answer.values(), key=lambda i: -scores[i])
    top = ranked[0]
    second = float(scores[ranked[1]]) if len(ranked) > 1 else 0.0
    margin = float(scores[top]) - second
    coverage = rows[top]["coverage"]
    unexplained = rows[top]["unexplained"]
    confidence = scorer.confidence(float(scores[top]), margin, coverage, unexplained)
    plan = found.plans[top]
    return TableAnswer(question, plan, results[top], confidence, float(scores[top]), margin, coverage,
                       _unlinked(found.reading, plan, view, found.used.get(plan.key(), ())), scorer.name,
                       [(found.plans[i].describe(), float(scores[i]), results[i].answers) for i in ranked[1:4]])


def _unlinked(reading: Any, plan: TablePlan, view: TableView, used: Any) -> list[str]:
    words = plan_words(plan, view)
    for rid, _ in plan.path:  # the relations walked: "wrote", "published by" are linked words too
        rt = next((r for r in view.network.relation_types if r.id == rid), None)
        words += list(element_words(rid)) + (list(element_words(rt.name)) if rt is not None and rt.name else [])
    spans = [a.span for a in used]
    out = []
    for t in reading.tokens:
        if t.is_stop or t.pos in ("PUNCT", "NUM", "SYM", "AUX", "DET", "ADP", "PRON", "CCONJ", "PART"):
            continue
        if t.i == 0 and t.pos == "VERB":  # the imperative that asks ("Find …", "List …")
            continue
        if explained(t, spans, words):
            continue
        if reading.wh_head and t.lemma.lower() == reading.wh_head.lower() and plan.op in ("count",):
            continue
        if t.tag in ("JJR", "RBR") and any(f.number is not None for f in plan.filters):
            continue  # "greater" / "older": the comparison a number filter applies
        if t.tag in ("JJS", "RBS") and (plan.order is not None or plan.op in ("max", "min")):
            continue  # "youngest" / "most": the order applied
        out.append(t.text)
    return list(dict.fromkeys(out))
