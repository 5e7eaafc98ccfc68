"""A real Virtuoso 7 as kgrag's remote SPARQL store: the bulk loader, named graphs, result terms and limits.

The session's Virtuoso (``fixtures/virtuoso_server``) holds the demo KG and MetaQA in two named graphs, loaded
with :func:`harness.servers.virtuoso.bulk_load`; :class:`RemoteStore` queries one of them through
``default-graph-uri``. Expectations are the embedded store's: same counts, same rows, same terms. The store
contract (rows, terms, query shapes, errors, long IRIs, demo neighbourhoods) runs on it with the other backends in
tests/test_conformance_graph_store.py; the KG tools and the get_triples injection suite in
tests/test_tools_metaqa.py and tests/test_tools_injection.py.

Run: ``.venv/bin/python -m pytest tests/test_graph_virtuoso.py -q``
"""

from __future__ import annotations

import pytest
from fixtures.virtuoso_server import DEMO_GRAPH, METAQA_GRAPH

from harness.servers.virtuoso import bulk_load, start_virtuoso, virtuoso_ini
from kgrag.config import get_settings
from kgrag.data.metaqa import METAQA_NS
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.errors import SparqlError
from kgrag.graph import RemoteStore
from kgrag.graph.iri import NAME_PREDICATE, VALUE_PREDICATE
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.graph.sparql import relation_term
from kgrag.graph.versions.stores import open_store


@pytest.fixture(scope="module")
def demo_embedded(demo_ntriples, tmp_path_factory):
    path, graph = demo_ntriples
    target = tmp_path_factory.mktemp("virtuoso-cmp") / "oxigraph"
    build_store(path, target)
    store = OxigraphStore(target, read_only=True)
    yield store, graph
    store.close()


def test_ini_binds_loopback_and_allows_the_load_dirs(tmp_path):
    text = virtuoso_ini(tmp_path, 1234, 5678, dirs_allowed=[tmp_path / "load"])
    assert "ServerPort               = 127.0.0.1:1234" in text
    assert "ServerPort                  = 127.0.0.1:5678" in text
    assert f"DirsAllowed              = ., {tmp_path.resolve()}, {(tmp_path / 'load').resolve()}" in text
    assert "[Plugins]" not in text and "ResultSetMaxRows           = 1000000" in text


def test_bulk_load_holds_every_triple(virtuoso, virtuoso_metaqa, metaqa_prepared, demo_ntriples, demo_embedded):
    path, _ = demo_ntriples
    embedded, _ = demo_embedded
    demo = RemoteStore(virtuoso.url, timeout=30, graph=DEMO_GRAPH)
    assert demo.count_triples() == embedded.count_triples() == len(path.read_text(encoding="utf-8").splitlines())
    assert virtuoso_metaqa.triples == metaqa_prepared.graph_step["rdf_triples"] > 170_000
    assert virtuoso_metaqa.files == 1 and virtuoso_metaqa.triples_per_s > 0
    metaqa = RemoteStore(virtuoso.url, timeout=30, graph=METAQA_GRAPH)
    assert metaqa.count_triples() == virtuoso_metaqa.triples
    # without a graph, Virtuoso's default graph is every graph (its own system graphs too)
    assert RemoteStore(virtuoso.url, timeout=30).count_triples() > demo.count_triples() + metaqa.count_triples()


def test_named_graphs_are_separate(virtuoso, virtuoso_metaqa):
    demo = RemoteStore(virtuoso.url, timeout=30, graph=DEMO_GRAPH)
    metaqa = RemoteStore(virtuoso.url, timeout=30, graph=METAQA_GRAPH)
    ask_metaqa = f"ASK {{ ?s {relation_term(METAQA_NS, 'directed_by')} ?o }}"
    assert metaqa.ask(ask_metaqa) and not demo.ask(ask_metaqa)
    assert demo.location.endswith(f"(graph <{DEMO_GRAPH}>)")


