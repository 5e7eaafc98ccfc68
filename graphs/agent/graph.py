"""The online agent: extract keywords -> schema recall -> contextual recall -> plan <-> tools -> answer.

    langgraph dev --no-browser        # serves ``graph`` as assistant "agent" (langgraph.json)
    graph.invoke({"question": "百日咳有哪些症状", "kn_id": "medical"})["answer"]
    graph.invoke({"question": "who directed the films starring Tom Hanks", "kg": "metaqa"})["answers"]
    graph.invoke({"messages": [{"role": "user", "content": "who directed Carnival Lights?"}], "kg": "demo"})["messages"][-1].content

Thin wiring: every node pairs a step of :mod:`kgrag.agent.kn.steps` (a knowledge network) with the same step of
:mod:`kgrag.agent.kg.steps` (a triple graph behind SPARQL, when the input or context names ``kg``), run with the
run's settings (the context, over :class:`kgrag.config.Settings`) and the shared resources. Routers are typed. Compiled without a checkpointer: the
LangGraph server brings its own (threads); ``kgrag ask`` passes a thread's history in the input.

It speaks LangGraph's messages convention (:mod:`kgrag.agent.turn.messages`), so chat clients and UIs work with it: the
question is ``question``, else the last human message of ``messages``; the answer ends the turn as an AI message
in ``messages``, next to the structured fields (``answer``, ``answers``, ``evidence``, ``trace``, ``history``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs.agent.context import AgentContext, resolve
from graphs.agent.state import AgentInput, AgentState
from kgrag.agent.kg import steps as kg
from kgrag.agent.kn import steps as kn
from kgrag.agent.resources import resources_for
from kgrag.agent.turn.node import AgentRun
from kgrag.agent.turn.state import kind_of
from kgrag.config import get_settings

__all__ = ["NODES", "build_graph", "graph"]


Step = Callable[[AgentState, AgentRun], dict[str, Any]]

#: node name -> (its step on a knowledge network, its step on a triple graph), in the order a turn runs them
NODES: dict[str, tuple[Step, Step]] = {
    "extract_keywords": (kn.extract_keywords, kg.extract_keywords),
    "schema_recall": (kn.schema_recall, kg.schema_recall),
    "contextual_recall": (kn.contextual_recall, kg.contextual_recall),
    "plan": (kn.plan, kg.plan),
    "tools": (kn.tools, kg.tools),
    "answer": (kn.answer, kg.answer),
}


def _node(kn_step: Step, kg_step: Step) -> Callable[..., dict[str, Any]]:
    """The node runs the step of the run's kind: a knowledge network, or a triple graph (``kg``)."""
    def node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        settings = get_settings()
        run = AgentRun(resolve(runtime.context, settings), resources_for(settings))
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
    for name, (kn_step, kg_step) in NODES.items():
        builder.add_node(name, _node(kn_step, kg_step))
    builder.add_edge(START, "extract_keywords")
    builder.add_conditional_edges("extract_keywords", after_keywords)
    builder.add_edge("schema_recall", "contextual_recall")
    builder.add_edge("contextual_recall", "plan")
    builder.add_conditional_edges("plan", after_plan)
    builder.add_edge("tools", "plan")
    builder.add_edge("answer", END)
    return builder


graph = build_graph().compile(name="kgrag agent")
