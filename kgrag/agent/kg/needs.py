"""What the triple-graph steps need of the shared resources (:class:`TripleNeeds`, a Protocol) and the run they
receive (:data:`TripleRun`): the steps name the parts they use, not the class that opens them
(:class:`kgrag.agent.kg.resources.TripleResources`, inside :class:`kgrag.agent.resources.Resources`).

    run: TripleRun = AgentRun(AgentSettings(kg="demo"), resources_for(get_settings()))
"""

from __future__ import annotations

from typing import Protocol

from kgrag.agent.kg.triple_kg import TripleKG
from kgrag.agent.turn.node import AgentRun
from kgrag.llm.client import ChatClient

__all__ = ["TripleNeeds", "TripleRun"]


class TripleNeeds(Protocol):
    """The triple graph and LLM client a triple-graph turn reads."""

    def triple_kg(self, kg: str) -> TripleKG: ...

    def llm(self) -> ChatClient | None: ...


#: the run a triple-graph step receives
TripleRun = AgentRun[TripleNeeds]
