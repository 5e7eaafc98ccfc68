"""KG tools (spec kg-tools.md) on the demo KG and small inline graphs: one test per spec step."""

from __future__ import annotations

import json

from fixtures.kg_tools import RecordingStore, memory_store, ntriples
from fixtures.llm_server import Error

from kgrag.data.demo import demo_kg
from kgrag.tools.client import KGClient
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.factory import make_relation_filter
from kgrag.tools.filter import LLMRelationFilter
from kgrag.tools.relations import RelationFilters, flatten_relation, normalize_relation
from kgrag.tools.session import NO_RELATIONS, NO_TRIPLES, KGSession

KG = demo_kg()
ID = {name: mid for mid, name in KG.names.items()}
DMITRI = ID["Dmitri Kamau"]  # 1 marriage (CVT), directs films
INES = ID["Ines Kamau"]  # politician: government position CVTs
TORONTO = ID["Toronto"]


def session(store, **kw) -> tuple[KGSession, RecordingStore]:
    rec = RecordingStore(store)
    cfg = kw.pop("config", KGToolsConfig())
    return KGSession(KGClient(rec), config=cfg, **kw), rec


# --------------------------------------------------------------------------- §2.1 entity resolution, registry
def test_mid_is_used_directly_without_resolution(demo_store):
    s, rec = session(demo_store)
    out = s.get_relations(DMITRI)
    assert "people.person.spouse_s" in out.splitlines()
    assert not any("LCASE" in q or "COUNT(?t)" in q for q in rec.queries)  # no name resolution query


def test_id_like_but_invalid_is_an_entity_error(demo_store):
    s, rec = session(demo_store)
    out = s.get_relations('m.0abc"} ; DROP')
    assert out.startswith("Invalid entity. Use an entity returned by the previous step and copy it exactly.")
    assert rec.queries == []


def test_name_resolved_by_sparql_and_registered_both_ways(demo_store):
    s, rec = session(demo_store)
    assert s.get_relations("Dmitri Kamau") != NO_RELATIONS
    assert s._entity_registry["dmitri kamau"] == DMITRI and s._entity_names[DMITRI] == "Dmitri Kamau"
    before = len(rec.queries)
    s.get_relations("DMITRI KAMAU")  # lowercase registry key: no second resolution, relation cache: no query
    assert len(rec.queries) == before


def test_case_insensitive_fallback(demo_store):
    s, _ = session(demo_store)
    assert s.resolve("dmitri kamau") == DMITRI
    strict, _ = session(demo_store, config=KGToolsConfig(case_insensitive_names=False))
    strict.client.case_insensitive_names = False
    assert strict.resolve("dmitri kamau") is None


def test_registry_prefilled_from_topic_entities(demo_store):
    s, rec = session(demo_store, question="who is the spouse", topic_entities={DMITRI: "Dmitri Kamau"})
    s.get_relations("Dmitri Kamau")
    assert not any("COUNT(?t)" in q for q in rec.queries)
    assert s.augmented_question == "who is the spouse Dmitri Kamau"
    s2, _ = session(demo_store, topic_entities={"Dmitri Kamau": DMITRI})  # name -> id direction too
    assert s2._entity_registry["dmitri kamau"] == DMITRI


def test_get_triples_registers_entities(demo_store):
    s, rec = session(demo_store)
    s.get_relations(TORONTO)
    out = s.get_triples(TORONTO, ["people.person.place_of_birth"])
    born_here = out.splitlines()[0].strip("[]").split(", ")[0]
    before = len(rec.queries)
    assert s.resolve(born_here) == s._entity_registry[born_here.lower()]
    assert len(rec.queries) == before  # resolved from the registry


def test_unknown_entity_error_carries_last_entities(demo_store):
    s, _ = session(demo_store)
    s.get_relations(TORONTO)
    triples = s.get_triples(TORONTO, ["people.person.place_of_birth"])
    out = s.get_relations("Nobody Anywhere")
    assert out == ("Invalid entity. Use an entity returned by the previous step and copy it exactly."
                   "\n\nLast entities (names only):\n\n" + triples)
    assert s.trace[-1] == {"type": "error", "content": out, "entity": "Nobody Anywhere"}


