"""The network agent's query plans over rows (issue 49): an English question read once, linked to the schema and
to stored values, its candidate :class:`~kgrag.reading.table_plan.TablePlan` s scored (the learned scorer when one
is trained, else the rules) — the best one run as the ``query_plan`` tool, its answer said with what it rests on,
the words it did not link and a calibrated confidence.

    update, summary, sure = table_plan_step(state, run)     # None: the turn goes on with the other planners

Contract: :func:`table_plan_step` plans only a turn's first call, only for a question with no CJK character (the
Chinese path keeps its planners), only on a network of at most :data:`~kgrag.reading.tables.MAX_ROWS` instances (its rows are read into
memory once per version), only when ``AgentSettings.table_plans``, and says whether the plan is **sure**
(:func:`kgrag.agent.turn.row_plans.is_sure`). The network agent
(:func:`kgrag.agent.kn.steps.plan`) plans over rows only a question that names no stored instance (no exact or
other-name storage form, no topic from the thread): a sure plan answers; else the query graph of
:mod:`kgrag.query_graph` when it applies at least as many of the question's conditions (topics, a literal
constraint) as the plan's filters; else the unsure plan when it filters on something (confidence ≥ ``row_plans.FLOOR``),
or when no query graph is planned and its confidence is at least ``UNFILTERED_FLOOR`` (withheld below the
threshold either way); else the other planners ("Who wrote zzqx?", 0.13: they say what could not be linked).
A question naming an instance keeps the topic's planners: its thread's topic and its relation's reading ("Jane
Austen — wrote: …"). Measured in one session (agent-eval, LLM-free): Spider's 5 dev databases F1 0.773 with the
query graph before any unsure plan, 0.818 in this order, 0.833 with the plan always first — which cost the
library's and the demo network's dev questions (bench.query_graphs) 0.982 → 0.929 and 1.000 → 0.979; in this order
they stay at 0.982 and 1.000.
The plan, its call and its answer are :mod:`kgrag.agent.turn.row_plans`' (shared with the triple agent).
"""

from __future__ import annotations

from typing import Any

from kgrag.agent.kn.needs import NetworkRun
from kgrag.agent.turn.node import Update
from kgrag.agent.turn.row_plans import cross_check, plan_call
from kgrag.agent.turn.state import AgentState
from kgrag.reading.tables import view_for

__all__ = ["check_on_rows", "names_an_instance", "table_plan_step"]


def table_plan_step(state: AgentState, run: NetworkRun) -> tuple[Update, str, bool] | None:
    """The turn's query plan as one ``query_plan`` call and whether it is sure
    (:func:`kgrag.agent.turn.row_plans.is_sure`), or None when no plan is due (see the module docstring)."""
    if not run.settings.table_plans or state.get("tool_calls") or state.get("query_graph"):
        return None
    view = view_for(run.resources.store, state["kn_id"]) if state.get("question") else None
    return plan_call(state, view) if view is not None else None  # a bigger network keeps the other planners


def names_an_instance(state: AgentState) -> bool:
    """Whether the question says a stored instance's name (an exact or other-name storage form)."""
    return any(c.get("match_type") in ("exact", "alias") for c in state.get("context", {}).get("storage_forms", []))


def check_on_rows(state: AgentState, run: NetworkRun, values: list[str]) -> dict[str, Any] | None:
    """Another planner's answer checked against the plan over the network's rows
    (:func:`kgrag.agent.turn.row_plans.cross_check`; None when plans are off or the network is too big)."""
    if not run.settings.table_plans or not values:
        return None
    return cross_check(state.get("question", ""), view_for(run.resources.store, state["kn_id"]), values)
