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
from kgrag.errors import KgragError
from kgrag.graph import GraphStore
from kgrag.graph.kg_version import version_token
from kgrag.prep.steps import open_prepared_stores

__all__ = ["TripleResources"]


class TripleResources:
    """Lazily opened, thread-safe prepared graph stores and triple graphs for one :class:`Settings`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._graph_stores: dict[str, GraphStore] | None = None
        self._kgs: dict[str, TripleKG] = {}
        self._kg_locks: dict[str, threading.Lock] = {}
        self._tokens: dict[str, object] = {}  # the version each held KG was opened at
        self._retired: dict[str, TripleKG] = {}  # the previous version of each KG

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
        """The triple graph ``kg`` (store, linker, reasoner, sessions), opened once per version of the KG (one
        ``stat`` per call: after ``kgrag kg update`` or a re-prepare the next call opens the new version whole;
        calls in flight keep the one they got); raises :class:`kgrag.errors.KgragError` for an unknown or
        unprepared one (not cached: it may be prepared later)."""
        token = version_token(self.settings.dataset_dir(kg))
        with self._lock:
            held = self._kgs.get(kg)
            if held is not None and self._tokens.get(kg) == token:
                return held
            lock = self._kg_locks.setdefault(kg, threading.Lock())
        with lock:  # loading the reasoner takes seconds: one loader per KG, others wait for it
            with self._lock:
                held = self._kgs.get(kg)
                if held is not None and self._tokens.get(kg) == token:
                    return held
            opened = TripleKG.open(self.settings, kg)
            for _ in range(3):  # its store and graph are read apart: reopen when a version landed between them
                now = version_token(self.settings.dataset_dir(kg))
                if now == token:
                    break
                opened.close()
                token, opened = now, TripleKG.open(self.settings, kg)
            with self._lock:
                self._kgs[kg], self._tokens[kg] = opened, token
                retired = self._retired.pop(kg, None)
                if held is not None:
                    self._retired[kg] = held  # still answering the calls that got it; closed one version later
            if retired is not None:
                retired.close()
            return opened

    def close(self) -> None:
        with self._lock:
            for graph_store in (self._graph_stores or {}).values():
                graph_store.close()
            for kg in [*self._kgs.values(), *self._retired.values()]:
                kg.close()
            self._graph_stores = None
            self._kgs.clear()
            self._retired.clear()
            self._tokens.clear()
