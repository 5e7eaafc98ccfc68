"""Triple graph: SPARQL stores (embedded / remote), IRI conventions, the CSR graph."""

from __future__ import annotations

from pathlib import Path

from kgrag.config import Settings, get_settings
from kgrag.data.registry import dataset_spec
from kgrag.graph.csr import CSRGraph
from kgrag.graph.kg_version import store_dir
from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.store import GraphStore, Row, Term

__all__ = ["CSRGraph", "GraphStore", "OxigraphStore", "RemoteStore", "Row", "Term", "open_store", "store_path"]


def store_path(dataset: str, settings: Settings | None = None) -> Path:
    """Directory of the embedded store of ``dataset``'s current version (``kgrag prepare`` / ``kgrag kg update``:
    :mod:`kgrag.graph.kg_version`)."""
    return store_dir((settings or get_settings()).dataset_dir(dataset))


def open_store(dataset: str, settings: Settings | None = None) -> GraphStore:
    """The dataset's store: the endpoint it was registered with (``kgrag prepare --endpoint URL``), else the
    SPARQL endpoint when ``KGRAG_SPARQL_ENDPOINT`` is set (its graph ``KGRAG_SPARQL_GRAPH``, ``{dataset}`` filled
    in), else the embedded one. An unknown dataset is a :class:`~kgrag.errors.KgragError` naming the known ones."""
    settings = settings or get_settings()
    spec = dataset_spec(dataset, settings)
    if spec.endpoint:
        return RemoteStore(spec.endpoint, timeout=settings.sparql_timeout, retries=settings.sparql_retries,
                           graph=spec.graph)
    if settings.sparql_endpoint:
        graph = settings.sparql_graph.replace("{dataset}", dataset) or None
        return RemoteStore(settings.sparql_endpoint, timeout=settings.sparql_timeout, retries=settings.sparql_retries,
                           graph=graph)
    return OxigraphStore(store_path(dataset, settings), read_only=True)
