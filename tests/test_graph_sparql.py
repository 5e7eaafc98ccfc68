"""SPARQL building blocks refuse anything that could change a query."""

from __future__ import annotations

import pytest

from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.graph.sparql import entity_term, escape_string, iri, literal, relation_term

NS = "http://rdf.freebase.com/ns/"
HOSTILE = ['m.0abc"}', "m.0abc> ; DROP", "m.0abc\n}", "http://evil/x", "m.0ABC", "ｍ.0abc", "m.0abc }", "", "m."]


@pytest.mark.parametrize("bad", HOSTILE)
def test_entity_term_rejects_hostile_ids(bad):
    with pytest.raises(ValueError):
        entity_term(NS, bad)


@pytest.mark.parametrize("bad", ["a b", "a}", 'a"', "a.b.", ".a", "a;DROP", "a\nb", "a>b", "rel.ä"])
def test_relation_term_rejects_hostile_names(bad):
    with pytest.raises(ValueError):
        relation_term(NS, bad)


def test_valid_terms():
    assert entity_term(NS, "m.0d3k_x") == f"<{NS}m.0d3k_x>"
    assert relation_term(NS, "people.person.spouse_s") == f"<{NS}people.person.spouse_s>"
    assert iri("http://x/y") == "<http://x/y>"
    with pytest.raises(ValueError):
        iri("http://x/y> <z")


@pytest.mark.parametrize("text", ['He said "hi"', "back\\slash", "new\nline\ttab", '"} ; DROP ALL', "中文\u2028x", "\x00\x1f"])
def test_literal_round_trips_through_a_real_query(text):
    store = OxigraphStore()
    rows = store.select(f"SELECT ?v WHERE {{ BIND({literal(text, lang='en')} AS ?v) }}")
    assert rows[0]["v"].value == text and rows[0]["v"].lang == "en"
    assert "\n" not in escape_string(text)


def test_literal_rejects_bad_language_tag():
    with pytest.raises(ValueError):
        literal("x", lang='en" }')
