"""Plans over rows for both agents (issue 49): one question's best :class:`~kgrag.reading.table_plan.TablePlan` on
a :class:`~kgrag.reading.tables.TableView` (a network's, or a triple KG's classes as tables) as one ``query_plan``
call, the call's result, and the answer read from it with what it rests on and its calibrated threshold.

    found, call = plan_call(state, view)             # None: no plan at the floor's confidence
    result = plan_result(plan, view)                  # the query_plan tool's result (answers, rows, evidence)
    check = cross_check(question, view, ["Paris"])    # {"describe", "confidence", "agree"}: another planner checked
    text, values, evidence, threshold = table_answer(state)

Contract: :func:`plan_call` reads only English questions (none with a CJK character) and keeps plans with
confidence at least :data:`FLOOR`; the state's ``table_plan`` keeps the plan's JSON, ``describe``, confidence,
scorer and next readings, and ``unused`` its unlinked words. A plan is **sure** (:func:`is_sure`) at the calibrated
threshold and :data:`TAKEOVER`. :func:`calibrated_threshold` is the confidence at which the scorer's answers were
right ≥ 90 % of the time on its validation databases — the default that
:func:`kgrag.agent.turn.confidence.settle` applies when ``KGRAG_AGENT_MIN_CONFIDENCE`` is not set.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import OrderedDict
from typing import Any

from kgrag.agent.turn.node import Update
from kgrag.agent.turn.state import AgentState, ToolCall
from kgrag.errors import KgragError
from kgrag.reading.answer import TableAnswer, answer_on_view
from kgrag.reading.corpus import answer_key
from kgrag.reading.execute import run_plan
from kgrag.reading.scorer import load_scorer
from kgrag.reading.table_plan import TablePlan
from kgrag.reading.tables import TableView, answer_text

__all__ = ["FLOOR", "TAKEOVER", "UNFILTERED_FLOOR", "best_plan", "calibrated_threshold", "cross_check", "is_sure",
           "plan_call", "plan_result", "table_answer"]

#: the least confidence of a sure query plan (the calibrated threshold when that is higher)
TAKEOVER = 0.5
#: the least confidence at which a query plan answers a question that names no stored instance (the other planners
#: have nothing to start from there but text retrieval)
FLOOR = 0.1
#: the least confidence of an unsure plan that filters on nothing (below it the other planners say what they could
#: not link)
UNFILTERED_FLOOR = 0.25
_CJK = re.compile("[\u3400-\u9fff]")


#: the last questions' best plans per view: a turn that plans a question and then cross-checks another planner's
#: answer to it reads and scores it once
_BEST: OrderedDict[tuple[str, int, str], tuple[weakref.ref[TableView], TableAnswer | None]] = OrderedDict()
_BEST_SIZE = 64
_LOCK = threading.Lock()


def best_plan(question: str, view: TableView) -> TableAnswer | None:
    """:func:`~kgrag.reading.answer.answer_on_view` of the question on this view (its version), kept for the
    last :data:`_BEST_SIZE` questions."""
    key = (question, id(view), view.version)
    with _LOCK:
        held = _BEST.get(key)
        if held is not None and held[0]() is view:  # the same view object, not one that took its id
            _BEST.move_to_end(key)
            return held[1]
    found = answer_on_view(question, view)
    with _LOCK:
        _BEST[key] = (weakref.ref(view), found)
        while len(_BEST) > _BEST_SIZE:
            _BEST.popitem(last=False)
    return found


def calibrated_threshold() -> float:
    """The confidence at which the scorer's answers were right ≥ 90 % of the time on its validation databases."""
    scorer = load_scorer()
    meta = getattr(scorer, "meta", None) or {}
    return float((meta.get("figures") or {}).get("min_confidence_for_90", 0.0))


def is_sure(confidence: float) -> bool:
    return confidence >= max(TAKEOVER, calibrated_threshold())


