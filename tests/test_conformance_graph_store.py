"""The SPARQL graph store contract (:mod:`harness.conformance.graph_store`) on every backend: the embedded pyoxigraph
store, a real ``oxigraph serve`` and a real Virtuoso, both through :class:`~kgrag.graph.remote_store.RemoteStore`.
One class per backend, each providing the suite's ``backend`` fixture; Virtuoso is the session's server
(``fixtures/virtuoso_server``: this file runs on its xdist worker), which fails the test when it is not installed.

    .venv/bin/python -m pytest -q tests/test_conformance_graph_store.py
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.virtuoso_server import DEMO_GRAPH

from harness.conformance.graph_store import (
    CONFORMANCE_GRAPH,
    GraphBackend,
    GraphStoreContract,
    write_conformance_ntriples,
)
from harness.servers.oxigraph_server import OxigraphServer, load_into, serve_read_only
from harness.servers.virtuoso import VirtuosoServer, bulk_load
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.graph.remote_store import RemoteStore


@pytest.fixture(scope="session")
def conformance_ntriples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The conformance graph's N-Triples, alone in its folder (Virtuoso's bulk loader takes a folder)."""
    return write_conformance_ntriples(tmp_path_factory.mktemp("conformance-graph"))


class TestEmbeddedGraphStore(GraphStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls, conformance_ntriples: Path, demo_ntriples: tuple[Path, object],
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphBackend]:
        folder = tmp_path_factory.mktemp("embedded-stores")
        build_store(conformance_ntriples, folder / "conformance")
        build_store(demo_ntriples[0], folder / "demo")
        conformance = OxigraphStore(folder / "conformance", read_only=True)
        demo = OxigraphStore(folder / "demo", read_only=True)
        yield GraphBackend("embedded", conformance, demo)
        conformance.close()
        demo.close()


class TestServedGraphStore(GraphStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls, conformance_ntriples: Path, oxigraph_server: OxigraphServer,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphBackend]:
        location = tmp_path_factory.mktemp("conformance-served") / "store"
        load_into(location, conformance_ntriples)
        server = serve_read_only(location)
        try:
            yield GraphBackend("oxigraph serve", RemoteStore(server.url, timeout=30),
                               RemoteStore(oxigraph_server.url, timeout=30))
        finally:
            server.stop()


class TestVirtuosoGraphStore(GraphStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls, conformance_ntriples: Path, virtuoso: VirtuosoServer) -> GraphBackend:
        bulk_load(virtuoso, conformance_ntriples.parent, graph=CONFORMANCE_GRAPH, pattern=conformance_ntriples.name)
        return GraphBackend("virtuoso", RemoteStore(virtuoso.url, timeout=30, graph=CONFORMANCE_GRAPH),
                            RemoteStore(virtuoso.url, timeout=30, graph=DEMO_GRAPH))
