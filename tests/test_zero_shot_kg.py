"""The zero-shot chain ranker (:mod:`kgrag.agent.kg.zero_shot`) on the small Freebase-shaped graph: one hop, CVT
two hops, two topics intersected, the answer type, evidence checked on the store; the agent's state names the
chain; and the benchmark fixture generator (:mod:`bench.freebase_fixture`)."""

from __future__ import annotations

import gzip
import json

import pytest
from fixtures.settings import require_shared

from bench.freebase_fixture import build_fixture, parse_patterns
from kgrag.agent.kg.zero_shot import ZeroShotChainRanker, asked_type, chain_words, end_words
from kgrag.rank.sentence_embedder import Embedder
from kgrag.tools.client import KGClient


@pytest.fixture(scope="module")
def ranker(freebase_store) -> ZeroShotChainRanker:
    return ZeroShotChainRanker(KGClient(freebase_store), Embedder(cache_dir=None))


def test_words_and_asked_types() -> None:
    assert chain_words(["people.person.spouse_s", "people.marriage.spouse"]) == "person spouse marriage spouse"
    assert chain_words(["starred_actors"]) == "starred actors"
    assert end_words("film.film.directed_by", "out") == "directed by"
    assert end_words("film.director.film", "in") == "director"
    assert [asked_type(q) for q in ("When did she marry?", "what year was it", "how many states are there",
                                    "where was he born", "who is her spouse", "what is the mascot")] == [
        "date", "date", "number", "place", "person", "other"]


def test_one_hop(ranker) -> None:
    found = ranker.answer("where was Mitt Romney born?", ["m.0271_s"])
    assert [a.label for a in found.answers] == ["Detroit"]
    assert len(found.chains) == 1 and found.chains[0].via == "" and len(found.chains[0].steps) == 1
    assert found.evidence[0]["id_triples"] == [["m.kg_detroit", "location.location.people_born_here", "m.0271_s"]]
    assert found.evidence[0]["held"] == [True] and found.verified is True


def test_cvt_two_hop_names_the_chain_and_holds_its_triples(ranker) -> None:
    found = ranker.answer("who is Heidi Klum married to?", {"m.kg_heidi_klum": "Heidi Klum"})
    assert sorted(a.label for a in found.answers) == ["Ric Pipino", "Seal"]  # herself (the self-loop) excluded
    chain = found.chains[0]
    assert chain.via == "cvt" and [s.relation for s in chain.steps][-1] == "people.marriage.spouse"
    assert "(cvt)" in found.chain
    by_answer = {e["answer"]: e for e in found.evidence}
    assert by_answer["Seal"]["id_triples"][-1] == ["m.kg_cvt_marriage_klum_seal", "people.marriage.spouse",
                                                   "m.01vsykc"]
    assert all(all(e["held"]) and len(e["held"]) == 2 for e in found.evidence) and found.verified is True


def test_a_when_question_picks_the_date_chain(ranker) -> None:
    found = ranker.answer("when did Heidi Klum marry?", ["m.kg_heidi_klum"])
    assert found.chains[0].relations == ["people.person.spouse_s", "people.marriage.from"]
    assert sorted(a.id for a in found.answers) == ["1997", "2005-05-10"] and all(a.is_literal for a in found.answers)
    where = ranker.answer("where did Heidi Klum's wedding take place?", ["m.kg_heidi_klum"])
    assert where.chains[0].relations[-1] == "people.marriage.location_of_ceremony"
    assert [a.label for a in where.answers] == ["Mexico"]


def test_two_topics_intersect_their_chains(ranker) -> None:
    found = ranker.answer("which state in the United States is Atlanta in?", ["m.09c7w0", "m.013yq"])
    assert [a.label for a in found.answers] == ["Georgia"] and len(found.chains) == 2
    assert {c.topic for c in found.chains} == {"m.09c7w0", "m.013yq"} and " ∩ " in found.chain
    single = ranker.answer("which state in the United States is Atlanta in?", ["m.013yq"])
    assert len(single.chains) == 1


def test_the_agent_without_a_reasoner_names_the_chain(demo_untrained_settings) -> None:
    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph

    # query graphs off: the chain ranker's own plan (with them, tests/test_query_graph_kg.py)
    state = graph.invoke({"question": "who is Jonas Quintero's spouse?", "kg": "demo"},
                         context=AgentContext(query_graphs=False))
    assert [c["name"] for c in state["tool_calls"]] == ["rank_chains"]
    result = state["tool_calls"][0]["result"]
    assert result["chains"][0]["via"] == "cvt" and result["verified"] is True
    assert state["answers"] and result["chain"] in state["answer"] and "checked on the store" in state["answer"]
    assert state["evidence"] and all(len(e["triples"]) == 2 and e["verified"] for e in state["evidence"])
    assert state["evidence"][0]["path"] == result["chain"]


def test_fixture_generator(tmp_path) -> None:
    folder = require_shared("freebase/webqsp_100.json").parent
    patterns, literals, constrained = parse_patterns(
        "SELECT ?x WHERE {\nFILTER (?x != ns:m.1)\nns:m.1 ns:a.b.c ?y .\n?y ns:a.d.e ?x ;\n ns:a.d.f ?num .\n"
        "FILTER (?num < \"1965\"^^xsd:dateTime) . \n}\nORDER BY ?num LIMIT 1")
    assert patterns == [("ns:m.1", "a.b.c", "?y"), ("?y", "a.d.e", "?x"), ("?y", "a.d.f", "?num")]
    assert literals == {"num"} and constrained
    report = build_fixture(folder, tmp_path, seed=0)
    again = build_fixture(folder, tmp_path / "again", seed=0)
    assert report == again and (tmp_path / "graph.nt.gz").read_bytes() == (tmp_path / "again/graph.nt.gz").read_bytes()
    assert report["questions"] == {"webqsp": 100, "cwq": 298} and report["excluded"] == {
        "cwq: no triple pattern with ?x": 2}
    rows = [json.loads(line) for line in (tmp_path / "questions.jsonl").open(encoding="utf-8")]
    first = rows[0]
    assert first["question"] == "where did jovan belcher kill himself?" and first["answers"] == ["m.04f_d"]
    assert first["topic_entities"] == ["m.055d_1d"] and first["split"] == "test"
    with gzip.open(tmp_path / "graph.nt.gz", "rt", encoding="utf-8") as fh:
        text = fh.read()
    ns = "http://rdf.freebase.com/ns/"
    assert f"<{ns}m.055d_1d> <{ns}people.deceased_person.place_of_death> <{ns}m.04f_d> ." in text
    assert f'<{ns}m.04f_d> <{ns}type.object.name> "Kansas City"@en .' in text