# --------------------------------------------------------------------------- §2.3 relations
def test_relations_out_and_in_dotted_and_filtered(demo_store):
    s, rec = session(demo_store)
    rels = s.get_relations(TORONTO).splitlines()
    assert "people.person.place_of_birth" in rels  # incoming edge
    assert "location.location.containedby" in rels  # outgoing edge
    assert all("://" not in r for r in rels)
    assert "type.object.type" not in rels and "common.topic.article" not in rels  # meaningless filter
    assert "type.object.name" not in rels  # labels are not paths
    assert sum("SELECT DISTINCT ?relation" in q for q in rec.queries) == 2  # outgoing + incoming query


def test_relation_cache_per_entity(demo_store):
    s, rec = session(demo_store)
    s.get_relations(DMITRI)
    n = len(rec.queries)
    s.get_relations(DMITRI)
    assert len(rec.queries) == n
    assert s._rel_cache[DMITRI]


def test_whitelist_with_fallback():
    filters = RelationFilters(whitelist=frozenset({"a.b.c"}))
    assert filters.apply_whitelist(["a.b.c", "x.y.z"]) == ["a.b.c"]
    assert filters.apply_whitelist(["x.y.z", "p.q.r"]) == ["x.y.z", "p.q.r"]  # would be empty: keep input
    assert RelationFilters().apply_whitelist(["x.y.z"]) == ["x.y.z"]


def test_whitelist_applied_in_get_relations(demo_store):
    s, _ = session(demo_store, filters=RelationFilters(whitelist=frozenset({"people.person.place_of_birth"})))
    assert s.get_relations(TORONTO) == "people.person.place_of_birth"


def test_meaningless_patterns_exact_and_prefix():
    f = RelationFilters()
    assert f.is_meaningless("type.object.type") and f.is_meaningless("freebase.type_hints.included_types")
    assert f.is_meaningless("common.topic.article") and not f.is_meaningless("common.topic.articles_x")
    assert not f.is_meaningless("people.person.spouse_s")


def test_bm25_ranks_by_question(demo_store):
    s, _ = session(demo_store, question="what is his place of birth", topic_entities={DMITRI: "Dmitri Kamau"})
    assert s.get_relations(DMITRI).splitlines()[0] == "people.person.place_of_birth"
    s2, _ = session(demo_store, question="who is his spouse", topic_entities={DMITRI: "Dmitri Kamau"})
    assert s2.get_relations(DMITRI).splitlines()[0] in {"people.person.spouse_s", "people.marriage.spouse"}


def wide_graph(n_rel: int = 14) -> str:
    edges = [("m.0hub", f"film.film.prop_{i:02d}", f"m.0t{i:02d}") for i in range(n_rel)]
    names = {"m.0hub": "Hub Film", **{f"m.0t{i:02d}": f"Tail {i}" for i in range(n_rel)}}
    return ntriples(edges, names)


def test_llm_filter_only_above_threshold(llm_server, llm_settings):
    store = memory_store(wide_graph(10))
    s, _ = session(store, relation_filter=make_relation_filter(llm_settings, KGToolsConfig()))
    assert len(s.get_relations("m.0hub").splitlines()) == 10
    assert llm_server.chat_requests == []  # 10 candidates: no LLM call


def test_llm_filter_shuffles_parses_and_reorders(llm_server, llm_settings):
    store = memory_store(wide_graph(14))
    llm_server.script('Sure: ["film.film.prop_07", "film.film.prop_03", "not.a.candidate"]')
    cfg = KGToolsConfig(seed=3)
    s, _ = session(store, config=cfg, relation_filter=make_relation_filter(llm_settings, cfg))
    out = s.get_relations("m.0hub")
    assert out == "film.film.prop_07\nfilm.film.prop_03"
    prompt = llm_server.chat_requests[0].body["messages"][0]["content"]
    listed = json.loads(prompt.rsplit("Relations: ", 1)[1].split("\n", 1)[0])
    assert sorted(listed) == [f"film.film.prop_{i:02d}" for i in range(14)]
    assert listed != sorted(listed)  # shuffled (seeded) against position bias
    assert llm_server.chat_requests[0].body["model"] == "gpt-4o-mini"  # the configurable filter model
    assert s._seen_relations_set == {"film.film.prop_07", "film.film.prop_03"}


