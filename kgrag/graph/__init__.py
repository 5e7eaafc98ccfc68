"""Triple graph: SPARQL stores (embedded / remote), IRI conventions, the CSR graph. A KG's versions — its current
store (``open_store``), the version file, updates and the stores a server holds — live in
:mod:`kgrag.graph.versions`."""

from __future__ import annotations

from kgrag.graph.csr import CSRGraph
from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.store import GraphStore, Row, Term

__all__ = ["CSRGraph", "GraphStore", "OxigraphStore", "RemoteStore", "Row", "Term"]
