"""The knowledge-network side of the agent's shared resources, held outside the (serialisable) state: the network
store, each network's lexicon and schema, the trained intent ranker and the schema-intent planner — each opened
lazily, on first use, and shared between threads. :class:`kgrag.agent.resources.Resources` holds one beside the
triple-graph side (:mod:`kgrag.agent.kg.resources`); the steps see it through
:class:`kgrag.agent.kn.needs.NetworkNeeds`.

    NetworkResources(get_settings()).intent_planner("medical").rank("百日咳有哪些症状", "百日咳", ["Disease"])
"""

from __future__ import annotations

import logging
import threading

from kgrag.agent.kn.intent import IntentRanker, load_latest_intent
from kgrag.agent.kn.intent_sources import IntentPlanner, choose_planner
from kgrag.agent.kn.planner import ranker_fits
from kgrag.agent.kn.schema_candidates import network_profile
from kgrag.agent.kn.self_ranker import load_latest_self, self_pointer
from kgrag.agent.kn.zero_shot import ZeroShotSchemaRanker
from kgrag.config import Settings
from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.network.store import NetworkStore
from kgrag.search.contextual import lexicon_for
from kgrag.search.keywords import Lexicon

log = logging.getLogger(__name__)

__all__ = ["NetworkResources"]


class NetworkResources:
    """Lazily opened, thread-safe network store, intent rankers and planners for one :class:`Settings`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._store: NetworkStore | None = None
        self._rankers: dict[str, tuple[str, IntentRanker | None]] = {}  # kn_id -> (network version, ranker)
        self._planners: dict[str, tuple[str, IntentPlanner]] = {}  # kn_id -> (network version, planner)

    @property
    def store(self) -> NetworkStore:
        """The knowledge-network store on ``settings.db_url`` (what the HTTP routes query)."""
        with self._lock:
            if self._store is None:
                self._store = NetworkStore(self.settings.db_url)
            return self._store

    def network(self, kn_id: str) -> KnowledgeNetwork:
        """The network's schema (raises :class:`kgrag.errors.NetworkNotFound`)."""
        return self.store.get_network(kn_id)

    def lexicon(self, kn_id: str) -> Lexicon:
        return lexicon_for(self.store, kn_id)

    def ranker(self, kn_id: str) -> IntentRanker | None:
        """The latest trained intent ranker whose labels all name this network's relation types and properties
        (so a ranker trained on one network is never used on another), or None; checked again once the
        network's version changes (a schema change may add or drop what its labels name)."""
        version = self.store.network_version(kn_id)
        with self._lock:
            cached = self._rankers.get(kn_id)
            if cached is not None and cached[0] == version:
                return cached[1]
        try:
            ranker = load_latest_intent(self.settings)
        except Exception as exc:  # noqa: BLE001 - a broken checkpoint means "no ranker", said in the log
            log.warning("intent ranker not loaded: %s: %s", type(exc).__name__, exc)
            ranker = None
        if ranker is not None and not ranker_fits(ranker.labels, self.network(kn_id)):
            ranker = None
        with self._lock:
            self._rankers[kn_id] = (version, ranker)
        return ranker

    def intent_planner(self, kn_id: str) -> IntentPlanner:
        """The schema-intent planner ``Settings.agent_intent`` picks for this network (built once per network
        version; :mod:`kgrag.agent.kn.intent_sources`)."""
        # a new training run (its latest-pointer file rewritten) is picked up by a running process too
        pointer = self_pointer(self.settings, kn_id)
        version = f"{self.store.network_version(kn_id)}:{pointer.stat().st_mtime_ns if pointer.is_file() else 0}"
        with self._lock:
            cached = self._planners.get(kn_id)
            if cached is not None and cached[0] == version:
                return cached[1]
        mode = self.settings.agent_intent
        labelled = self.ranker(kn_id) if mode in ("auto", "labelled") else None
        learned = None
        if labelled is None and mode in ("auto", "self"):
            try:
                learned = load_latest_self(self.settings, kn_id)
            except Exception as exc:  # noqa: BLE001 - a broken checkpoint means "not trained", said in the log
                log.warning("self-supervised ranker not loaded: %s: %s", type(exc).__name__, exc)
        store = self.store

        def zero_shot(learned_ranker: object | None) -> ZeroShotSchemaRanker:
            return ZeroShotSchemaRanker(network_profile(store, kn_id), store.embedder_for(kn_id), learned_ranker)

        planner = choose_planner(mode, labelled, learned, zero_shot)
        with self._lock:
            self._planners[kn_id] = (version, planner)
        return planner

    def topic_prior(self, kn_id: str) -> dict[str, int]:
        """How often each stored name was the topic of the labelled ranker's training questions (else empty)."""
        return self.intent_planner(kn_id).topic_prior

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
            self._store = None
            self._rankers.clear()
            self._planners.clear()