def test_llm_filter_retries_with_backoff_then_falls_back_to_bm25_order(llm_server, llm_settings):
    store = memory_store(wide_graph(14))
    llm_server.script(Error(500, "down"), "no json here", Error(429, "slow down"))
    cfg = KGToolsConfig(kg_top_k=4)
    sleeps: list[float] = []
    flt = make_relation_filter(llm_settings, cfg)
    assert isinstance(flt, LLMRelationFilter)
    flt.sleep = sleeps.append
    s, _ = session(store, config=cfg, relation_filter=flt)
    expected = s.candidate_relations("m.0hub", cfg.kg_top_k * 3)[:4]
    assert s.get_relations("m.0hub").splitlines() == expected
    assert len(llm_server.chat_requests) == 3  # 3 tries, the client itself does not retry
    assert sleeps == [1.0, 2.0]  # exponential backoff between tries
    assert s.filter_stats == {"calls": 1, "fallbacks": 1}
    assert s.trace[-1]["type"] == "tool_call" and s.trace[-2]["strategy"] == "fallback"


def test_top_k_times_three_candidates_reach_the_filter(llm_server, llm_settings):
    store = memory_store(wide_graph(14))
    llm_server.script('["film.film.prop_01"]')
    cfg = KGToolsConfig(kg_top_k=4, llm_filter_threshold=3)
    s, _ = session(store, config=cfg, relation_filter=make_relation_filter(llm_settings, cfg))
    s.get_relations("m.0hub")
    prompt = llm_server.chat_requests[0].body["messages"][0]["content"]
    assert len(json.loads(prompt.rsplit("Relations: ", 1)[1].split("\n", 1)[0])) == 12


def test_offline_filter_when_no_llm(demo_store):
    store = memory_store(wide_graph(14))
    s, _ = session(store, question="prop 05")
    out = s.get_relations("m.0hub").splitlines()
    assert len(out) == 10 and out[0] == "film.film.prop_05"
    assert s.trace[-2]["strategy"] == "offline"


# --------------------------------------------------------------------------- §3 get_triples
def test_seen_relation_validation_with_normalisation(demo_store):
    s, _ = session(demo_store)
    listed = s.get_relations(TORONTO)
    ok = s.get_triples(TORONTO, ["http://rdf.freebase.com/ns/people.person.place_of_birth"])
    assert ok != NO_TRIPLES and "[" in ok
    s.get_relations(TORONTO)
    assert s.get_triples(TORONTO, ["ns:people/person.place_of_birth"]) == ok
    s.get_relations(TORONTO)
    bad = s.get_triples(TORONTO, ["people.person.place_of_birth", "film.film.genre"])
    assert bad == ("The relation 'film.film.genre' is not in the latest predicate list. "
                   f"Choose predicates from the list below:\n\n{listed}")


def test_normalize_relation():
    assert normalize_relation(" http://rdf.freebase.com/ns/people.person.children ") == "people.person.children"
    assert normalize_relation("ns:people/person.children") == "people.person.children"
    assert normalize_relation("directed_by", "http://example.org/kgrag/metaqa/ns/") == "directed_by"


def test_at_most_four_relations(demo_store):
    s, _ = session(demo_store)
    s.get_relations(DMITRI)
    rels = s.get_relations(DMITRI).splitlines()
    assert len(rels) >= 5
    s.get_triples(DMITRI, rels + rels)
    assert s.trace[-1]["args"]["relations"] == rels[:4]


def big_fanout(n: int = 40) -> str:
    edges = [("m.0star", "film.actor.film", f"m.0f{i:02d}") for i in range(n)]
    edges += [("m.0star", "people.person.spouse_s", "m.0cvt1"), ("m.0cvt1", "people.marriage.spouse", "m.0star"),
              ("m.0cvt1", "people.marriage.spouse", "m.0wife"), ("m.0star", "people.person.spouse_s", "m.0cvt2"),
              ("m.0cvt2", "people.marriage.spouse", "m.0star"), ("m.0cvt2", "people.marriage.spouse", "m.0wife2"),
              ("m.0cvt1", "type.object.type", "m.0marriage_type")]
    names = {"m.0star": "Star", "m.0wife": "First Wife", "m.0wife2": "Second Wife",
             **{f"m.0f{i:02d}": f"Film {i}" for i in range(n)}}
    return ntriples(edges, names)


