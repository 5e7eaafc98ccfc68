"""The linker's scored candidates on questions as people type them (kgrag.hrag.online.linker.candidates), on a
small Freebase-style Turtle graph written here: a name's first words, partial names bounded by content words, the
degree prior, schema words and function words, case, numbers and nested spans."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgrag.data.triples import read_triple_files
from kgrag.graph.imported import imported_csr
from kgrag.hrag.online.linker import EntityLinker

# Freebase-style: readable relations whose words (currency, language, school, governor…) are common words here
GRAPH = """@prefix fb: <http://rdf.freebase.com/ns/> .
@prefix ex: <http://example.org/> .
fb:m.usa fb:type.object.name "United States of America"@en ; fb:location.country.currency_used ex:usd ;
  fb:location.country.official_language ex:english ; fb:location.country.capital ex:dc ;
  fb:government.governmental_jurisdiction.governing_officials ex:obama ; fb:location.location.contains ex:ohio .
fb:m.pres fb:type.object.name "President of the United States"@en ; fb:government.office.holder ex:obama .
fb:m.nike fb:type.object.name "Nike, Inc."@en ; fb:organization.organization.founders ex:knight ;
  fb:business.company.subsidiaries ex:converse ; fb:organization.organization.headquarters ex:beaverton .
fb:m.mlk fb:type.object.name "Martin Luther King, Jr."@en ; fb:people.person.education ex:morehouse ;
  fb:people.person.place_of_birth ex:atlanta .
fb:m.martin fb:type.object.name "Martin"@en .
fb:m.speak fb:type.object.name "Speak"@en ; fb:film.film.genre ex:drama .
fb:m.brazil fb:type.object.name "Brazil"@en ; fb:location.country.official_language ex:portuguese ;
  fb:location.country.currency_used ex:real ; fb:location.country.capital ex:brasilia .
fb:m.currency fb:type.object.name "Currency"@en .
fb:m.italy fb:type.object.name "Italy"@en ; fb:location.country.currency_used ex:euro .
fb:m.y1991 fb:type.object.name "1991"@en .
fb:m.tupac fb:type.object.name "Tupac Shakur"@en ; fb:film.actor.film ex:juice ; fb:people.person.place_of_birth ex:nyc .
fb:m.romney fb:type.object.name "Mitt Romney"@en ; fb:government.politician.party ex:gop ;
  fb:people.person.place_of_birth ex:detroit ; fb:people.person.children ex:tagg ; fb:people.person.spouse_s ex:ann .
fb:m.governor fb:type.object.name "Governor"@en ; fb:film.film.genre ex:drama .
ex:usd fb:type.object.name "US dollar"@en .
ex:obama fb:type.object.name "Barack Obama"@en .
ex:dc fb:type.object.name "Washington, D.C."@en .
"""


@pytest.fixture(scope="module")
def linker(tmp_path_factory) -> EntityLinker:
    path: Path = tmp_path_factory.mktemp("kg") / "kg.ttl"
    path.write_text(GRAPH, encoding="utf-8")
    return EntityLinker.from_graph(imported_csr(read_triple_files([path]), "fb", "http://x/", "en"))


def _first(linker: EntityLinker, text: str) -> str:
    found = linker.candidates(text, top=5)
    assert found, text
    return found[0].link.name


@pytest.mark.parametrize(("text", "expected"), [
    ("what form of government does the united states have?", "United States of America"),  # first words
    ("what company does nike own?", "Nike, Inc."),
    ("what degree did martin luther king earn?", "Martin Luther King, Jr."),  # not "Martin" inside it
    ("what currency is used in italy", "Italy"),  # "currency" is a word of the graph's schema
    ("what language do people speak in brazil?", "Brazil"),  # Speak has one edge, Brazil many
    ("Which movie did Tupac act in, and that was released in 1991?", "Tupac Shakur"),  # a number is a value
    ("What language do people speak in Brazil?", "Brazil"),  # a cased text writes names capitalised
])
def test_the_topic_comes_first(linker: EntityLinker, text: str, expected: str) -> None:
    assert _first(linker, text) == expected


def test_partial_names_start_and_end_on_content_words(linker: EntityLinker) -> None:
    assert "united states" in linker.suffix_index and "the united states" not in linker.suffix_index
    assert "of the united states" not in linker.suffix_index
    assert "the united states" in linker.partial_index  # link()'s surnames index is as it was
    assert "united states" in linker.prefix_index and "united states of" not in linker.prefix_index
    assert "nike" in linker.prefix_index and "martin luther king" in linker.prefix_index


def test_scores_weigh_words_case_and_degree(linker: EntityLinker) -> None:
    scores = {c.link.name: c.score for c in linker.candidates("what currency is used in italy", top=5)}
    assert scores["Italy"] > scores["Currency"]
    lower = {c.link.name: c.score for c in linker.candidates("What language do people speak in Brazil?", top=5)}
    assert lower["Brazil"] > lower["Speak"]
    capital = {c.link.name: c.score for c in linker.candidates("What did Speak win in Brazil?", top=5)}
    assert capital["Speak"] > lower["Speak"]  # written capitalised, it is the name
    years = {c.link.name: c.score for c in linker.candidates("what happened in 1991", top=5)}
    assert 0 < years["1991"] < 0.5  # still a candidate when nothing else is
    surname = linker.candidates("when did romney become governor?", top=5)
    assert {c.link.name for c in surname} >= {"Mitt Romney", "Governor"}
    assert all(0 < c.score <= 1 for c in surname)


def test_link_is_unchanged_by_the_candidate_rules(linker: EntityLinker) -> None:
    """link() keeps its own order (MetaQA's linking, pinned by its tests): first words and the word rules are the
    candidates' only — here, with no type triples to mark Currency a class, link() still takes the longer span."""
    assert [lk.name for lk in linker.link("what company does nike own?", top=3)] == []
    assert linker.link("what currency is used in italy")[0].name == "Currency"