def test_literal_terms_equal_the_embedded_store(virtuoso, virtuoso_metaqa, metaqa_prepared):
    """Language-tagged names and typed values (MetaQA's xsd:gYear years) come back as the same Terms."""
    embedded = OxigraphStore(metaqa_prepared.store_dir, read_only=True)
    remote = RemoteStore(virtuoso.url, timeout=60, graph=METAQA_GRAPH)
    value = relation_term(METAQA_NS, VALUE_PREDICATE)
    for pred in (VALUE_PREDICATE, NAME_PREDICATE):  # the valued entities' values, then their names
        q = f"SELECT ?s ?v WHERE {{ ?s {value} ?x . ?s {relation_term(METAQA_NS, pred)} ?v }}"
        a, b = embedded.select(q), remote.select(q)
        assert len(a) == len(b) > 100
        assert {(r["s"], r["v"]) for r in a} == {(r["s"], r["v"]) for r in b}
        kinds = {(r["v"].lang, (r["v"].datatype or "").rsplit("#", 1)[-1]) for r in b}
        assert kinds == ({(None, "gYear")} if pred == VALUE_PREDICATE else {("en", "")}), kinds  # 104 years
    embedded.close()


def test_open_store_follows_endpoint_and_graph_settings(virtuoso, virtuoso_metaqa, work_settings, monkeypatch):
    monkeypatch.setenv("KGRAG_SPARQL_ENDPOINT", virtuoso.url)
    monkeypatch.setenv("KGRAG_SPARQL_GRAPH", "http://kgrag.test/graph/{dataset}")
    get_settings.cache_clear()
    store = open_store(BUILTIN_SPECS["metaqa"])
    assert isinstance(store, RemoteStore) and store.graph == METAQA_GRAPH
    assert store.count_triples() == virtuoso_metaqa.triples
    assert open_store(BUILTIN_SPECS["demo"]).graph == DEMO_GRAPH


def test_bad_query_and_bad_graph_are_clear(virtuoso):
    remote = RemoteStore(virtuoso.url, timeout=30, graph=DEMO_GRAPH)
    with pytest.raises(SparqlError, match="(?s)rejected the query.*SP030"):
        remote.select("SELECT ?x WHERE { this is not sparql }")
    with pytest.raises(SparqlError, match="KGRAG_SPARQL_GRAPH"):
        RemoteStore(virtuoso.url, graph="http://x/> } DROP")


def test_results_cut_by_result_set_max_rows_raise(demo_ntriples, tmp_path):
    """Virtuoso silently truncates at ResultSetMaxRows (HTTP 200, a header says so): RemoteStore raises."""
    path, _ = demo_ntriples
    server = start_virtuoso(tmp_path / "db", dirs_allowed=[path.parent], result_max_rows=50)
    try:
        bulk_load(server, path.parent, graph=DEMO_GRAPH, pattern=path.name)
        remote = RemoteStore(server.url, timeout=30, graph=DEMO_GRAPH)
        assert len(remote.select("SELECT * WHERE { ?s ?p ?o } LIMIT 10")) == 10
        with pytest.raises(SparqlError, match="cut the results at 50 rows.*ResultSetMaxRows"):
            remote.select("SELECT * WHERE { ?s ?p ?o }")
    finally:
        server.stop()
    assert not server.alive()


def test_bulk_load_reports_a_broken_file(virtuoso, tmp_path_factory):
    bad_dir = tmp_path_factory.mktemp("virtuoso-bad")
    (bad_dir / "bad.nt").write_text("<http://x/a> <http://x/b> this is not n-triples .\n", encoding="utf-8")
    with pytest.raises(SparqlError, match="could not load 1 file"):
        bulk_load(virtuoso, bad_dir, graph="http://kgrag.test/graph/bad", pattern="bad.nt")
    with pytest.raises(SparqlError, match="no \\*.ttl files"):
        bulk_load(virtuoso, bad_dir, graph="http://kgrag.test/graph/bad", pattern="*.ttl")
