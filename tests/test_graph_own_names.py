"""The graph's own names at import, on small Turtle files written here: Wikidata-style property labels name the
relations (before or after the property's use, through ``wikibase:directClaim`` too) and never become entities;
other-name predicates (``skos:altLabel``, ``schema:alternateName``, ``common.topic.alias``, ``--alias-predicate``)
are kept as other names, persisted with the prepared graph and linked; the store, the tools and the zero-shot
ranker's words say the readable relation names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kgrag.cli import app
from kgrag.data.triples import read_triple_files
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.imported import imported_csr, label_local_name

runner = CliRunner()

# labels of P19 / P27 come BEFORE their use, of P166 / P69 AFTER it; P19 is labelled through directClaim,
# P27 on the predicate itself, P166 through directClaim, P69 by its wd: twin only (no directClaim); P800 has none
WIKIDATA = """@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix wikibase: <http://wikiba.se/ontology#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix schema: <http://schema.org/> .
@prefix ex: <http://example.org/vocab/> .
wd:P19 a wikibase:Property ; rdfs:label "place of birth"@en, "lieu de naissance"@fr ;
  wikibase:directClaim wdt:P19 ; wikibase:propertyType wikibase:WikibaseItem .
wdt:P27 rdfs:label "country of citizenship"@en .
wd:Q937 rdfs:label "Albert Einstein"@en ; skos:altLabel "Einstein"@en, "A. Einstein"@de ;
  wdt:P19 wd:Q3012 ; wdt:P27 wd:Q183 ; wdt:P166 wd:Q38104 ; wdt:P69 wd:Q11942 ; wdt:P800 wd:Q43514 ;
  wdt:P31 wd:Q5 .
wd:Q7186 rdfs:label "Marie Curie"@en ; wdt:P19 wd:Q270 ; wdt:P166 wd:Q38104 ; wdt:P31 wd:Q5 .
wd:Q3012 rdfs:label "Ulm"@en ; wdt:P17 wd:Q183 .
wd:Q270 rdfs:label "Warsaw"@en ; ex:nickname "Paris of the North"@en .
wd:Q183 rdfs:label "Germany"@en ; schema:alternateName "Deutschland" .
wd:Q38104 rdfs:label "Nobel Prize in Physics"@en .
wd:Q11942 rdfs:label "ETH Zurich"@en .
wd:Q43514 rdfs:label "general relativity"@en .
wd:Q5 rdfs:label "human"@en .
wd:P166 rdfs:label "award received"@en ; wikibase:directClaim wdt:P166 .
wd:P69 rdfs:label "educated at"@en .
wd:P17 rdfs:label "country"@en ; wikibase:directClaim wdt:P17 .
wdt:P31 rdfs:label "instance of"@en .
"""
KEYS = {"einstein": "http://www.wikidata.org/entity/Q937", "germany": "http://www.wikidata.org/entity/Q183",
        "warsaw": "http://www.wikidata.org/entity/Q270"}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _graph(path: Path, **kwargs) -> CSRGraph:
    return imported_csr(read_triple_files([path], **kwargs), "wd", "http://example.org/kgrag/wd/ns/", "en")


def _edges(graph: CSRGraph) -> set[tuple[str, str, str]]:
    names = graph.entity_names
    return {(names[h], graph.relations[r], names[t]) for h, r, t in zip(graph.head.tolist(), graph.rel.tolist(),
                                                                       graph.tail.tolist(), strict=True)}


def test_property_labels_name_the_relations_and_are_no_entities(tmp_path) -> None:
    graph = _graph(_write(tmp_path, "wd.ttl", WIKIDATA))
    assert graph.relations == ["P800", "award_received", "country", "country_of_citizenship", "educated_at",
                               "instance_of", "nickname", "place_of_birth"]
    sources = dict(zip(graph.relations, graph.meta["relation_sources"], strict=True))
    assert sources["place_of_birth"] == "http://www.wikidata.org/prop/direct/P19"  # the IRI mapping is kept
    assert sources["educated_at"] == "http://www.wikidata.org/prop/direct/P69"  # by the wd:/wdt: twin
    labels = dict(zip(graph.relations, graph.relation_labels, strict=True))
    assert labels["place_of_birth"] == "place of birth" and labels["P800"] == "P800"  # an id only without label
    assert ("Albert Einstein", "place_of_birth", "Ulm") in _edges(graph)
    assert ("Ulm", "country", "Germany") in _edges(graph)
    names = set(graph.entity_names)
    # no property label, property entity or schema node is an entity
    assert not names & {"place of birth", "award received", "educated at", "country", "instance of",
                        "country of citizenship", "lieu de naissance"}
    assert not any("wikiba.se" in k or "/entity/P" in k or "/prop/direct/" in k for k in graph.entity_keys)
    assert graph.num_entities == 10 and graph.num_triples == 11  # 9 entities, 1 literal


def test_other_names_are_kept_in_the_language_and_persisted(tmp_path) -> None:
    path = _write(tmp_path, "wd.ttl", WIKIDATA)
    graph = _graph(path)
    row = {k: i for i, k in enumerate(graph.entity_keys)}
    assert graph.aliases_of(row[KEYS["einstein"]]) == ["Einstein"]  # @de is another language
    assert graph.aliases_of(row[KEYS["germany"]]) == ["Deutschland"]  # schema:alternateName
    assert graph.aliases_of(row[KEYS["warsaw"]]) == []  # ex:nickname is an edge unless named as an alias
    assert ("Warsaw", "nickname", "Paris of the North") in _edges(graph)
    named = _graph(path, alias_predicates=["http://example.org/vocab/nickname"])
    row = {k: i for i, k in enumerate(named.entity_keys)}
    assert named.aliases_of(row[KEYS["warsaw"]]) == ["Paris of the North"]
    assert "nickname" not in named.relations and "Paris of the North" not in set(named.entity_names)
    named.save(tmp_path / "graph.npz")
    loaded = CSRGraph.load(tmp_path / "graph.npz")
    assert loaded.aliases_of(row[KEYS["warsaw"]]) == ["Paris of the North"]
    assert list(loaded.alias_names) == list(named.alias_names) and loaded.relation_labels == named.relation_labels
    assert np.array_equal(loaded.alias_rows, named.alias_rows)


def test_a_losing_name_in_the_language_is_an_other_name(tmp_path) -> None:
    graph = _graph(_write(tmp_path, "names.ttl", """@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix schema: <http://schema.org/> .
