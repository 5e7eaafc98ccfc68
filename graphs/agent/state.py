"""The graph's state schemas: the whole state (:class:`kgrag.agent.state.AgentState`) and what a run's input may
carry (``question``, optionally ``kn_id`` or ``kg``; a thread's follow-up carries only the new question)."""

from __future__ import annotations

from typing import Any, TypedDict

from kgrag.agent.state import AgentState

__all__ = ["AgentInput", "AgentState"]


class AgentInput(TypedDict, total=False):
    question: str
    kn_id: str
    kg: str
    #: earlier turns, for in-process runs without a checkpointer (``kgrag ask --thread``)
    history: list[dict[str, Any]]
