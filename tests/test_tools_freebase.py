"""KG tools on the Freebase-shaped fixture graph, on the embedded store AND a real `oxigraph serve` over HTTP."""

from __future__ import annotations

import json

import pytest
from fixtures.freebase_kg import FREEBASE_FIXTURE
from fixtures.llm_server import Error

from kgrag.config import get_settings
from kgrag.graph.remote_store import RemoteStore
from kgrag.tools.client import KGClient
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.factory import make_relation_filter
from kgrag.tools.relations import RelationFilters

FACTS = FREEBASE_FIXTURE.facts
FILTERS = RelationFilters.from_data_dir(get_settings().data_dir)


@pytest.fixture(params=["embedded", "remote"])
def store(request, freebase_store, freebase_server):
    return freebase_store if request.param == "embedded" else RemoteStore(freebase_server.url, timeout=30)


def new_session(store, question: str = "", topics: dict | None = None, **kw):
    from kgrag.tools.session import KGSession

    return KGSession(KGClient(store), question=question, topic_entities=topics, filters=FILTERS, **kw)


def test_incoming_cvt_is_flattened_in_direction_without_self_loop(store):
    romney = FACTS["politician"]
    s = new_session(store, "which office did Mitt Romney hold", {romney: "Mitt Romney"})
    assert "government.government_position_held.office_holder" in s.get_relations(romney).splitlines()
    out = s.get_triples(romney, ["government.government_position_held.office_holder"]).splitlines()
    flat = "government_office_or_title.office_holders.government.government_position_held.office_holder_1"
    assert f"[Governor of Massachusetts, {flat}, Mitt Romney]" in out
    assert all(not line.startswith("[Mitt Romney,") for line in out if "office_holder_" in line)  # self-loop gone
    info = {c["flatten_relation"]: c for c in s.trace[-1]["cvt_info"]}
    assert info[flat]["direction"] == "in" and info[flat]["cvt_node_id"] == FACTS["position_cvt"]
    assert s._cvt_mapping[flat] == ("government.government_position_held.office_holder", FACTS["position_cvt"],
                                    "government.government_office_or_title.office_holders", "in")
    assert s.get_triples(romney, [flat]) == f"[Governor of Massachusetts, {flat}, Mitt Romney]"


def test_outgoing_marriages_clash_suffixes_literals_and_metadata(store):
    klum = FACTS["spouse_person"]
    s = new_session(store, "who did Heidi Klum marry", {klum: "Heidi Klum"})
    s.get_relations(klum)
    out = s.get_triples(klum, ["people.person.spouse_s"])
    info = s.trace[-1]["cvt_info"]
    spouses = {c["cvt_node_id"]: c for c in info if c["cvt_relation"] == "people.marriage.spouse"}
    assert set(spouses) == set(FACTS["marriage_cvts"])
    names = {c["flatten_relation"] for c in spouses.values()}
    assert names == {"person.spouse_s.people.marriage.spouse_1", "person.spouse_s.people.marriage.spouse_2"}
    for cvt, c in spouses.items():
        assert [t["tail_id"] for t in c["flattened_triples"]] == [FACTS["spouses"][cvt]]  # Klum herself dropped
    assert "Seal" in out
    assert any(c["cvt_relation"] in ("people.marriage.from", "people.marriage.to") for c in info)  # literal tails
    assert not any(c["cvt_relation"].startswith(("type.object.type", "common.topic")) for c in info)


def test_cwq_question_reaches_its_answer_through_a_cvt(store):
    q = next(q for q in FREEBASE_FIXTURE.questions if q["qid"].startswith("WebQTrn-3428"))
    seal = "m.01vsykc"
    s = new_session(store, q["question"], q["topic_entity"])
    assert "people.person.spouse_s" in s.run('<kg-query>get_relations("Seal")</kg-query>').splitlines()
    out = s.run('<kg-query>get_triples("Seal", ["people.person.spouse_s"])</kg-query>')
    assert "Mexico" in out, out
    assert s.resolve("Seal") == seal


def test_many_cvts_bm25_top50_verify_and_llm_top8(store, llm_server, llm_settings):
    texas, rel = FACTS["many_cvt_entity"], FACTS["many_cvt_relation"]
    cfg = KGToolsConfig(limit_per_relation=50)  # fetch every governor CVT: > 50 flatten candidates

    def pick_office_holders(body):
        prompt = body["messages"][0]["content"]
        listed = json.loads(prompt.rsplit("Relations: ", 1)[1].split("\n", 1)[0])
        assert "flattened relation" in prompt and len(listed) <= 50
        return json.dumps([r for r in listed if ".office_holder_" in r][:3])

    llm_server.script(pick_office_holders)
    s = new_session(store, "who were the governors of Texas", {texas: "Texas"}, config=cfg,
                    relation_filter=make_relation_filter(llm_settings, cfg))
    s.get_relations(texas)
    s.get_triples(texas, [rel])
    flat = [c["flatten_relation"] for c in s.trace[-1]["cvt_info"]]
    assert len(flat) == 3 and all(".office_holder_" in f for f in flat)
    flt = next(r for r in s.trace if r["type"] == "filter")
    assert flt["flatten"] and flt["strategy"] == "llm" and 8 < flt["candidates"] <= 50


def test_many_cvts_fallback_keeps_at_most_eight(store, llm_server, llm_settings):
    texas, rel = FACTS["many_cvt_entity"], FACTS["many_cvt_relation"]
    llm_server.script(Error(500), Error(500), Error(500))
    cfg = KGToolsConfig(limit_per_relation=50, filter_backoff=0.0)
    s = new_session(store, "who were the governors of Texas", {texas: "Texas"}, config=cfg,
                    relation_filter=make_relation_filter(llm_settings, cfg))
    s.get_relations(texas)
    s.get_triples(texas, [rel])
    assert len(s.trace[-1]["cvt_info"]) == 8
    assert next(r for r in s.trace if r["type"] == "filter")["strategy"] == "fallback"


def test_whitelist_fallback_and_partial_filtering(store):
    s = new_session(store)
    all_outside = s.get_relations(FACTS["all_non_whitelisted_entity"]).splitlines()
    assert all_outside and all(r not in FILTERS.whitelist for r in all_outside)  # fallback to the raw list
    partial = s.get_relations(FACTS["partially_whitelisted_entity"]).splitlines()
    assert set(FACTS["partially_whitelisted_kept"]) <= set(partial)
    assert not set(FACTS["partially_whitelisted_dropped"]) & set(partial)


def test_names_fallback_escaping_and_ambiguity(store):
    s = new_session(store)
    assert s.client.entity_name(FACTS["fr_only_entity"]) == FACTS["fr_only_name"]  # no @en: any language
    assert s.resolve(FACTS["tricky_name"]) == FACTS["tricky_name_entity"]  # quotes/backslash in a literal
    chosen = s.resolve(FACTS["ambiguous_name"]["name"])
    assert chosen in FACTS["ambiguous_name"]["ids"]
    assert new_session(store).resolve(FACTS["ambiguous_name"]["name"]) == chosen  # deterministic


def test_only_unnamed_m_nodes_are_cvts(store):
    usa, g_node = "m.09c7w0", FACTS["unnamed_g_node"]
    s = new_session(store)
    result = s.triples(usa, ["location.statistical_region.population"], "United States of America")
    tails = {t["tail_id"]: t["tail"] for t in result.triples}
    assert tails.get(g_node) == g_node  # unnamed g. node: a regular triple labelled with its id (spec: m. only)
    assert all(c["cvt_node_id"].startswith("m.") for c in result.cvt_info)
