"""A prepared KG's store at its current version: :func:`open_store` opens it once, :class:`LiveStores` holds one per
KG for a serving process and follows each KG's version (one ``stat`` of ``version.json`` per lookup,
:func:`kgrag.graph.versions.version_file.version_token`), opening the new version's store when it changed — so a
request gets the old store or the new one whole, and every request after an update gets the new one.

    stores = LiveStores(settings, ["demo", "mykg"]); stores["mykg"].select("SELECT …")

The store a request got stays open for it: the previous store of a KG is closed only when the one after it is
replaced (two versions held at most; on Linux a removed version's files live on while open); while a KG's files
are gone (a re-import swapping its folder) the held store keeps answering (:class:`kgrag.versioned.VersionedCache`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from kgrag.config import Settings, get_settings
from kgrag.data.registry import dataset_spec
from kgrag.data.spec import DatasetSpec
from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.store import GraphStore
from kgrag.graph.versions.version_file import store_dir, version_token
from kgrag.versioned import VersionedCache

__all__ = ["LiveStores", "open_store", "store_path"]


def store_path(dataset: str, settings: Settings | None = None) -> Path:
    """Directory of the embedded store of ``dataset``'s current version (``kgrag prepare`` / ``kgrag kg update``:
    :mod:`kgrag.graph.versions.version_file`)."""
    return store_dir((settings or get_settings()).dataset_dir(dataset))


def open_store(spec: DatasetSpec, settings: Settings | None = None) -> GraphStore:
    """The KG's store: the endpoint it was registered with (``kgrag prepare --endpoint URL``), else the
    SPARQL endpoint when ``KGRAG_SPARQL_ENDPOINT`` is set (its graph ``KGRAG_SPARQL_GRAPH``, ``{dataset}`` filled
    in), else the embedded one of its current version. The spec comes from the caller's edge
    (:func:`kgrag.data.registry.dataset_spec`: a name is resolved once, where it enters)."""
    settings = settings or get_settings()
    dataset = spec.name
    if spec.endpoint:
        return RemoteStore(spec.endpoint, timeout=settings.sparql_timeout, retries=settings.sparql_retries,
                           graph=spec.graph)
    if settings.sparql_endpoint:
        graph = settings.sparql_graph.replace("{dataset}", dataset) or None
        return RemoteStore(settings.sparql_endpoint, timeout=settings.sparql_timeout, retries=settings.sparql_retries,
                           graph=graph)
    return OxigraphStore(store_path(dataset, settings), read_only=True)


class LiveStores(Mapping[str, GraphStore]):
    """``{kg: store}`` that follows each KG's version (see the module docstring); thread-safe. Every store is
    opened when the map is made; a name it was not made with is a ``KeyError``, and so is every name after
    :meth:`close`."""

    def __init__(self, settings: Settings, names: Iterable[str]) -> None:
        self.settings = settings
        self._names = list(names)
        self._open = set(self._names)
        self._stores: VersionedCache[str, GraphStore] = VersionedCache(
            lambda name: version_token(settings.dataset_dir(name)),
            lambda name: open_store(dataset_spec(name, settings), settings),  # a name resolved once per version
            close=lambda store: store.close(), keep_when_gone=True)
        for name in self._names:
            self._stores.get(name)

    def __getitem__(self, name: str) -> GraphStore:
        if name not in self._open:
            raise KeyError(name)
        return self._stores.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def close(self) -> None:
        self._open = set()
        self._stores.close()
