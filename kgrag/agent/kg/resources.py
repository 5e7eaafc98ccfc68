"""The triple-graph side of the agent's shared resources, held outside the (serialisable) state: the prepared graph
stores and the triple graphs (:mod:`kgrag.agent.kg.triple_kg`: store, linker, reasoner, sessions) — each opened
lazily, on first use, and shared between threads. :class:`kgrag.agent.resources.Resources` holds one beside the
network side (:mod:`kgrag.agent.kn.resources`); the steps see it through :class:`kgrag.agent.kg.needs.TripleNeeds`.

    TripleResources(get_settings()).triple_kg("demo").link("who directed Carnival Lights?")
"""

from __future__ import annotations

import threading

from kgrag.agent.kg.triple_kg import TripleKG
from kgrag.config import Settings
from kgrag.data.registry import dataset_spec
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError
from kgrag.graph import GraphStore
from kgrag.graph.versions.version_file import version_token
from kgrag.prep.steps import open_prepared_stores
from kgrag.versioned import VersionedCache

__all__ = ["TripleResources"]


class TripleResources:
    """Lazily opened, thread-safe prepared graph stores and triple graphs for one :class:`Settings`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._graph_stores: dict[str, GraphStore] | None = None
        #: each KG's triple graph, opened once per version (loading the reasoner takes seconds: one loader per KG)
        self._kgs: VersionedCache[str, TripleKG] = VersionedCache(
            lambda kg: version_token(settings.dataset_dir(kg)), lambda kg: TripleKG.open(settings, kg),
            close=lambda opened: opened.close())

    def kg_store(self, kg: str) -> tuple[DatasetSpec, GraphStore]:
        """The spec and prepared store of the KG named ``kg`` (the name resolved here, once: a tool call's edge);
        ``ValueError`` naming the fix when it is unknown or not prepared."""
        try:
            spec = dataset_spec(kg, self.settings)
        except KgragError as exc:
            raise ValueError(str(exc)) from None
        stores = self._graph_stores
        if stores is None:
            with self._lock:  # opened once; a lookup after that takes no lock (LiveStores is thread-safe)
                if self._graph_stores is None:
                    self._graph_stores = open_prepared_stores(self.settings)
                stores = self._graph_stores
        store = stores.get(kg)
        if store is None:
            raise ValueError(f"kg {kg!r} is not prepared here; run `kgrag prepare --dataset {kg}`")
        return spec, store

    def triple_kg(self, kg: str) -> TripleKG:
        """The triple graph ``kg`` (store, linker, reasoner, sessions), opened once per version of the KG (one
        ``stat`` per call: after ``kgrag kg update`` or a re-prepare the next call opens the new version whole;
        calls in flight keep the one they got; :class:`kgrag.versioned.VersionedCache`); raises
        :class:`kgrag.errors.KgragError` for an unknown or unprepared one (not cached: it may be prepared later)."""
        return self._kgs.get(kg)

    def close(self) -> None:
        with self._lock:
            for graph_store in (self._graph_stores or {}).values():
                graph_store.close()
            self._graph_stores = None
        self._kgs.close()
