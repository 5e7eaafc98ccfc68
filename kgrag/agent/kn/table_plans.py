"""The network agent's query plans over rows (issue 49): an English question read once, linked to the schema and
to stored values, its candidate :class:`~kgrag.reading.table_plan.TablePlan` s scored (the learned scorer when one
is trained, else the rules) — the best one run as the ``query_plan`` tool, its answer said with what it rests on,
the words it did not link and a calibrated confidence.

    update, summary = table_plan_step(state, run)     # None: the turn goes on with the other planners
    text, values, evidence, threshold = table_answer(state)

Contract: :func:`table_plan_step` plans only a turn's first call, only for a question with no CJK character (the
Chinese path keeps its planners), only when ``AgentSettings.table_plans``; the plan answers when its confidence is
at least the calibrated threshold (and :data:`TAKEOVER`), or, when the question names no stored instance (no exact
storage form), at least :data:`FLOOR` — a question about a named instance that the plan is unsure of goes to the
topic's relation planners (measured on the demo network's one-relation questions: F1 0.964 with the plan always
first, 0.986 without it).
The state keeps the plan (``table_plan``: its JSON, ``describe``, confidence, scorer, the next readings).
:func:`table_answer` reads the tool's result into the answer's text, values and evidence (the agent's evidence
rows: ``value``, ``instance``, ``via`` …) and returns the calibrated default threshold (the scorer's
``min_confidence_for_90``) that :func:`kgrag.agent.turn.confidence.settle` applies when
``KGRAG_AGENT_MIN_CONFIDENCE`` is not set.
"""

from __future__ import annotations

import re
from typing import Any

from kgrag.agent.kn.needs import NetworkRun
from kgrag.agent.turn.node import Update
from kgrag.agent.turn.state import AgentState, ToolCall
from kgrag.reading.answer import answer_on_view
from kgrag.reading.scorer import load_scorer
from kgrag.reading.tables import answer_text, view_for

__all__ = ["TAKEOVER", "calibrated_threshold", "table_answer", "table_plan_step"]

#: the least confidence at which a query plan answers a question that names a stored instance (then the topic's
#: relation planners answer an unsure one); the calibrated threshold when that is higher
TAKEOVER = 0.5
#: the least confidence at which a query plan answers a question that names no stored instance (the other planners
#: have nothing to start from there but text retrieval)
FLOOR = 0.1
_CJK = re.compile("[\u3400-\u9fff]")


def calibrated_threshold() -> float:
    """The confidence at which the scorer's answers were right ≥ 90 % of the time on its validation databases."""
    scorer = load_scorer()
    meta = getattr(scorer, "meta", None) or {}
    return float((meta.get("figures") or {}).get("min_confidence_for_90", 0.0))


def table_plan_step(state: AgentState, run: NetworkRun) -> tuple[Update, str] | None:
    """The turn's query plan as one ``query_plan`` call, or None (see the module docstring)."""
    if not run.settings.table_plans or state.get("tool_calls") or state.get("query_graph"):
        return None
    question = state.get("question", "")
    if not question or _CJK.search(question):
        return None
    view = view_for(run.resources.store, state["kn_id"])
    found = answer_on_view(question, view)
    if found is None or found.confidence < FLOOR:
        return None
    named = any(c.get("match_type") in ("exact", "alias") for c in state.get("context", {}).get("storage_forms", []))
    if named and found.confidence < max(TAKEOVER, calibrated_threshold()):
        return None  # a named topic and an unsure reading: the topic's relation planners answer
    call = ToolCall(id=f"call_{len(state.get('tool_calls', [])) + 1}", name="query_plan",
                    args={"plan": found.plan.model_dump(mode="json")}, why=f"query plan: {found.plan.describe()}",
                    label="tp:plan")
    kept = {k: v for k, v in found.to_dict().items() if k not in ("evidence", "answers", "count")}
    update: Update = {"pending": [call], "table_plan": kept, "confidence": round(found.confidence, 4),
                      "unused": list(found.unlinked)}
    return update, (f"query plan: {found.plan.describe()} (confidence {found.confidence:.2f}, scorer "
                    f"{found.scorer})")


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
        said = f"{describe}: nothing stored in the knowledge network matches."
    rests = f" It rests on {result.get('rows', 0)} rows of {(plan.get('plan') or {}).get('answer_type', '')}."
    return said + "." + rests, values, evidence, threshold
