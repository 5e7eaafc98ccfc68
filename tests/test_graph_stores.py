"""Round trip through both stores: the embedded pyoxigraph store and a real `oxigraph serve` over HTTP."""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from kgrag.errors import SparqlError
from kgrag.graph.iri import NAME_PREDICATE
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.graph.queries import neighbourhood_query, one_hop_names
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.sparql import relation_term
from kgrag.servers.ports import free_port


@pytest.fixture(scope="module")
def embedded(demo_ntriples, tmp_path_factory):
    path, graph = demo_ntriples
    target = tmp_path_factory.mktemp("embedded") / "oxigraph"
    count = build_store(path, target)
    store = OxigraphStore(target, read_only=True)
    yield store, graph, count
    store.close()


def _edge_set(rows, base):
    return sorted((r["s"].value.removeprefix(base), r["p"].value.removeprefix(base), r["o"].value.removeprefix(base)) for r in rows)


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


def test_csr_neighbourhood_equals_sparql_on_both_backends(embedded, oxigraph_server):
    store, graph, _ = embedded
    remote = RemoteStore(oxigraph_server.url, timeout=10)
    base = graph.iri_base
    checked = 0
    for idx in range(0, graph.num_entities, max(1, graph.num_entities // 25)):
        expected = sorted((graph.entity_ids[graph.key_index[h]], r, graph.entity_ids[graph.key_index[t]])
                          for h, r, t in graph.neighbourhood(idx))
        q = neighbourhood_query(base, graph.entity_ids[idx])
        assert _edge_set(store.select(q), base) == expected
        assert _edge_set(remote.select(q), base) == expected
        checked += 1
    assert checked >= 20


def test_names_and_literals_agree_across_backends(embedded, oxigraph_server):
    store, graph, _ = embedded
    remote = RemoteStore(oxigraph_server.url, timeout=10)
    name_p = relation_term(graph.iri_base, NAME_PREDICATE)
    q = f"SELECT ?s ?n WHERE {{ ?s {name_p} ?n }} ORDER BY ?s"
    a, b = store.select(q), remote.select(q)
    assert len(a) == sum(1 for n in graph.entity_names if n) > 0
    assert [(r["s"], r["n"]) for r in a] == [(r["s"], r["n"]) for r in b]
    assert all(r["n"].lang == "en" for r in a)
    assert store.ask("ASK { ?s ?p ?o }") and remote.ask("ASK { ?s ?p ?o }")
    assert remote.count_triples() == store.count_triples()


def test_one_hop_names_on_remote(embedded, oxigraph_server):
    store, graph, _ = embedded
    remote = RemoteStore(oxigraph_server.url, timeout=10)
    e = int(graph.head[0])
    rel = graph.relations[graph.rel[0]]
    assert one_hop_names(remote, graph.iri_base, graph.entity_ids[e], rel) == one_hop_names(
        store, graph.iri_base, graph.entity_ids[e], rel)


def test_remote_http_error_is_clear(oxigraph_server):
    remote = RemoteStore(oxigraph_server.url, timeout=10)
    with pytest.raises(SparqlError, match="rejected the query|HTTP 400"):
        remote.select("SELECT ?x WHERE { this is not sparql }")


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
