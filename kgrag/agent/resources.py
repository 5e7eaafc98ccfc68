"""What agent runs share, held outside the (serialisable) state: the network store, each network's lexicon and
schema, the trained intent ranker, the LLM client and the triple graphs (:mod:`kgrag.agent.triple_kg`). One :class:`Resources` per settings (cached), so a served
graph opens the store and loads the ranker once.

    resources = resources_for(get_settings()); resources.ranker("medical")
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from kgrag.config import Settings

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.agent.triple_kg import TripleKG
    from kgrag.llm.client import ChatClient
    from kgrag.network.model import KnowledgeNetwork
    from kgrag.network.store import NetworkStore
    from kgrag.search.keywords import Lexicon

log = logging.getLogger(__name__)

__all__ = ["Resources", "resources_for"]


class Resources:
    """Lazily opened, thread-safe shared parts of agent runs for one :class:`Settings`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._store: NetworkStore | None = None
        self._rankers: dict[str, Any] = {}
        self._llm: ChatClient | None = None
        self._kgs: dict[str, TripleKG] = {}
        self._kg_locks: dict[str, threading.Lock] = {}

    @property
    def store(self) -> NetworkStore:
        with self._lock:
            if self._store is None:
                from kgrag.network.store import NetworkStore

                self._store = NetworkStore(self.settings.db_url)
            return self._store

    def network(self, kn_id: str) -> KnowledgeNetwork:
        """The network's schema (raises :class:`kgrag.network.service.NetworkNotFound`)."""
        return self.store.get_network(kn_id)

    def lexicon(self, kn_id: str) -> Lexicon:
        from kgrag.search.contextual import lexicon_for

        return lexicon_for(self.store, kn_id)

    def ranker(self, kn_id: str) -> Any | None:
        """The latest trained intent ranker whose labels all name this network's relation types and properties
        (so a ranker trained on one network is never used on another), or None."""
        with self._lock:
            if kn_id in self._rankers:
                return self._rankers[kn_id]
        from kgrag.agent.intent_train import load_latest_intent
        from kgrag.agent.planner import ranker_fits

        try:
            ranker = load_latest_intent(self.settings)
        except Exception as exc:  # noqa: BLE001 - a broken checkpoint means "no ranker", said in the log
            log.warning("intent ranker not loaded: %s: %s", type(exc).__name__, exc)
            ranker = None
        if ranker is not None and not ranker_fits(ranker.labels, self.network(kn_id)):
            ranker = None
        with self._lock:
            self._rankers[kn_id] = ranker
        return ranker

    def topic_prior(self, kn_id: str) -> dict[str, int]:
        """How often each stored name was the topic of the ranker's training questions (empty without one)."""
        ranker = self.ranker(kn_id)
        return dict(getattr(ranker, "topic_prior", None) or {})

    def triple_kg(self, kg: str) -> TripleKG:
        """The triple graph ``kg`` (store, linker, reasoner, sessions), opened once; raises
        :class:`kgrag.errors.KgragError` for an unknown or unprepared one (not cached: it may be prepared later)."""
        with self._lock:
            if kg in self._kgs:
                return self._kgs[kg]
            lock = self._kg_locks.setdefault(kg, threading.Lock())
        with lock:  # loading the reasoner takes seconds: one loader per KG, others wait for it
            if kg not in self._kgs:
                from kgrag.agent.triple_kg import TripleKG

                self._kgs[kg] = TripleKG.open(self.settings, kg)
            return self._kgs[kg]

    def llm(self) -> ChatClient | None:
        """The OpenAI-compatible chat client when ``KGRAG_LLM_BASE_URL`` is set, else None."""
        if not self.settings.llm_enabled:
            return None
        with self._lock:
            if self._llm is None:
                from kgrag.llm.client import ChatClient

                self._llm = ChatClient.from_settings(self.settings)
            return self._llm

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            if self._llm is not None:
                self._llm.close()
                self._llm = None
            for kg in self._kgs.values():
                kg.close()
            self._kgs.clear()


@lru_cache(maxsize=8)
def _cached(settings_json: str) -> Resources:
    return Resources(Settings.model_validate_json(settings_json))


def resources_for(settings: Settings) -> Resources:
    """The shared :class:`Resources` of ``settings`` (one per distinct settings value)."""
    return _cached(settings.model_dump_json())
