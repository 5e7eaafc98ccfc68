"""A question's neighbourhood from a KG on a SPARQL endpoint (:mod:`kgrag.hrag.online.sparql_neighbourhood`), against the
real ``oxigraph serve`` and Virtuoso fixtures holding the demo KG: without caps the expansion equals the k-hop
triples of the demo graph built locally; the caps bound it and say so; CVT hops reach a mediator's far side;
literals become nodes as the import makes them; a slow or absent endpoint is a one-line SparqlError.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/test_sparql_neighbourhood.py -q -p no:xdist``
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fixtures.virtuoso_server import DEMO_GRAPH

from harness.servers.oxigraph_server import load_into, serve_read_only
from harness.servers.ports import free_port
from kgrag.data.freebase import FREEBASE_NS
from kgrag.errors import SparqlError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.iri import slug_id
from kgrag.graph.remote_store import RemoteStore
from kgrag.hrag.online.sparql_neighbourhood import ExpansionLimits, Neighbourhood, expand_neighbourhood

NS = FREEBASE_NS
FILM = "m.0yr8s"  # Carnival Lights, the topic of demo question 1
Triple = tuple[str, str, str]


@pytest.fixture(params=["oxigraph", "virtuoso"])
def store(request: pytest.FixtureRequest) -> Iterator[RemoteStore]:
    """The demo KG on a real endpoint: ``oxigraph serve-read-only``, or Virtuoso's named graph."""
    if request.param == "oxigraph":
        yield RemoteStore(request.getfixturevalue("oxigraph_server").url, timeout=30, retries=0)
    else:
        yield RemoteStore(request.getfixturevalue("virtuoso").url, timeout=30, retries=0, graph=DEMO_GRAPH)


@pytest.fixture(scope="module")
def demo(demo_ntriples) -> CSRGraph:
    """The demo graph built locally (the one the servers were loaded from)."""
    return demo_ntriples[1]


# ---------------------------------------------------------------------------------------------- helpers
def _edges(g: CSRGraph, node: int) -> list[int]:
    return [*g.out_edges(node).tolist(), *g.in_edges(node).tolist()]


def _triple(g: CSRGraph, e: int) -> Triple:
    return g.entity_ids[int(g.head[e])], g.relations[int(g.rel[e])], g.entity_ids[int(g.tail[e])]


def local_khop(g: CSRGraph, topics: list[str], hops: int, cvt_hops: int = 0) -> set[Triple]:
    """The reference: every triple incident to a node within ``hops - 1`` of a topic (undirected), plus the edges of
    unnamed nodes first reached at the last hop (and of the unnamed nodes those reach, ``cvt_hops`` times)."""
    rows = [g.id_index[t] for t in topics]
    seen, frontier, found = set(rows), rows, set()

    def expand(nodes: list[int]) -> list[int]:
        new = []
        for node in nodes:
            for e in _edges(g, node):
                found.add(_triple(g, e))
                for other in (int(g.head[e]), int(g.tail[e])):
                    if other not in seen:
                        seen.add(other)
                        new.append(other)
        return new

    for _ in range(hops):
        frontier = expand(frontier)
    for _ in range(cvt_hops):
        frontier = expand([n for n in frontier if not g.entity_names[n]])
    return found


def triples(nbh: Neighbourhood) -> set[Triple]:
    g = nbh.graph
    return {_triple(g, e) for e in range(g.num_triples)}


def _hop_stats(nbh: Neighbourhood, kind: str = "hop") -> list[dict]:
    return [h for h in nbh.stats["hops"] if h["kind"] == kind]


# ---------------------------------------------------------------------------------------------- equality
@pytest.mark.parametrize(("hops", "cvt_hops"), [(1, 0), (2, 0), (2, 1), (3, 1)])
def test_expansion_equals_the_local_k_hop_triples(store, demo, hops, cvt_hops) -> None:
    nbh = expand_neighbourhood(store, [FILM], NS, ExpansionLimits(hops=hops, cvt_hops=cvt_hops), name="q1")
    g = nbh.graph
    assert triples(nbh) == local_khop(demo, [FILM], hops, cvt_hops)
    assert g.name == "q1" and g.iri_base == NS and g.meta["id_style"] == "iri"
    assert g.entity_keys == sorted(g.entity_keys) and g.relations == sorted(g.relations)
    assert g.entity_keys == [NS + i for i in g.entity_ids]  # full IRIs; ids are the demo's MIDs
    assert [g.entity_ids[r] for r in nbh.topics] == [FILM]
    assert g.entity_names == [demo.entity_names[demo.id_index[i]] for i in g.entity_ids]  # "" for CVTs
    assert "type.object.name" not in g.relations and "kgrag.value" not in g.relations
    assert not nbh.stats["truncated"] and nbh.stats["triples"] == g.num_triples
    assert [h["hop"] for h in nbh.stats["hops"]][:hops] == list(range(1, hops + 1))
    assert all(h["fallbacks"] == 0 and not h["capped_nodes"] for h in nbh.stats["hops"])
    assert nbh.stats["queries"] == sum(h["queries"] for h in nbh.stats["hops"]) + nbh.stats["names"]["queries"]


