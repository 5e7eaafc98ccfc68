"""What the knowledge-network steps need of the shared resources (:class:`NetworkNeeds`, a Protocol) and the run
they receive (:data:`NetworkRun`): the steps name the parts they use, not the class that opens them
(:class:`kgrag.agent.kn.resources.NetworkResources`, inside :class:`kgrag.agent.resources.Resources`).

    run: NetworkRun = AgentRun(AgentSettings(kn_id="medical"), resources_for(get_settings()))
"""

from __future__ import annotations

from typing import Protocol

from kgrag.agent.kn.intent_sources import IntentPlanner
from kgrag.agent.turn.node import AgentRun
from kgrag.llm.client import ChatClient
from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.network.store import NetworkStore
from kgrag.search.keywords import Lexicon

__all__ = ["NetworkNeeds", "NetworkRun"]


class NetworkNeeds(Protocol):
    """The store, schema, lexicon, intent planner and LLM client a knowledge-network turn reads."""

    @property
    def store(self) -> NetworkStore: ...

    def network(self, kn_id: str) -> KnowledgeNetwork: ...

    def lexicon(self, kn_id: str) -> Lexicon: ...

    def intent_planner(self, kn_id: str) -> IntentPlanner: ...

    def topic_prior(self, kn_id: str) -> dict[str, int]: ...

    def llm(self) -> ChatClient | None: ...


#: the run a knowledge-network step receives
NetworkRun = AgentRun[NetworkNeeds]