def plan_call(state: AgentState, view: TableView) -> tuple[Update, str, bool] | None:
    """The question's best plan on ``view`` as one pending ``query_plan`` call: ``(update, summary, sure)``, or
    None (a CJK question, no plan, or a plan below :data:`FLOOR`)."""
    question = state.get("question", "")
    if not question or _CJK.search(question):
        return None
    found = best_plan(question, view)
    if found is None or found.confidence < FLOOR:
        return None
    call = ToolCall(id=f"call_{len(state.get('tool_calls', [])) + 1}", name="query_plan",
                    args={"plan": found.plan.model_dump(mode="json")}, why=f"query plan: {found.plan.describe()}",
                    label="tp:plan")
    kept = {k: v for k, v in found.to_dict().items() if k not in ("evidence", "answers", "count")}
    update: Update = {"pending": [call], "table_plan": kept, "confidence": round(found.confidence, 4),
                      "unused": list(found.unlinked)}
    return update, (f"query plan: {found.plan.describe()} (confidence {found.confidence:.2f}, scorer "
                    f"{found.scorer})"), is_sure(found.confidence)


def cross_check(question: str, view: TableView | None, values: list[str]) -> dict[str, Any] | None:
    """Another planner's answer set (``values``) against the plan over rows of the same question: ``{"describe",
    "confidence", "agree"}`` (agree: the same set, numbers compared as numbers), or None (no view, no English
    question, no values, no plan). Two planners that agree are more often right: an input of the fitted confidence
    (:mod:`kgrag.agent.turn.answer_confidence`)."""
    if view is None or not values or not question or _CJK.search(question):
        return None
    found = best_plan(question, view)
    if found is None:
        return None
    agree = {answer_key(v) for v in found.answers} == {answer_key(v) for v in values}
    return {"describe": found.plan.describe(), "confidence": round(found.confidence, 4), "agree": agree}


def plan_result(plan: TablePlan, view: TableView) -> dict[str, Any]:
    """The ``query_plan`` tool's result: ``describe``, ``answers`` (at most 500), ``count``, ``rows``,
    ``evidence``, ``summary``; a plan the view cannot run raises a :class:`KgragError` saying why."""
    result = run_plan(plan, view)
    if result.problem:
        raise KgragError(f"the plan cannot run: {result.problem}")
    return {"describe": plan.describe(), "answers": result.answers[:500], "count": result.count,
            "rows": len(result.rows), "evidence": result.evidence,
            "summary": f"{len(result.answers)} answers from {len(result.rows)} rows ({plan.describe()})"}


def table_answer(state: AgentState) -> tuple[str, list[str], list[dict[str, Any]], float]:
    """``(text, values, evidence rows, calibrated threshold)`` of the executed query plan."""
    plan = state.get("table_plan") or {}
    call = next((c for c in state.get("tool_calls", []) if c.get("name") == "query_plan"), None)
    describe = plan.get("describe", "")
    threshold = calibrated_threshold()
    if call is None or call.get("error") or not call.get("result"):
        why = (call or {}).get("error") or "the plan was not run"
        return f"{describe}: {why}.", [], [], threshold
    result = call["result"]
    values = list(result.get("answers") or [])
    project = (plan.get("plan") or {}).get("project", "")
    evidence = []
    for row in result.get("evidence") or []:
        value = row.get(project) if project else row.get("name")
        evidence.append({"value": answer_text(value) if value is not None else row.get("name", ""),
                         "value_instance": row.get("id", ""), "instance": row.get("id", ""),
                         "instance_name": row.get("name", ""), "via": project or "name", "direction": "out",
                         "property": project or "name", "property_value": value,
                         **{k: v for k, v in row.items() if k not in ("id", "name", "object_type")}})
    if result.get("count") is not None:
        said = f"{describe}: {result['count']}"
    elif values:
        shown = "；".join(values[:30]) + (f" … ({len(values)} in all)" if len(values) > 30 else "")
        said = f"{describe}: {shown}"
    else:
        said = f"{describe}: nothing stored matches."
    rests = f" It rests on {result.get('rows', 0)} rows of {(plan.get('plan') or {}).get('answer_type', '')}."
    return said + "." + rests, values, evidence, threshold
