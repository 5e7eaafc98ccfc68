"""The network agent's query plans over rows (issue 49): an English question read once, linked to the schema and
to stored values, its candidate :class:`~kgrag.reading.table_plan.TablePlan` s scored (the learned scorer when one
is trained, else the rules) — the best one run as the ``query_plan`` tool, its answer said with what it rests on,
the words it did not link and a calibrated confidence.

    update, summary = table_plan_step(state, run)     # None: the turn goes on with the other planners
    text, values, evidence, threshold = table_answer(state)

Contract: :func:`table_plan_step` plans only a turn's first call, only for a question with no CJK character (the
Chinese path keeps its planners), only on a network of at most :data:`MAX_ROWS` instances (its rows are read into
memory once per version), only when ``AgentSettings.table_plans``, and says whether the plan is **sure**
(its confidence at least the calibrated threshold and :data:`TAKEOVER`). The network agent
(:func:`kgrag.agent.kn.steps.plan`) plans over rows only a question that names no stored instance (no exact or
other-name storage form, no topic from the thread): a sure plan answers; else the query graph of
:mod:`kgrag.query_graph` when it applies at least as many of the question's conditions (topics, a literal
constraint) as the plan's filters; else the unsure plan when it filters on something (confidence ≥ :data:`FLOOR`),
or when no query graph is planned and its confidence is at least :data:`UNFILTERED_FLOOR` (withheld below the
threshold either way); else the other planners ("Who wrote zzqx?", 0.13: they say what could not be linked).
A question naming an instance keeps the topic's planners: its thread's topic and its relation's reading ("Jane
Austen — wrote: …"). Measured in one session (agent-eval, LLM-free): Spider's 5 dev databases F1 0.773 with the
query graph before any unsure plan, 0.818 in this order, 0.833 with the plan always first — which cost the
library's and the demo network's dev questions (bench.query_graphs) 0.982 → 0.929 and 1.000 → 0.979; in this order
they stay at 0.982 and 1.000.
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

__all__ = ["FLOOR", "MAX_ROWS", "TAKEOVER", "UNFILTERED_FLOOR", "calibrated_threshold", "names_an_instance", "table_answer",
           "table_plan_step"]

#: the most instances a network may have for its rows to be read into memory and planned over (per version)
MAX_ROWS = 300_000
#: the least confidence of a sure query plan (the calibrated threshold when that is higher)
TAKEOVER = 0.5
#: the least confidence at which a query plan answers a question that names no stored instance (the other planners
#: have nothing to start from there but text retrieval)
FLOOR = 0.1
#: the least confidence of an unsure plan that filters on nothing (below it the other planners say what they could
#: not link)
UNFILTERED_FLOOR = 0.25
_CJK = re.compile("[\u3400-\u9fff]")


def calibrated_threshold() -> float:
    """The confidence at which the scorer's answers were right ≥ 90 % of the time on its validation databases."""
    scorer = load_scorer()
    meta = getattr(scorer, "meta", None) or {}
    return float((meta.get("figures") or {}).get("min_confidence_for_90", 0.0))


def table_plan_step(state: AgentState, run: NetworkRun) -> tuple[Update, str, bool] | None:
    """The turn's query plan as one ``query_plan`` call and whether it is sure (its confidence at least the
    calibrated threshold and :data:`TAKEOVER`), or None when no plan is due (see the module docstring)."""
    if not run.settings.table_plans or state.get("tool_calls") or state.get("query_graph"):
        return None
    question = state.get("question", "")
    if not question or _CJK.search(question):
        return None
    if run.resources.store.count_instances(state["kn_id"]) > MAX_ROWS:
        return None  # the rows are read into memory per version: a bigger network keeps the other planners
    view = view_for(run.resources.store, state["kn_id"])
    found = answer_on_view(question, view)
    if found is None or found.confidence < FLOOR:
        return None
    call = ToolCall(id=f"call_{len(state.get('tool_calls', [])) + 1}", name="query_plan",
                    args={"plan": found.plan.model_dump(mode="json")}, why=f"query plan: {found.plan.describe()}",
                    label="tp:plan")
    kept = {k: v for k, v in found.to_dict().items() if k not in ("evidence", "answers", "count")}
    update: Update = {"pending": [call], "table_plan": kept, "confidence": round(found.confidence, 4),
                      "unused": list(found.unlinked)}
    sure = found.confidence >= max(TAKEOVER, calibrated_threshold())
    return update, (f"query plan: {found.plan.describe()} (confidence {found.confidence:.2f}, scorer "
                    f"{found.scorer})"), sure


def names_an_instance(state: AgentState) -> bool:
    """Whether the question says a stored instance's name (an exact or other-name storage form)."""
    return any(c.get("match_type") in ("exact", "alias") for c in state.get("context", {}).get("storage_forms", []))


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