def test_limits_are_bounded_and_closed() -> None:
    from pydantic import ValidationError

    for bad in ({"hops": 0}, {"hops": 5}, {"per_hop": 0}, {"per_node": 0}, {"cvt_hops": 3}, {"batch": 0},
                {"timeout_s": 0}, {"depth": 2}):
        with pytest.raises(ValidationError):
            ExpansionLimits(**bad)
    assert ExpansionLimits().model_dump() == {"hops": 3, "per_hop": 3000, "per_node": 200, "cvt_hops": 1,
                                              "batch": 64, "timeout_s": 20.0}


def test_no_topic_is_an_empty_graph(store) -> None:
    nbh = expand_neighbourhood(store, [], NS)
    assert nbh.graph.num_entities == 0 and nbh.graph.num_triples == 0 and nbh.topics == []


def test_topics_are_iris_or_local_ids_and_several(store, demo) -> None:
    by_id = expand_neighbourhood(store, [FILM, NS + FILM, "m.0vss3"], NS, ExpansionLimits(hops=1))
    assert [by_id.graph.entity_ids[r] for r in by_id.topics] == [FILM, "m.0vss3"]
    assert triples(by_id) == local_khop(demo, [FILM, "m.0vss3"], 1, 1)
    for bad in ("Carnival Lights", "m.0yr8s> } DROP ALL {", "http://x/a b"):
        with pytest.raises(ValueError):
            expand_neighbourhood(store, [bad], NS)
    with pytest.raises(ValueError):
        expand_neighbourhood(store, [FILM], "http://x/ns>")


# ---------------------------------------------------------------------------------------------- caps
def test_per_node_caps_each_direction_and_is_reported(store, demo) -> None:
    film = demo.id_index[FILM]
    n_out, n_in = len(demo.out_edges(film)), len(demo.in_edges(film))
    cap = min(n_out, n_in) - 1
    assert cap >= 1
    nbh = expand_neighbourhood(store, [FILM], NS, ExpansionLimits(hops=1, cvt_hops=0, per_node=cap))
    g, row = nbh.graph, nbh.topics[0]
    assert len(g.out_edges(row)) == cap and len(g.in_edges(row)) == cap
    assert triples(nbh) <= local_khop(demo, [FILM], 1)
    hop = nbh.stats["hops"][0]
    assert hop["capped_nodes"] == 1 and hop["truncated"] and nbh.stats["truncated"] and not hop["budget_hit"]
    assert hop["fallbacks"] == 1  # the batch's edges exceeded 2 * cap: the server applied the cap
    again = expand_neighbourhood(store, [FILM], NS, ExpansionLimits(hops=1, cvt_hops=0, per_node=cap))
    assert triples(again) == triples(nbh)  # the same store gives the same graph


def test_a_cap_applied_locally_keeps_the_first_edges_by_relation_then_other_end(store, demo) -> None:
    """A batch whose edges all came back is trimmed here, by (relation, other end): the same on every server."""
    film = demo.id_index[FILM]
    out = sorted((demo.relations[int(demo.rel[e])], demo.entity_ids[int(demo.tail[e])]) for e in demo.out_edges(film))
    cap = len(out) - 2
    leaves = [i for i in range(demo.num_entities) if len(_edges(demo, i)) == 1][:8]
    topics = [FILM, *(demo.entity_ids[i] for i in leaves)]
    nbh = expand_neighbourhood(store, topics, NS, ExpansionLimits(hops=1, cvt_hops=0, per_node=cap))
    hop = nbh.stats["hops"][0]
    assert hop["fallbacks"] == 0 and hop["capped_nodes"] == 1
    g = nbh.graph
    kept = sorted((g.relations[int(g.rel[e])], g.entity_ids[int(g.tail[e])]) for e in g.out_edges(nbh.topics[0]))
    assert kept == out[:cap]


def test_per_hop_budget_stops_a_hop_and_bounds_the_graph(store, demo) -> None:
    limits = ExpansionLimits(hops=3, cvt_hops=1, per_hop=7)
    nbh = expand_neighbourhood(store, [FILM], NS, limits)
    assert all(h["triples"] <= 7 for h in nbh.stats["hops"])
    assert nbh.graph.num_triples <= 7 * (limits.hops + limits.cvt_hops)
    first = nbh.stats["hops"][0]
    assert first["budget_hit"] and first["truncated"] and first["triples"] == 7 and nbh.stats["truncated"]
    assert triples(nbh) <= local_khop(demo, [FILM], 3, 1)
    assert triples(expand_neighbourhood(store, [FILM], NS, limits)) == triples(nbh)