def test_five_triples_per_relation_sampled_with_seed():
    store = memory_store(big_fanout())
    a, _ = session(store, config=KGToolsConfig(seed=1))
    b, _ = session(store, config=KGToolsConfig(seed=1))
    c, _ = session(store, config=KGToolsConfig(seed=2))
    out_a = a.get_triples("m.0star", ["film.actor.film"])
    assert len(out_a.splitlines()) == 5
    assert out_a == b.get_triples("m.0star", ["film.actor.film"])  # same seed, same sample
    assert out_a != c.get_triples("m.0star", ["film.actor.film"])  # the sample is random (seeded)


def test_fifteen_regular_triples_when_cvts_found():
    # 30 named heads point at the star over R (the incoming query fetches limit*4 = 20 of them)
    edges = [(f"m.0f{i:02d}", "people.person.spouse_s", "m.0star") for i in range(30)]
    names = {"m.0star": "Star", "m.0w": "W", **{f"m.0f{i:02d}": f"Named {i}" for i in range(30)}}
    without_cvt = ntriples(edges, names)
    with_cvt = ntriples([*edges, ("m.0star", "people.person.spouse_s", "m.0cvt"),
                         ("m.0cvt", "people.marriage.spouse", "m.0w")], names)

    def regular(text: str) -> list[dict]:
        s, _ = session(memory_store(text))
        return [t for t in s.triples("m.0star", ["people.person.spouse_s"], "Star").triples
                if t["relation"] == "people.person.spouse_s"]

    assert len(regular(without_cvt)) == 5
    assert len(regular(with_cvt)) == 15


def test_cvt_flatten_naming_clash_suffixes_and_self_loops_dropped():
    s, _ = session(memory_store(big_fanout()), question="who is the wife")
    out = s.get_triples("m.0star", ["people.person.spouse_s"])
    lines = out.splitlines()
    assert "[Star, person.spouse_s.people.marriage.spouse_1, First Wife]" in lines
    assert "[Star, person.spouse_s.people.marriage.spouse_2, Second Wife]" in lines
    assert not any("Star]" in line and "spouse_" in line for line in lines)  # star -> star self-loops dropped
    record = s.trace[-1]
    assert {c["flatten_relation"] for c in record["cvt_info"]} == {"person.spouse_s.people.marriage.spouse_1",
                                                                   "person.spouse_s.people.marriage.spouse_2"}
    info = next(c for c in record["cvt_info"] if c["cvt_node_id"] == "m.0cvt1")
    assert info == {"original_relation": "people.person.spouse_s", "cvt_node_id": "m.0cvt1",
                    "cvt_relation": "people.marriage.spouse", "flatten_relation": info["flatten_relation"],
                    "direction": "out",
                    "flattened_triples": [{"head": "Star", "head_id": "m.0star", "relation": info["flatten_relation"],
                                           "tail": "First Wife", "tail_id": "m.0wife"}]}
    assert "type.object.type" not in json.dumps(record["cvt_info"])  # meaningless CVT relations skipped


def test_flatten_relation_name():
    assert flatten_relation("people.person.spouse_s", "people.marriage.spouse") == "person.spouse_s.people.marriage.spouse"
    assert flatten_relation("film.actor.film", "people.marriage.spouse") == "film.actor.film.people.marriage.spouse"


def test_cvt_mapping_two_hop_query_and_pending_flatten_relations():
    s, _ = session(memory_store(big_fanout()), question="wife")
    s.get_triples("m.0star", ["people.person.spouse_s"])
    flat = "person.spouse_s.people.marriage.spouse_2"
    assert s._cvt_mapping[flat] == ("people.person.spouse_s", "m.0cvt2", "people.marriage.spouse", "out")
    assert flat in s.get_relations("m.0star").splitlines()  # pending flatten relation offered by get_relations
    assert s.get_triples("m.0star", [flat]) == f"[Star, {flat}, Second Wife]"