ex:a schema:name "Albert Einstein"@en ; rdfs:label "Einstein"@en, "Einstein (physicien)"@fr ; ex:won ex:b .
ex:b rdfs:label "Nobel Prize" .
"""))
    assert graph.entity_names[graph.key_index["http://example.org/a"]] == "Albert Einstein"
    assert graph.aliases_of(graph.key_index["http://example.org/a"]) == ["Einstein"]


@pytest.mark.parametrize(("label", "local"), [("place of birth", "place_of_birth"), ("ISBN-13", "ISBN_13"),
                                              ("20th-century style", "r_20th_century_style"), ("出生地", ""),
                                              ("  ", "")])
def test_label_local_names_are_sparql_safe(label: str, local: str) -> None:
    assert label_local_name(label) == local


def test_a_label_without_ascii_letters_keeps_the_id_and_the_label(tmp_path) -> None:
    graph = _graph(_write(tmp_path, "zh.ttl", """@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
wd:Q1 rdfs:label "甲"@en ; wdt:P19 wd:Q2 .
wd:Q2 rdfs:label "乙"@en .
wdt:P19 rdfs:label "出生地"@en .
"""))
    assert graph.relations == ["P19"] and graph.relation_labels == ["出生地"]


def test_bad_alias_predicate_is_a_one_line_error(work_settings, tmp_path) -> None:
    kg = _write(tmp_path, "wd.ttl", WIKIDATA)
    bad = runner.invoke(app, ["prepare", "--dataset", "wdbad", "--triples", str(kg), "--alias-predicate", "nickname"])
    assert bad.exit_code == 1 and "not an absolute IRI" in bad.output and "Traceback" not in bad.output
    alone = runner.invoke(app, ["prepare", "--dataset", "demo", "--alias-predicate", "http://x/y"])
    assert alone.exit_code == 1 and "--alias-predicate needs --triples" in alone.output
    with pytest.raises(KgragError, match="no triples read"):
        read_triple_files([_write(tmp_path, "empty.ttl", "")], alias_predicates=["http://x/y"])


@pytest.fixture
def wd_kg(work_settings, tmp_path) -> CSRGraph:
    kg = _write(tmp_path, "wd.ttl", WIKIDATA)
    questions = _write(tmp_path, "q.jsonl", json.dumps({"question": "where was Albert Einstein born",
                                                        "topic_entities": ["Albert Einstein"],
                                                        "answers": ["Ulm"]}) + "\n")
    result = runner.invoke(app, ["prepare", "--dataset", "wd", "--triples", str(kg), "--questions", str(questions),
                                 "--alias-predicate", "http://example.org/vocab/nickname"])
    assert result.exit_code == 0, result.output
    assert "other names of nodes (aliases)" in result.output
    return CSRGraph.load(work_settings.dataset_dir("wd") / "graph.npz")


def test_prepared_graph_store_tools_and_linker_say_the_labels(wd_kg, work_settings) -> None:
    from kgrag.agent.kg.triple_kg import TripleKG
    from kgrag.agent.kg.zero_shot import chain_words
    from kgrag.data.registry import dataset_spec
    from kgrag.tools.factory import open_session

    summary = json.loads((work_settings.dataset_dir("wd") / "summary.json").read_text())["graph"]
    assert (summary["other_names"], summary["labelled_relations"]) == (3, 6)
    assert summary["property_triples"] == 5  # a property's type and datatype, 3 directClaims
    session = open_session(dataset_spec("wd", work_settings), question="where was Albert Einstein born", settings=work_settings)
    relations = session.run('get_relations("Albert Einstein")')
    assert "place_of_birth" in relations and "P19" not in relations
    assert "Ulm" in session.run('get_triples("Albert Einstein", ["place_of_birth"])')
    assert chain_words(["place_of_birth"]) == "place of birth"  # what the zero-shot ranker embeds
    sparql = runner.invoke(app, ["sparql", "--dataset", "wd", "--json", "SELECT ?o WHERE { ?s "
                                 "<http://example.org/kgrag/wd/ns/place_of_birth> ?o }"])
    assert sparql.exit_code == 0 and sparql.output.count('"o"') >= 2  # both births, through the minted name
    kg = TripleKG.open(work_settings, "wd")
    try:
        links, linked = kg.link("where was the Paris of the North's mayor born")
        assert (links[0].name, links[0].match_type) == ("Warsaw", "alias")
        links, linked = kg.link("what did einstein win")
        assert (links[0].name, links[0].match_type) == ("Albert Einstein", "alias")
        assert linked == "what did [einstein] win"
        links, _ = kg.link("where was curie born")  # a surname
        assert (links[0].name, links[0].match_type) == ("Marie Curie", "partial")
        candidates = kg.candidates("which humans won the nobel prize in physics", top=5)
        assert candidates[0].name == "Nobel Prize in Physics" and not candidates[0].is_class
        human = next(c for c in candidates if c.name == "human")
        assert human.is_class and human.score < candidates[0].score  # a class never beats the entity
        assert candidates[0].as_dict()["score"] == candidates[0].score
        assert "score" not in links[0].as_dict()  # link()'s dicts are unchanged
    finally:
        kg.close()


def test_a_readable_predicate_keeps_its_name_and_gets_its_label(tmp_path) -> None:
    """Freebase names its properties too (``type.object.name`` on ``people.person.place_of_birth``): the relation
    keeps its readable id (relation whitelists and the planners read it), the label is kept beside it, and neither
    the property nor its schema triples become entities."""
    graph = _graph(_write(tmp_path, "fb.ttl", """@prefix fb: <http://rdf.freebase.com/ns/> .
@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
fb:people.person.place_of_birth fb:type.object.name "Place of birth"@en ;
  fb:type.property.expected_type fb:location.location .
fb:m.01 fb:type.object.name "Ada Lovelace"@en ; fb:people.person.place_of_birth fb:m.02 ; ex:bornIn fb:m.02 .
fb:m.02 fb:type.object.name "London"@en .
ex:bornIn rdfs:label "born in" .
"""))
    assert graph.relations == ["bornIn", "people.person.place_of_birth"]
    assert graph.relation_labels == ["born in", "Place of birth"]
    assert set(graph.entity_names) == {"Ada Lovelace", "London"}
