"""The prepared KGs' stores as a serving process holds them: each lookup checks its KG's version (one ``stat`` of
``version.json``, :func:`kgrag.graph.kg_version.version_token`) and opens the new version's store when it changed,
so a request gets the old store or the new one whole, and every request after an update gets the new one.

    stores = LiveStores(settings, ["demo", "mykg"]); stores.get("mykg").select("SELECT …")

The store a request got stays open for it: the previous store of a KG is closed only when the one after it is
replaced (two versions held at most; on Linux a removed version's files live on while open).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping

from kgrag.config import Settings
from kgrag.graph.kg_version import version_token
from kgrag.graph.store import GraphStore

__all__ = ["LiveStores"]


class LiveStores(Mapping[str, GraphStore]):
    """``{kg: store}`` that follows each KG's version (see the module docstring); thread-safe."""

    def __init__(self, settings: Settings, names: Iterable[str]) -> None:
        self.settings = settings
        self._names = list(names)
        self._lock = threading.Lock()
        self._current: dict[str, tuple[object, GraphStore]] = {}
        self._previous: dict[str, GraphStore] = {}
        for name in self._names:
            self._open(name)

    def _open(self, name: str) -> GraphStore:
        from kgrag.graph import open_store

        token = version_token(self.settings.dataset_dir(name))
        store = open_store(name, self.settings)
        old = self._current.get(name)
        self._current[name] = (token, store)
        if old is not None:
            older = self._previous.pop(name, None)
            if older is not None:
                older.close()
            self._previous[name] = old[1]
        return store

    def __getitem__(self, name: str) -> GraphStore:
        with self._lock:
            entry = self._current.get(name)
            if entry is None:
                raise KeyError(name)
            token = version_token(self.settings.dataset_dir(name))
            if token is None or token == entry[0]:
                return entry[1]
            return self._open(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def close(self) -> None:
        with self._lock:
            for _, store in self._current.values():
                store.close()
            for store in self._previous.values():
                store.close()
            self._current.clear()
            self._previous.clear()
