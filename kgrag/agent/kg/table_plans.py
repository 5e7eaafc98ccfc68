"""The triple agent's query plans over rows (issue 49): a KG whose entities have classes is viewed as tables
(:func:`kgrag.reading.graph_tables.view_for_graph`: a class's entities as rows, the triples to values as their
properties, the triples between typed entities as links), and an English question is planned, scored and answered
over them exactly as on a network (:mod:`kgrag.agent.turn.row_plans`).

    update, summary, sure = table_plan_step(state, run)   # None: the turn goes on with the other planners
    result = query_plan_result(kg, {"plan": {...}})        # the ``query_plan`` tool on a triple KG

Contract: :func:`table_plan_step` plans only a turn's first call, only when ``AgentSettings.table_plans``, only on
a KG with a local graph that types its entities (at most :data:`~kgrag.reading.tables.MAX_ROWS` typed rows).
The triple agent (:func:`kgrag.agent.kg.steps.plan`) plans over rows only a question that names no typed entity
(:func:`names_an_entity`: its topic, however linked — "Ravenscroft" for "Zofia Ravenscroft" —
is a typed entity): a sure plan answers; with no linked topic at all, an unsure plan answers too (withheld
below the threshold) when it filters on something, or when it is at least ``UNFILTERED_FLOOR`` sure and no query
graph over a type applies; a question that
names an entity keeps the topic's planners (query graphs, H-RAG, ranked chains).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kgrag.agent.kg.needs import TripleRun
from kgrag.agent.turn.node import Update
from kgrag.agent.turn.row_plans import cross_check, plan_call, plan_result
from kgrag.agent.turn.state import AgentState
from kgrag.errors import KgragError
from kgrag.reading.graph_tables import GraphView, view_for_graph
from kgrag.reading.table_plan import TablePlan

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.agent.kg.triple_kg import TripleKG

__all__ = ["check_on_tables", "graph_view", "names_an_entity", "query_plan_result", "table_plan_step"]

def graph_view(kg: TripleKG) -> GraphView | None:
    """The KG's classes as tables (None: no local graph, or no class)."""
    return view_for_graph(kg.graph) if kg.graph is not None else None


def names_an_entity(state: AgentState, view: GraphView) -> bool:
    """Whether the question's topic (linked in any way: a whole name, a surname, the thread's) is a typed entity."""
    topic = state.get("topic") or {}
    row = topic.get("row")
    if row is None or topic.get("is_class"):
        return False
    at = int(view.typed.searchsorted(int(row)))
    return at < view.typed.size and int(view.typed[at]) == int(row)


def table_plan_step(state: AgentState, run: TripleRun, kg: TripleKG) -> tuple[Update, str, bool] | None:
    """The turn's query plan as one ``query_plan`` call and whether it is sure, or None (see the module
    docstring)."""
    if not run.settings.table_plans or state.get("tool_calls") or state.get("query_graph"):
        return None
    view = graph_view(kg)
    if view is None or names_an_entity(state, view):
        return None
    return plan_call(state, view)


def query_plan_result(kg: TripleKG, args: Any) -> tuple[dict[str, Any], str]:
    """The ``query_plan`` tool: ``({"text", "answers", "count", "rows", "evidence", …}, error)``."""
    view = graph_view(kg)
    if view is None:
        return {"text": f"[query_plan is not available on {kg.dataset}: it types no entity]"}, "no classes"
    try:
        plan = TablePlan.model_validate((args or {}).get("plan"))
        result = plan_result(plan, view)
    except (ValidationError, KgragError) as exc:
        return {"text": f"[query_plan: {str(exc).splitlines()[0]}]"}, str(exc).splitlines()[0]
    return {**result, "text": f"{result['summary']}: " + " | ".join(result["answers"][:30])}, ""


def check_on_tables(state: AgentState, run: TripleRun, kg: TripleKG, values: list[str]) -> dict[str, Any] | None:
    """A query graph's answer checked against the plan over the KG's classes as tables
    (:func:`kgrag.agent.turn.row_plans.cross_check`; None when plans are off or the KG types no entity)."""
    if not run.settings.table_plans:
        return None
    return cross_check(state.get("question", ""), graph_view(kg), values)
