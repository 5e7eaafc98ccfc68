"""What agent runs, the MCP tools and the in-process callers share, held outside the (serialisable) state: the
network store, each network's lexicon and schema, the trained intent ranker, the LLM client, the prepared graph
stores and the triple graphs (:mod:`kgrag.agent.kg.triple_kg`) — each opened lazily, on first use, and shared
between threads. One :class:`Resources` per settings value (cached), so a served graph opens the store and loads
the ranker once.

    resources = resources_for(get_settings()); resources.ranker("medical")
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache

from kgrag.agent.kg.triple_kg import TripleKG
from kgrag.agent.kn.intent import IntentRanker, load_latest_intent
from kgrag.agent.kn.intent_sources import IntentPlanner, choose_planner
from kgrag.agent.kn.planner import ranker_fits
from kgrag.agent.kn.schema_candidates import network_profile
from kgrag.agent.kn.self_ranker import load_latest_self, self_pointer
from kgrag.agent.kn.zero_shot import ZeroShotRanker
from kgrag.config import Settings
from kgrag.data.registry import dataset_spec
from kgrag.errors import KgragError
from kgrag.graph import GraphStore
from kgrag.llm.client import ChatClient
from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.network.store import NetworkStore
from kgrag.prep.steps import open_prepared_stores
from kgrag.search.contextual import lexicon_for
from kgrag.search.keywords import Lexicon

log = logging.getLogger(__name__)

__all__ = ["Resources", "resources_for"]


class Resources:
    """Lazily opened, thread-safe shared parts of agent runs and tool calls for one :class:`Settings`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._store: NetworkStore | None = None
        self._rankers: dict[str, IntentRanker | None] = {}
        self._planners: dict[str, tuple[str, IntentPlanner]] = {}  # kn_id -> (network version, planner)
        self._llm: ChatClient | None = None
        self._graph_stores: dict[str, GraphStore] | None = None
        self._kgs: dict[str, TripleKG] = {}
        self._kg_locks: dict[str, threading.Lock] = {}

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
        (so a ranker trained on one network is never used on another), or None."""
        with self._lock:
            if kn_id in self._rankers:
                return self._rankers[kn_id]
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

        def zero_shot(learned_ranker: object | None) -> ZeroShotRanker:
            return ZeroShotRanker(network_profile(store, kn_id), store.embedder_for(kn_id), learned_ranker)

        planner = choose_planner(mode, labelled, learned, zero_shot)
        with self._lock:
            self._planners[kn_id] = (version, planner)
        return planner

    def topic_prior(self, kn_id: str) -> dict[str, int]:
        """How often each stored name was the topic of the labelled ranker's training questions (else empty)."""
        return self.intent_planner(kn_id).topic_prior

    def graph_store(self, kg: str) -> GraphStore:
        """The prepared store of ``kg`` (``ValueError`` naming the fix when it is unknown or not prepared)."""
        try:
            dataset_spec(kg, self.settings)
        except KgragError as exc:
            raise ValueError(str(exc)) from None
        with self._lock:
            if self._graph_stores is None:
                self._graph_stores = open_prepared_stores(self.settings)
            store = self._graph_stores.get(kg)
        if store is None:
            raise ValueError(f"kg {kg!r} is not prepared here; run `kgrag prepare --dataset {kg}`")
        return store

    def triple_kg(self, kg: str) -> TripleKG:
        """The triple graph ``kg`` (store, linker, reasoner, sessions), opened once; raises
        :class:`kgrag.errors.KgragError` for an unknown or unprepared one (not cached: it may be prepared later)."""
        with self._lock:
            if kg in self._kgs:
                return self._kgs[kg]
            lock = self._kg_locks.setdefault(kg, threading.Lock())
        with lock:  # loading the reasoner takes seconds: one loader per KG, others wait for it
            if kg not in self._kgs:
                self._kgs[kg] = TripleKG.open(self.settings, kg)
            return self._kgs[kg]

    def llm(self) -> ChatClient | None:
        """The OpenAI-compatible chat client when ``KGRAG_LLM_BASE_URL`` is set (created once), else None."""
        if not self.settings.llm_enabled:
            return None
        with self._lock:
            if self._llm is None:
                self._llm = ChatClient.from_settings(self.settings)
            return self._llm

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
            if self._llm is not None:
                self._llm.close()
            for graph_store in (self._graph_stores or {}).values():
                graph_store.close()
            for kg in self._kgs.values():
                kg.close()
            self._store, self._llm, self._graph_stores = None, None, None
            self._kgs.clear()
            self._rankers.clear()
            self._planners.clear()


@lru_cache(maxsize=8)
def _cached(settings_json: str) -> Resources:
    return Resources(Settings.model_validate_json(settings_json))


def resources_for(settings: Settings) -> Resources:
    """The shared :class:`Resources` of ``settings`` (one per distinct settings value)."""
    return _cached(settings.model_dump_json())