# ---------------------------------------------------------------------------------------------- CVT hops
def _spouse_through_a_marriage(demo: CSRGraph) -> tuple[str, str, str]:
    """(person, marriage CVT, spouse) with the spouse two hops away only through the CVT."""
    rel = demo.relation_index
    for e in range(demo.num_triples):
        if int(demo.rel[e]) != rel["people.person.spouse_s"]:
            continue
        person, cvt = int(demo.head[e]), int(demo.tail[e])
        near = {int(demo.head[x]) for x in _edges(demo, person)} | {int(demo.tail[x]) for x in _edges(demo, person)}
        for x in demo.out_edges(cvt):
            spouse = int(demo.tail[x])
            if int(demo.rel[x]) == rel["people.marriage.spouse"] and spouse != person and spouse not in near:
                assert not demo.entity_names[cvt]
                return demo.entity_ids[person], demo.entity_ids[cvt], demo.entity_ids[spouse]
    raise AssertionError("the demo has no marriage CVT")


def test_cvt_hops_reach_the_far_side_of_a_mediator(store, demo) -> None:
    person, cvt, spouse = _spouse_through_a_marriage(demo)
    without = expand_neighbourhood(store, [person], NS, ExpansionLimits(hops=1, cvt_hops=0))
    assert cvt in without.graph.id_index and spouse not in without.graph.id_index
    assert without.graph.entity_names[without.graph.id_index[cvt]] == ""
    with_cvt = expand_neighbourhood(store, [person], NS, ExpansionLimits(hops=1, cvt_hops=1))
    assert (cvt, "people.marriage.spouse", spouse) in triples(with_cvt)
    assert triples(with_cvt) == local_khop(demo, [person], 1, 1)
    cvt_hop = _hop_stats(with_cvt, "cvt")[0]
    assert cvt_hop["hop"] == 2 and cvt_hop["frontier"] >= 1 and cvt_hop["triples"] >= 1


