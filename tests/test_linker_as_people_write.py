"""Linking questions as people type them (kgrag.hrag.online.linker) on a graph imported from a small Turtle file:
lowercase names, surnames with a degree prior, possessives, plurals, a dropped article, other names, class nodes
that never beat the entity asked about, and the scored candidates a planner picks from."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgrag.data.triples import read_triple_files
from kgrag.graph.classes import class_rows
from kgrag.graph.imported import imported_csr
from kgrag.hrag.online.linker import MAX_PARTIAL_ROWS, EntityLinker

GRAPH = """@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix fb: <http://rdf.freebase.com/ns/> .
ex:italy rdfs:label "Italy" ; a ex:Country ; ex:currency ex:euro, ex:lira ; ex:capital ex:rome .
ex:france rdfs:label "France" ; a ex:Country ; ex:currency ex:euro .
ex:euro rdfs:label "Euro" ; a ex:Currency ; fb:common.topic.alias "EUR", "single currency" .
ex:lira rdfs:label "Italian lira" ; a ex:Currency .
ex:Currency rdfs:label "Currency" .
ex:Country rdfs:label "Country" .
ex:rome rdfs:label "Rome" ; a ex:City .
ex:mitt rdfs:label "Mitt Romney" ; ex:party ex:gop ; ex:born ex:detroit ; ex:child ex:tagg ; ex:spouse ex:ann .
ex:george rdfs:label "George W. Romney" ; ex:child ex:mitt .
ex:tagg rdfs:label "Tagg Romney" .
ex:ann rdfs:label "Ann Romney" .
ex:gop rdfs:label "Republican Party" .
ex:detroit rdfs:label "Detroit" .
ex:beatles rdfs:label "The Beatles" ; ex:member ex:john .
ex:john rdfs:label "John Lennon" ; ex:award ex:nobel .
ex:nobel rdfs:label "Nobel Prize" .
ex:einstein rdfs:label "Albert Einstein" ; ex:award ex:nobel ; ex:born ex:ulm .
ex:ulm rdfs:label "Ulm" .
"""


@pytest.fixture(scope="module")
def linker(tmp_path_factory) -> EntityLinker:
    path: Path = tmp_path_factory.mktemp("kg") / "kg.ttl"
    path.write_text(GRAPH, encoding="utf-8")
    return EntityLinker.from_graph(imported_csr(read_triple_files([path]), "people", "http://x/", "en"))


def _top(linker: EntityLinker, text: str) -> tuple[str, str, str]:
    links = linker.link(text)
    assert links, text
    return links[0].name, links[0].match_type, text[links[0].start : links[0].end]


def test_class_nodes_are_known_from_the_type_relation(linker: EntityLinker) -> None:
    assert {linker.names[r] for r in linker.is_class.nonzero()[0].tolist()} == {"Currency", "Country", "City"}


@pytest.mark.parametrize(("text", "expected"), [
    ("who is mitt romney married to", ("Mitt Romney", "normalised", "mitt romney")),  # lowercase
    ("where was romney born", ("Mitt Romney", "partial", "romney")),  # a surname: the most connected Romney
    ("where was Einstein born", ("Albert Einstein", "partial", "Einstein")),
    ("which party is Romney's", ("Mitt Romney", "partial", "Romney")),  # a possessive surname
    ("what prize did Einstein's wife win", ("Albert Einstein", "partial", "Einstein")),
    ("who won the Nobel Prizes", ("Nobel Prize", "normalised", "Nobel Prizes")),  # a plural
    ("who played in the beatles", ("The Beatles", "normalised", "the beatles")),
    ("who were Beatles members", ("The Beatles", "normalised", "Beatles")),  # the article dropped
    ("which countries use EUR", ("Euro", "alias", "EUR")),  # an other name read at import
    ("where is the single currency used", ("Euro", "alias", "single currency")),
    ("what currency is used in italy", ("Italy", "normalised", "italy")),  # not the class Currency
    ("what currencies does Italy use", ("Italy", "exact", "Italy")),
    ("what is the capital of italy", ("Italy", "normalised", "italy")),
])
def test_names_as_people_write_them(linker: EntityLinker, text: str, expected: tuple[str, str, str]) -> None:
    assert _top(linker, text) == expected


def test_a_class_is_linked_when_nothing_else_is(linker: EntityLinker) -> None:
    assert _top(linker, "list every currency")[:2] == ("Currency", "normalised")
    assert _top(linker, "how many countries are there")[:2] == ("Country", "normalised")
    assert [lk.name for lk in linker.link("what currency is used in italy", top=2)] == ["Italy", "Currency"]
    assert linker.topics("what currency is used in italy")[1] == "what currency is used in [italy]"


def test_surnames_rank_by_degree_and_brackets_take_them_too(linker: EntityLinker) -> None:
    ranked = [lk.name for lk in linker.link("where was romney born", top=4)]
    assert ranked[0] == "Mitt Romney" and set(ranked) == {"Mitt Romney", "George W. Romney", "Tagg Romney",
                                                          "Ann Romney"}
    assert _top(linker, "where was [romney] born")[:2] == ("Mitt Romney", "partial")
    assert _top(linker, "what is [EUR]")[:2] == ("Euro", "alias")


def test_common_words_are_no_partial_names() -> None:
    names = [f"Town {i} River" for i in range(MAX_PARTIAL_ROWS + 1)] + ["Albert Einstein"]
    plain = EntityLinker(names, [1] * len(names))
    assert "river" not in plain.partial_index and "einstein" in plain.partial_index
    assert "town 3 river" in plain.index and plain.link("a long river") == []


def test_candidates_are_scored_and_flag_classes(linker: EntityLinker) -> None:
    found = linker.candidates("what currency is used in italy", top=5)
    assert [c.link.name for c in found][:2] == ["Italy", "Currency"]
    assert not found[0].is_class and found[1].is_class and found[0].score > found[1].score
    assert all(0 < c.score <= 1 for c in found)
    assert len({c.link.entity for c in found}) == len(found)
    surname = linker.candidates("where was romney born", top=5)
    assert surname[0].link.name == "Mitt Romney" and {c.link.match_type for c in surname} == {"partial"}
    assert [c.score for c in surname] == sorted((c.score for c in surname), reverse=True)
    # a full name and the shorter names inside the question are all candidates, the full name best
    full = linker.candidates("did john lennon win the nobel prize", top=5)
    assert [c.link.name for c in full][:2] in (["John Lennon", "Nobel Prize"], ["Nobel Prize", "John Lennon"])
    assert linker.candidates("") == [] and linker.candidates("what is the weather like") == []


def test_graphs_without_types_have_no_classes(tmp_path) -> None:
    path = tmp_path / "kb.tsv"
    path.write_text("Blade Runner\tdirected_by\tRidley Scott\n")
    graph = imported_csr(read_triple_files([path]), "t", "http://x/", "en")
    assert class_rows(graph).size == 0
