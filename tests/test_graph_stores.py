"""What is particular to each SPARQL store: the embedded store's build (every triple, idempotent) and the remote
store's transport (retries, timeouts, refused endpoints). The contract both share — rows, terms, query shapes,
errors, the demo KG against its CSR graph — runs on every backend in tests/test_conformance_graph_store.py."""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from harness.servers.ports import free_port
from kgrag.errors import SparqlError
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.graph.remote_store import RemoteStore


@pytest.fixture(scope="module")
def embedded(demo_ntriples, tmp_path_factory):
    path, graph = demo_ntriples
    target = tmp_path_factory.mktemp("embedded") / "oxigraph"
    count = build_store(path, target)
    store = OxigraphStore(target, read_only=True)
    yield store, graph, count
    store.close()


def test_embedded_store_holds_every_triple(embedded, demo_ntriples):
    store, graph, count = embedded
    path, _ = demo_ntriples
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert count == lines == store.count_triples()
    assert count >= graph.num_triples


def test_build_store_is_idempotent(demo_ntriples, tmp_path):
    path, _ = demo_ntriples
    first = build_store(path, tmp_path / "s")
    second = build_store(path, tmp_path / "s")
    assert first == second
    assert OxigraphStore(tmp_path / "s", read_only=True).count_triples() == first


def test_remote_connection_refused_retries_then_fails():
    remote = RemoteStore(f"http://127.0.0.1:{free_port()}/query", timeout=2, retries=2, backoff=0.01)
    start = time.monotonic()
    with pytest.raises(SparqlError, match="after 3 attempts"):
        remote.select("SELECT * WHERE { ?s ?p ?o } LIMIT 1")
    assert time.monotonic() - start < 5


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server naming
        time.sleep(1.0)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_remote_timeout_is_clear():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        remote = RemoteStore(f"http://127.0.0.1:{server.server_address[1]}/query", timeout=0.2, retries=3)
        with pytest.raises(SparqlError, match="timed out after 0.2s"):
            remote.select("SELECT * WHERE { ?s ?p ?o }")
    finally:
        server.shutdown()


def test_remote_rejects_non_http_endpoint():
    with pytest.raises(SparqlError, match="KGRAG_SPARQL_ENDPOINT"):
        RemoteStore("file:///etc/passwd")
