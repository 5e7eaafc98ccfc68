"""The online agent: extract keywords -> schema recall -> contextual recall -> plan <-> tools -> answer.

    langgraph dev --no-browser        # serves ``graph`` as assistant "agent" (langgraph.json)
    graph.invoke({"question": "百日咳有哪些症状", "kn_id": "medical"})["answer"]
    graph.invoke({"question": "who directed the films starring Tom Hanks", "kg": "metaqa"})["answers"]

Thin wiring: every node is a step of :mod:`kgrag.agent.steps` (a knowledge network) or of
:mod:`kgrag.agent.kg_steps` (a triple graph behind SPARQL, when the input or context names ``kg``), run with the run's settings (the context, over
:class:`kgrag.config.Settings`) and the shared resources. Routers are typed. Compiled without a checkpointer: the
LangGraph server brings its own (threads); ``kgrag ask`` passes a thread's history in the input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs.agent.context import AgentContext, resolve
from graphs.agent.state import AgentInput, AgentState
from kgrag.agent import kg_steps, steps
from kgrag.agent.resources import resources_for
from kgrag.agent.state import kind_of
from kgrag.config import get_settings

__all__ = ["build_graph", "graph"]


Step = Callable[[AgentState, steps.AgentRun], dict[str, Any]]


def _node(kn_step: Step, kg_step: Step) -> Callable[..., dict[str, Any]]:
    """The node runs the step of the run's kind: a knowledge network, or a triple graph (``kg``)."""
    def node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        settings = get_settings()
        run = steps.AgentRun(resolve(runtime.context, settings), resources_for(settings))
        return (kg_step if kind_of(state, run.settings) == "kg" else kn_step)(state, run)

    node.__name__ = kn_step.__name__
    return node


def after_keywords(state: AgentState) -> Literal["schema_recall", "answer"]:
    """A turn whose input was refused goes straight to the answer that says why."""
    return "answer" if state.get("done") else "schema_recall"


def after_plan(state: AgentState) -> Literal["tools", "answer"]:
    """Pending calls run; no call left (answered, nothing to try, budget spent) answers."""
    return "tools" if state.get("pending") else "answer"


def build_graph() -> StateGraph:
    builder = StateGraph(AgentState, context_schema=AgentContext, input_schema=AgentInput)
    for name in ("extract_keywords", "schema_recall", "contextual_recall", "plan", "tools", "answer"):
        builder.add_node(name, _node(getattr(steps, name), getattr(kg_steps, name)))
    builder.add_edge(START, "extract_keywords")
    builder.add_conditional_edges("extract_keywords", after_keywords)
    builder.add_edge("schema_recall", "contextual_recall")
    builder.add_edge("contextual_recall", "plan")
    builder.add_conditional_edges("plan", after_plan)
    builder.add_edge("tools", "plan")
    builder.add_edge("answer", END)
    return builder


graph = build_graph().compile(name="kgrag agent")