# ---------------------------------------------------------------------------------------------- literals
TINY = """\
<{ns}m.0a> <{ns}type.object.name> "Alpha"@en .
<{ns}m.0a> <{ns}type.object.name> "Alphé"@fr .
<{ns}m.0a> <{ns}people.person.date_of_birth> "1961-08-04"^^<http://www.w3.org/2001/XMLSchema#date> .
<{ns}m.0a> <{ns}common.topic.alias> "Al"@en .
<{ns}m.0a> <{ns}common.topic.alias> "Alfa"@fr .
<{ns}m.0a> <{ns}common.topic.notes> "plain \\"quoted\\" text" .
<{ns}m.0a> <{ns}kgrag.value> "7"^^<http://www.w3.org/2001/XMLSchema#integer> .
<{ns}m.0a> <{ns}people.person.spouse_s> <{ns}m.0cvt> .
<{ns}m.0cvt> <{ns}people.marriage.spouse> <{ns}m.0a> .
<{ns}m.0cvt> <{ns}people.marriage.spouse> <{ns}m.0b> .
<{ns}m.0b> <{ns}type.object.name> "Bêta"@fr .
<{ns}m.0b> <{ns}people.person.nationality> <{ns}m.0c> .
<{ns}m.0c> <{ns}type.object.name> "Gamma" .
<{ns}m.0a> <http://example.org/other/knows> <{ns}m.0d> .
<{ns}m.0a> <{ns}bad-relation> <{ns}m.0e> .
_:b1 <{ns}people.person.nationality> <{ns}m.0a> .
<{ns}m.0a> <{ns}common.topic.official_website> <http://example.com/alpha> .
<{ns}m.0a> <{ns}common.topic.official_website> <http://example.com/mirror/m.0a> .
"""


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A fresh ``oxigraph serve-read-only`` over a hand-written file with literals, a CVT and odd edges."""
    folder = tmp_path_factory.mktemp("tiny-kg")
    path = folder / "tiny.nt"
    path.write_text(TINY.format(ns=NS), encoding="utf-8")
    load_into(folder / "store", path)
    server = serve_read_only(folder / "store")
    try:
        yield server.url, path
    finally:
        server.stop()


def test_literal_objects_are_leaf_nodes_as_the_import_makes_them(tiny_server) -> None:
    from kgrag.data.triples import read_triple_files
    from kgrag.graph.imported import imported_csr

    url, path = tiny_server
    nbh = expand_neighbourhood(RemoteStore(url, retries=0), ["m.0a"], NS, ExpansionLimits(hops=1, cvt_hops=1))
    g = nbh.graph
    date = '"1961-08-04"^^<http://www.w3.org/2001/XMLSchema#date>'
    # an alias is an other name of its subject (as the import reads it), not an edge to a literal node
    assert set(g.entity_keys) == {NS + "m.0a", NS + "m.0cvt", NS + "m.0b", date, '"plain "quoted" text"',
                                  "http://example.com/alpha", "http://example.com/mirror/m.0a"}
    names = dict(zip(g.entity_keys, g.entity_names, strict=True))
    assert names[NS + "m.0a"] == "Alpha" and names[NS + "m.0b"] == "Bêta" and names[NS + "m.0cvt"] == ""
    assert names[date] == "1961-08-04"
    # the French alias, the name and value predicates, a foreign or malformed relation, a blank node: no edges
    assert sorted(g.relations) == ["common.topic.notes", "common.topic.official_website",
                                   "people.marriage.spouse", "people.person.date_of_birth", "people.person.spouse_s"]
    assert nbh.stats["skipped_relations"] >= 1
    assert ("m.0cvt", "people.marriage.spouse", "m.0b") in triples(nbh)  # through the CVT hop
    assert NS + "m.0c" not in g.entity_keys
    ids = dict(zip(g.entity_keys, g.entity_ids, strict=True))
    mirror = "http://example.com/mirror/m.0a"
    assert ids[NS + "m.0a"] == "m.0a" and ids[mirror] == slug_id(mirror)  # its own id is taken
    imported = imported_csr(read_triple_files([path]), "tiny", NS, "en")  # (it slugs both keys of a taken id)
    for key, local_id, name in zip(g.entity_keys, g.entity_ids, g.entity_names, strict=True):
        if key.endswith("/m.0a"):
            continue
        row = imported.key_index[key]
        assert (imported.entity_ids[row], imported.entity_names[row]) == (local_id, name), key


# ---------------------------------------------------------------------------------------------- failures
class _SlowOrFailing(BaseHTTPRequestHandler):
    release = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/slow"):
            self.release.wait(10)
        html = self.path.startswith("/html")
        body = b"<html>a login page</html>" if html else b"boom"
        try:
            self.send_response(200 if html else 500)
            self.send_header("Content-Type", "application/sparql-results+json" if html else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def bad_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _SlowOrFailing)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _SlowOrFailing.release.set()
        server.shutdown()
        server.server_close()
        _SlowOrFailing.release.clear()


def test_an_endpoint_that_times_out_is_a_one_line_sparql_error(bad_endpoint) -> None:
    url = f"{bad_endpoint}/slow/sparql"
    started = time.monotonic()
    with pytest.raises(SparqlError) as caught:
        expand_neighbourhood(RemoteStore(url, retries=0), [FILM], NS, ExpansionLimits(timeout_s=1.0))
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 3.0
    message = str(caught.value)
    assert "\n" not in message and url in message and "hop 1 of 3" in message and "timed out after 1s" in message


def test_an_endpoint_that_fails_or_is_absent_is_a_sparql_error(bad_endpoint) -> None:
    with pytest.raises(SparqlError, match=r"hop 1 of 3 .*500.*boom"):
        expand_neighbourhood(RemoteStore(f"{bad_endpoint}/sparql", retries=0), [FILM], NS)
    with pytest.raises(SparqlError, match=r"hop 1 of 3 .*Error"):  # 200 with a body that is not JSON
        expand_neighbourhood(RemoteStore(f"{bad_endpoint}/html/sparql", retries=0), [FILM], NS)
    gone = f"http://127.0.0.1:{free_port()}/query"
    with pytest.raises(SparqlError, match=rf"hop 1 of 3 on {gone}: cannot reach"):
        expand_neighbourhood(RemoteStore(gone, retries=0), [FILM], NS)


# ---------------------------------------------------------------------------------------------- latency
def test_per_question_expansion_latency_on_the_demo(store, demo_ntriples, capsys) -> None:
    """Measured, not asserted: each demo question's topics expanded with the default limits."""
    from kgrag.data.demo import demo_kg, demo_questions

    questions = demo_questions(demo_kg())
    expand_neighbourhood(store, questions[0].topic_ids, NS)  # warm the server's caches
    ms, sizes, queries = [], [], []
    for q in questions:
        started = time.perf_counter()
        nbh = expand_neighbourhood(store, q.topic_ids, NS)
        ms.append((time.perf_counter() - started) * 1000)
        sizes.append(nbh.graph.num_triples)
        queries.append(nbh.stats["queries"])
        assert set(q.answer_ids) <= set(nbh.graph.entity_ids)
    with capsys.disabled():
        print(f"\n[{store.location}] {len(ms)} demo questions, default limits (hops 3, cvt 1): "
              f"median {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms, "
              f"median {statistics.median(sizes):.0f} triples, median {statistics.median(queries):.0f} queries")