def test_incoming_cvt_flatten_direction_in(demo_store):
    s, _ = session(demo_store)
    s.get_relations(INES)
    rel = "government.government_position_held.office_holder"
    result = s.triples(INES, [rel], "Ines Kamau")
    # the CVT's only incoming edge comes from Ines herself: a self-loop, dropped by verification
    assert all(t["head_id"] != t["tail_id"] for t in result.triples)
    out_result = s.triples(INES, ["government.politician.government_positions_held"], "Ines Kamau")
    titles = {t["tail"] for t in out_result.triples}
    assert "Prime Minister" in titles
    assert all(c["direction"] == "out" for c in out_result.cvt_info)


def test_text_formats_and_empty_results(demo_store):
    s, _ = session(demo_store)
    assert s.get_relations("m.0doesnotexist") == NO_RELATIONS
    assert s.get_triples("m.0doesnotexist", ["people.person.place_of_birth"]) == NO_TRIPLES
    s.get_relations(TORONTO)
    out = s.get_triples(TORONTO, ["people.person.place_of_birth"])
    assert all(line.startswith("[") and line.endswith(", Toronto]") for line in out.splitlines())


def test_state_updates_and_trace_records(demo_store):
    s, _ = session(demo_store)
    rel_text = s.run('<kg-query>get_relations("Toronto")</kg-query>')
    assert s._last_relations_text == rel_text and s._last_entities_text == ""
    tri_text = s.run("get_triples('Toronto', ['people.person.place_of_birth'])")
    assert s._last_entities_text == tri_text and s._last_relations_text == ""
    s.run("get_relations(Toronto)")
    types = [r["type"] for r in s.trace]
    assert types == ["kg_query", "tool_call", "information", "kg_query", "tool_call", "information",
                     "kg_query", "error", "information"]
    assert s.trace[0]["content"] == 'get_relations("Toronto")'
    assert s.trace[-1]["content"] == "[Could not parse query: get_relations(Toronto)]"
    assert [r["call_number"] for r in s.trace if r["type"] == "information"] == [1, 2, 3]


def test_max_calls():
    s, _ = session(memory_store(big_fanout()), config=KGToolsConfig(max_calls=2))
    s.run('get_relations("m.0star")')
    s.run('get_relations("m.0star")')
    assert s.run('get_relations("m.0star")').startswith("[KG query limit reached")
    assert s.trace[-1]["type"] == "max_calls_reached"


def test_same_seed_same_outputs_on_embedded_and_remote(demo_store, oxigraph_server):
    from kgrag.graph.remote_store import RemoteStore

    script = ['get_relations("Dmitri Kamau")', 'get_triples("Dmitri Kamau", ["people.person.spouse_s", '
              '"film.director.film", "people.person.place_of_birth"])', 'get_relations("Dmitri Kamau")',
              'get_relations("Toronto")', 'get_triples("Toronto", ["people.person.place_of_birth"])']
    runs = []
    for store in (demo_store, demo_store, RemoteStore(oxigraph_server.url, timeout=10)):
        s = KGSession(KGClient(store), question="who is Dmitri Kamau's spouse")
        runs.append([s.run(q) for q in script])
    assert runs[0] == runs[1] == runs[2]
    assert any("spouse_s.people.marriage.spouse_1" in r for r in runs[0])


def test_endpoint_down_then_back():
    from harness.servers.oxigraph_server import load_into, serve_read_only
    from harness.servers.ports import free_port
    from kgrag.graph.remote_store import RemoteStore

    port = free_port()
    store = RemoteStore(f"http://127.0.0.1:{port}/query", timeout=2, retries=1, backoff=0.01)
    s = KGSession(KGClient(store))
    import time

    t = time.monotonic()
    out = s.run('get_relations("m.0star")')
    assert out.startswith("[KG query failed: cannot reach SPARQL endpoint") and time.monotonic() - t < 5
    assert s.trace[-2]["type"] == "error"
    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp())
    (tmp / "g.nt").write_text(big_fanout())
    load_into(tmp / "store", tmp / "g.nt")
    server = serve_read_only(tmp / "store", port=port)
    try:
        assert "people.person.spouse_s" in s.run('get_relations("m.0star")').splitlines()  # same session works
    finally:
        server.stop()
