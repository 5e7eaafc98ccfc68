"""What agent runs, the MCP tools and the in-process callers share, held outside the (serialisable) state: the
network side (:class:`kgrag.agent.kn.resources.NetworkResources`: the network store, each network's lexicon and
schema, the trained intent ranker), the triple-graph side (:class:`kgrag.agent.kg.resources.TripleResources`: the
prepared graph stores and the triple graphs) and the LLM client — each opened lazily, on first use, and shared
between threads. One :class:`Resources` per settings value (cached), so a served graph opens the store and loads
the ranker once. It serves what the steps of both kinds need (:class:`kgrag.agent.kn.needs.NetworkNeeds`,
:class:`kgrag.agent.kg.needs.TripleNeeds`).

    resources = resources_for(get_settings()); resources.ranker("medical")
"""

from __future__ import annotations

import threading
from functools import lru_cache

from kgrag.agent.kg.resources import TripleResources
from kgrag.agent.kg.triple_kg import TripleKG
from kgrag.agent.kn.intent import IntentRanker
from kgrag.agent.kn.intent_sources import IntentPlanner
from kgrag.agent.kn.resources import NetworkResources
from kgrag.config import Settings
from kgrag.data.spec import DatasetSpec
from kgrag.graph import GraphStore
from kgrag.llm.client import ChatClient
from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.network.store import NetworkStore
from kgrag.search.keywords import Lexicon

__all__ = ["Resources", "resources_for"]


class Resources:
    """Lazily opened, thread-safe shared parts of agent runs and tool calls for one :class:`Settings`: both sides
    and the LLM client, one object."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.networks = NetworkResources(settings)
        self.triples = TripleResources(settings)
        self._lock = threading.Lock()
        self._llm: ChatClient | None = None

    @property
    def store(self) -> NetworkStore:
        """The knowledge-network store on ``settings.db_url`` (what the HTTP routes query)."""
        return self.networks.store

    def network(self, kn_id: str) -> KnowledgeNetwork:
        """The network's schema (raises :class:`kgrag.errors.NetworkNotFound`)."""
        return self.networks.network(kn_id)

    def lexicon(self, kn_id: str) -> Lexicon:
        return self.networks.lexicon(kn_id)

    def ranker(self, kn_id: str) -> IntentRanker | None:
        """The latest trained intent ranker that fits this network, or None
        (:meth:`kgrag.agent.kn.resources.NetworkResources.ranker`)."""
        return self.networks.ranker(kn_id)

    def intent_planner(self, kn_id: str) -> IntentPlanner:
        """The schema-intent planner ``Settings.agent_intent`` picks for this network."""
        return self.networks.intent_planner(kn_id)

    def topic_prior(self, kn_id: str) -> dict[str, int]:
        """How often each stored name was the topic of the labelled ranker's training questions (else empty)."""
        return self.networks.topic_prior(kn_id)

    def kg_store(self, kg: str) -> tuple[DatasetSpec, GraphStore]:
        """The spec and prepared store of the KG named ``kg`` (``ValueError`` naming the fix when it is unknown or
        not prepared)."""
        return self.triples.kg_store(kg)

    def triple_kg(self, kg: str) -> TripleKG:
        """The triple graph ``kg`` (store, linker, reasoner, sessions), opened once."""
        return self.triples.triple_kg(kg)

    def llm(self) -> ChatClient | None:
        """The OpenAI-compatible chat client when ``KGRAG_LLM_BASE_URL`` is set (created once), else None."""
        if not self.settings.llm_enabled:
            return None
        with self._lock:
            if self._llm is None:
                self._llm = ChatClient.from_settings(self.settings)
            return self._llm

    def close(self) -> None:
        self.networks.close()
        with self._lock:
            if self._llm is not None:
                self._llm.close()
            self._llm = None
        self.triples.close()


@lru_cache(maxsize=8)
def _cached(settings_json: str) -> Resources:
    return Resources(Settings.model_validate_json(settings_json))


def resources_for(settings: Settings) -> Resources:
    """The shared :class:`Resources` of ``settings`` (one per distinct settings value)."""
    return _cached(settings.model_dump_json())
