"""The graph's state schemas: the whole state (:class:`kgrag.agent.turn.state.AgentState`) and what a run's input may
carry (``question`` or LangGraph's ``messages``, optionally ``kn_id`` or ``kg``; a thread's follow-up carries only
the new question or the new human message)."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from kgrag.agent.turn.state import AgentState

__all__ = ["AgentInput", "AgentState"]


class AgentInput(TypedDict, total=False):
    question: str
    #: LangGraph's messages convention: the last human message is the question when ``question`` is not given
    messages: Annotated[list[AnyMessage], add_messages]
    kn_id: str
    kg: str
    #: earlier turns, for in-process runs without a checkpointer (``kgrag ask --thread``)
    history: list[dict[str, Any]]
