"""The SPARQL graph store contract (:class:`kgrag.graph.store.GraphStore`), written once and run against every
backend: the embedded pyoxigraph store, ``oxigraph serve`` through :class:`~kgrag.graph.remote_store.RemoteStore`,
and Virtuoso through the same remote store (tests/test_conformance_graph_store.py, one class per backend).

What the product relies on, checked on each backend with the same expected values:

- ``count_triples`` counts every loaded triple; ``select`` gives one ``{variable: Term}`` row per solution, an
  unbound variable absent from its row, ``[]`` for no solution; ``ask`` a bool;
- terms: IRIs ``uri``, blank nodes ``bnode``, literals with their language tag (lower-cased: ``en-gb``) or their
  datatype — none for a plain string; numbers, years, dates and booleans in canonical form (``"007"`` → ``7``,
  ``"7.50"`` → ``7.5``, ``true``); a literal typed ``xsd:string`` in the data may name that type (Virtuoso does),
  and either way the term written back into a query with :func:`kgrag.graph.sparql.literal` finds its triple;
- unicode (CJK, astral emoji, combining accents) and escaped strings (quotes, backslash, newline, tab) round-trip;
  values bound with ``literal()`` / ``iri()`` match as data only (an injection-shaped name finds its entity and
  changes nothing); a 3,000-character literal matches, a 3,000-character IRI is a lookup that finds nothing;
- the query shapes the product sends (VALUES, OPTIONAL, UNION, FILTER NOT EXISTS, GROUP BY with COUNT(DISTINCT) /
  SAMPLE / MAX, BIND(IF(isLiteral…)), STRSTARTS, REGEX, LCASE, LANGMATCHES, casts to xsd:integer / xsd:decimal,
  ORDER BY / LIMIT / DISTINCT) give the same rows; strings of one language sort by code point;
- errors are :class:`~kgrag.errors.SparqlError`: bad syntax, an ASK through ``select``, a SELECT through ``ask``,
  a CONSTRUCT through ``select``, an update through ``select``;
- on the demo KG: every entity's neighbourhood equals the CSR graph's, names are the English literals of the named
  entities, one-hop name lookups follow the CSR graph.

A backend is a subclass providing the ``backend`` fixture (a :class:`GraphBackend`, class scope) over stores loaded
from :func:`write_conformance_ntriples` and the session's demo N-Triples (``demo_ntriples``).

    .venv/bin/python -m pytest -q tests/test_conformance_graph_store.py
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kgrag.errors import SparqlError
from kgrag.graph.iri import NAME_PREDICATE, VALUE_PREDICATE, XSD
from kgrag.graph.queries import neighbourhood_query, one_hop_names
from kgrag.graph.sparql import entity_term, escape_string, iri, literal, relation_term
from kgrag.graph.store import GraphStore, Row, Term

__all__ = ["BASE", "CONFORMANCE_GRAPH", "GraphBackend", "GraphStoreContract", "write_conformance_ntriples"]

#: namespace of the conformance graph's entities and relations
BASE = "http://kgrag.test/conformance/"
#: the named graph a server loads the conformance graph into (Virtuoso)
CONFORMANCE_GRAPH = "http://kgrag.test/graph/conformance"
XSD_STRING = f"{XSD}string"
LONG_NAME = "长名" * 700 + "x" * 1600  # 3,000 characters, CJK and ASCII

#: entity id -> (name, language tag): the names of the conformance graph
NAMES: dict[str, tuple[str, str]] = {
    "m.heat": ("Heat", "en"),
    "m.heat_gb": ("Heat", "en-GB"),
    "m.re": ("热", "zh"),
    "m.quoted": ('say "hi"\\ back\nslash\ttab', "en"),
    "m.unicode": ("Ünïcödé 𝄞 😀 e\u0301", "en"),
    "m.injection": ('"} ; DROP ALL ; SELECT * { ?s ?p "', "en"),
    "m.long": (LONG_NAME, "en"),
    "m.apple": ("apple", "en"),
    "m.apple_upper": ("Apple", "en"),
    "m.zebra": ("Zebra", "en"),
}
#: (head, relation, tail) between entities
EDGES = [
    ("m.heat", "film.directed_by", "m.re"),
    ("m.heat", "film.starred", "m.quoted"),
    ("m.heat", "film.starred", "m.unicode"),
    ("m.quoted", "film.directed_by", "m.re"),
    ("m.heat", "film.year", "m.y1995"),
]
#: value entity -> (lexical form in the data, XSD type, canonical form every backend answers)
VALUES: dict[str, tuple[str, str, str]] = {
    "m.y1995": ("1995", "gYear", "1995"),
    "m.y2001": ("2001", "gYear", "2001"),
    "m.n42": ("42", "integer", "42"),
    "m.n7": ("007", "integer", "7"),
    "m.d75": ("7.50", "decimal", "7.5"),
    "m.d15": ("1.5E0", "double", "1.5"),
    "m.yes": ("true", "boolean", "true"),
    "m.no": ("false", "boolean", "false"),
    "m.leap": ("2020-02-29", "date", "2020-02-29"),
}
#: entity -> (the note's N-Triples object, its value): plain, typed xsd:string, empty
NOTES = {"m.plain": ('"plain"', "plain"), "m.typed": (f'"typed"^^<{XSD_STRING}>', "typed"), "m.empty": ('""', "")}


def _e(entity: str) -> str:
    return entity_term(BASE, entity)


def _r(relation: str) -> str:
    return relation_term(BASE, relation)


def conformance_lines() -> list[str]:
    """The conformance graph as N-Triples lines, written with the product's own escaping."""
    name = _r(NAME_PREDICATE)
    lines = [f'{_e(e)} {name} "{escape_string(text)}"@{lang} .\n' for e, (text, lang) in NAMES.items()]
    lines += [f"{_e(h)} {_r(r)} {_e(t)} .\n" for h, r, t in EDGES]
    lines += [f'{_e(e)} {_r(VALUE_PREDICATE)} "{lexical}"^^<{XSD}{kind}> .\n' for e, (lexical, kind, _) in VALUES.items()]
    lines += [f"{_e(e)} {_r('note')} {obj} .\n" for e, (obj, _) in NOTES.items()]
    lines += [f'_:b1 {_r("note")} "blank" .\n', f"{_e('m.heat')} {_r('see')} _:b1 .\n"]
    return lines


def write_conformance_ntriples(directory: Path) -> Path:
    """Write the conformance graph to ``directory/conformance.nt`` (the only file there a loader should take)."""
    path = Path(directory) / "conformance.nt"
    path.write_text("".join(conformance_lines()), encoding="utf-8")
    return path


@dataclass
class GraphBackend:
    """One backend under test: a store holding the conformance graph, one holding the demo KG."""

    name: str
    conformance: GraphStore
    demo: GraphStore


def _uri(entity: str) -> Term:
    return Term("uri", BASE + entity)


def _values(rows: list[Row], *names: str) -> list[tuple[str | None, ...]]:
    return [tuple(row[n].value if n in row else None for n in names) for row in rows]


def _local(rows: list[Row], name: str) -> list[str]:
    return [row[name].value.removeprefix(BASE) for row in rows]


class GraphStoreContract:
    """The suite; a backend's class in tests/ subclasses it and provides ``backend`` (see the module docstring)."""

    @pytest.fixture(scope="class")
    @classmethod
    def backend(cls) -> GraphBackend:
        pytest.fail(f"{cls.__name__} must provide the `backend` fixture (a GraphBackend)", pytrace=False)

    @pytest.fixture(scope="class")
    @classmethod
    def store(cls, backend: GraphBackend) -> GraphStore:
        return backend.conformance

    # ------------------------------------------------------------------ counts, rows, empty results
    def test_count_triples_counts_every_loaded_triple(self, store: GraphStore) -> None:
        assert store.count_triples() == len(conformance_lines())
        count = store.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        assert count == [{"n": Term("literal", str(len(conformance_lines())), None, f"{XSD}integer")}]

    def test_rows_map_variables_to_terms(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?s ?o WHERE {{ ?s {_r('film.directed_by')} ?o }} ORDER BY ?s")
        assert rows == [{"s": _uri("m.heat"), "o": _uri("m.re")}, {"s": _uri("m.quoted"), "o": _uri("m.re")}]
        assert store.select(f"SELECT ?p WHERE {{ {_e('m.heat')} ?p {_e('m.re')} }}") == [
            {"p": _uri("film.directed_by")}]

    def test_unbound_variables_are_absent_from_their_row(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?e ?d WHERE {{ VALUES ?e {{ {_e('m.heat')} {_e('m.re')} }} "
                            f"OPTIONAL {{ ?e {_r('film.directed_by')} ?d }} }} ORDER BY ?e")
        assert rows == [{"e": _uri("m.heat"), "d": _uri("m.re")}, {"e": _uri("m.re")}]

    def test_no_solution_is_an_empty_list_and_ask_answers_a_bool(self, store: GraphStore) -> None:
        assert store.select(f"SELECT ?p ?o WHERE {{ {_e('m.nothing')} ?p ?o }}") == []
        assert store.select(f"SELECT ?s WHERE {{ ?s {_r('film.directed_by')} {_e('m.heat')} }}") == []
        assert store.ask(f"ASK {{ {_e('m.heat')} {_r('film.directed_by')} {_e('m.re')} }}") is True
        assert store.ask(f"ASK {{ {_e('m.re')} {_r('film.directed_by')} {_e('m.heat')} }}") is False

    # ------------------------------------------------------------------ literals
    def test_names_keep_their_language_tags(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?e ?n (LANG(?n) AS ?l) WHERE {{ ?e {_r(NAME_PREDICATE)} ?n }}")
        got = {r["e"].value.removeprefix(BASE): r["n"] for r in rows}
        assert got == {e: Term("literal", text, lang.lower()) for e, (text, lang) in NAMES.items()}
        assert {r["l"] for r in rows} == {Term("literal", lang.lower()) for _, lang in NAMES.values()}
        english = store.select(f"SELECT ?e WHERE {{ ?e {_r(NAME_PREDICATE)} ?n "
                               f'FILTER(LANGMATCHES(LANG(?n), "en")) }}')
        assert sorted(_local(english, "e")) == sorted(e for e, (_, lang) in NAMES.items() if lang.startswith("en"))

    def test_plain_and_string_typed_literals(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?e ?o (LANG(?o) AS ?l) (STR(DATATYPE(?o)) AS ?dt) WHERE {{ "
                            f"?e {_r('note')} ?o FILTER(isIRI(?e)) }}")
        got = {r["e"].value.removeprefix(BASE): r for r in rows}
        assert set(got) == set(NOTES)
        for entity, (_, value) in NOTES.items():
            term = got[entity]["o"]
            assert (term.kind, term.value, term.lang) == ("literal", value, None), entity
            assert term.datatype in ((None, XSD_STRING) if entity == "m.typed" else (None,)), (entity, term)
            assert got[entity]["l"].value == "" and got[entity]["dt"].value == XSD_STRING

    def test_typed_values_come_back_in_canonical_form(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?e ?v WHERE {{ ?e {_r(VALUE_PREDICATE)} ?v }}")
        got = {r["e"].value.removeprefix(BASE): r["v"] for r in rows}
        assert got == {e: Term("literal", canonical, None, f"{XSD}{kind}")
                       for e, (_, kind, canonical) in VALUES.items()}

    def test_a_term_written_back_into_a_query_finds_its_triple(self, store: GraphStore) -> None:
        """What the query-graph executor does with an answer (``literal(term.value, term.lang, term.datatype)``):
        every literal and IRI of the graph, bound in VALUES, finds the triples it came from."""
        rows = store.select("SELECT ?s ?p ?o WHERE { ?s ?p ?o FILTER(!isBlank(?s) && !isBlank(?o)) }")
        assert len(rows) == len(conformance_lines()) - 2  # the two triples of the blank node left out

        def term(t: Term) -> str:
            return iri(t.value) if t.kind == "uri" else literal(t.value, t.lang, None if t.lang else t.datatype)

        for row in rows:
            found = store.select(f"SELECT ?s WHERE {{ VALUES ?o {{ {term(row['o'])} }} ?s {term(row['p'])} ?o }}")
            assert row["s"] in [r["s"] for r in found], row

    def test_unicode_and_escaped_strings_round_trip(self, store: GraphStore) -> None:
        for entity in ("m.quoted", "m.unicode", "m.re"):
            text, lang = NAMES[entity]
            rows = store.select(f"SELECT ?n (STRLEN(?n) AS ?len) WHERE {{ {_e(entity)} {_r(NAME_PREDICATE)} ?n }}")
            assert rows == [{"n": Term("literal", text, lang), "len": Term("literal", str(len(text)), None,
                                                                            f"{XSD}integer")}], entity
        bound = " ".join(literal(*NAMES[e]) for e in ("m.quoted", "m.unicode", "m.re"))
        rows = store.select(f"SELECT ?e WHERE {{ VALUES ?n {{ {bound} }} ?e {_r(NAME_PREDICATE)} ?n }} ORDER BY ?e")
        assert sorted(_local(rows, "e")) == ["m.quoted", "m.re", "m.unicode"]

    def test_bound_values_match_as_data_only(self, store: GraphStore) -> None:
        """An injection-shaped name, escaped by ``literal()``, finds its own entity and nothing else; the store
        is unchanged afterwards. An IRI that would break out of ``<…>`` is refused before any query."""
        before = store.count_triples()
        text, lang = NAMES["m.injection"]
        rows = store.select(f"SELECT ?e WHERE {{ ?e {_r(NAME_PREDICATE)} {literal(text, lang)} }}")
        assert _local(rows, "e") == ["m.injection"]
        assert store.ask(f"ASK {{ ?e {_r(NAME_PREDICATE)} {literal(text, lang)} }}") is True
        assert store.select(f"SELECT ?e WHERE {{ ?e {_r(NAME_PREDICATE)} {literal(text + ' ')} }}") == []
        for bad in (BASE + "x> ?p ?o } DELETE WHERE { ?s ?p ?o } #", BASE + "a b"):
            with pytest.raises(ValueError, match="invalid IRI"):
                iri(bad)
        with pytest.raises(ValueError, match="invalid language tag"):
            literal("x", 'en" } DROP ALL {')
        assert store.count_triples() == before

    def test_long_literals_match_and_long_iris_find_nothing(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?e WHERE {{ ?e {_r(NAME_PREDICATE)} {literal(LONG_NAME, 'en')} }}")
        assert _local(rows, "e") == ["m.long"]
        assert store.select(f"SELECT * WHERE {{ {iri(BASE + 'm.' + 'a' * 3000)} ?p ?o }}") == []

    # ------------------------------------------------------------------ the query shapes the product sends
    def test_grouped_counts_samples_and_maxima(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?p (COUNT(DISTINCT ?o) AS ?n) (SAMPLE(?o) AS ?any) WHERE {{ ?s ?p ?o "
                            f'FILTER(STRSTARTS(STR(?p), "{BASE}film.")) }} GROUP BY ?p ORDER BY ?p')
        assert _values(rows, "p", "n") == [(f"{BASE}film.directed_by", "1"), (f"{BASE}film.starred", "2"),
                                           (f"{BASE}film.year", "1")]
        assert rows[1]["any"] in (_uri("m.quoted"), _uri("m.unicode"))
        rows = store.select(f"SELECT (MAX(STR(DATATYPE(?v))) AS ?dt) (COUNT(?v) AS ?n) WHERE {{ "
                            f"?e {_r(VALUE_PREDICATE)} ?v }}")
        assert _values(rows, "dt", "n") == [(max(f"{XSD}{kind}" for _, kind, _ in VALUES.values()), str(len(VALUES)))]

    def test_bind_if_union_not_exists_and_distinct(self, store: GraphStore) -> None:
        rows = store.select(f'SELECT ?o ?k WHERE {{ {_e("m.heat")} ?p ?o FILTER(!isBlank(?o)) '
                            f'BIND(IF(isLiteral(?o), "literal", "node") AS ?k) }}')
        assert sorted(_values(rows, "k")) == [("literal",), *[("node",)] * 4]
        rows = store.select(f"SELECT ?x WHERE {{ {{ {_e('m.heat')} {_r('film.directed_by')} ?x }} UNION "
                            f"{{ {_e('m.heat')} {_r('film.starred')} ?x }} }}")
        assert sorted(_local(rows, "x")) == ["m.quoted", "m.re", "m.unicode"]
        rows = store.select(f"SELECT ?e WHERE {{ ?e {_r('film.directed_by')} ?d "
                            f"FILTER NOT EXISTS {{ ?e {_r('film.year')} ?y }} }}")
        assert _local(rows, "e") == ["m.quoted"]
        assert store.select(f"SELECT DISTINCT ?d WHERE {{ ?e {_r('film.directed_by')} ?d }}") == [{"d": _uri("m.re")}]
        pairs = (f"({_e('m.heat')} {_r('film.directed_by')} {_e('m.re')}) "
                 f"({_e('m.heat')} {_r('film.directed_by')} {_e('m.quoted')})")
        rows = store.select(f"SELECT ?s ?p ?o WHERE {{ VALUES (?s ?p ?o) {{ {pairs} }} ?s ?p ?o }}")
        assert rows == [{"s": _uri("m.heat"), "p": _uri("film.directed_by"), "o": _uri("m.re")}]

    def test_filters_and_casts_on_values(self, store: GraphStore) -> None:
        """The executor's year and number filters (kgrag.query_graph.sparql): a REGEX on the lexical form, then
        a cast, ordered by the cast value."""
        years = store.select(f"SELECT ?e (<{XSD}integer>(SUBSTR(STR(?v), 1, 4)) AS ?y) WHERE {{ "
                             f'?e {_r(VALUE_PREDICATE)} ?v FILTER(REGEX(STR(?v), "^[0-9]{{4}}")) }} ORDER BY DESC(?y)')
        assert _values(years, "y") == [("2020",), ("2001",), ("1995",)]
        assert {r["y"].datatype for r in years} == {f"{XSD}integer"}
        numbers = store.select(f"SELECT ?e (<{XSD}decimal>(STR(?v)) AS ?d) WHERE {{ ?e {_r(VALUE_PREDICATE)} ?v "
                               f'FILTER(REGEX(STR(?v), "^[+-]?[0-9]+([.][0-9]*)?$")) }} ORDER BY ?d')
        assert [float(v) for (v,) in _values(numbers, "d")] == [1.5, 7, 7.5, 42, 1995, 2001]
        rows = store.select(f"SELECT ?e WHERE {{ ?e {_r(NAME_PREDICATE)} ?n "
                            f'FILTER(LCASE(STR(?n)) = "heat") }}')
        assert sorted(_local(rows, "e")) == ["m.heat", "m.heat_gb"]

    def test_strings_of_one_language_sort_by_code_point_and_limit_cuts(self, store: GraphStore) -> None:
        """ORDER BY on names of one language sorts by code point (ASCII case, accents, CJK, a 3,000-character
        name); between language tags the order is the backend's own (Virtuoso sorts by the tag first)."""
        english = sorted(text for text, lang in NAMES.values() if lang == "en")
        query = f'SELECT ?n WHERE {{ ?e {_r(NAME_PREDICATE)} ?n FILTER(LANG(?n) = "en") }} ORDER BY ?n'
        assert [r["n"].value for r in store.select(query)] == english
        assert [r["n"].value for r in store.select(query + " LIMIT 3")] == english[:3]
        descending = store.select(query.replace("ORDER BY ?n", "ORDER BY DESC(?n)") + " LIMIT 2")
        assert [r["n"].value for r in descending] == english[::-1][:2]

    def test_blank_nodes_are_bnode_terms_that_join(self, store: GraphStore) -> None:
        rows = store.select(f"SELECT ?b ?o WHERE {{ {_e('m.heat')} {_r('see')} ?b . ?b {_r('note')} ?o }}")
        assert len(rows) == 1 and rows[0]["b"].kind == "bnode" and rows[0]["o"] == Term("literal", "blank")

    # ------------------------------------------------------------------ errors
    @pytest.mark.parametrize(("call", "query"), [
        ("select", "SELECT ?x WHERE { this is not sparql }"),
        ("ask", "ASK { this is not sparql }"),
        ("select", "ASK { ?s ?p ?o }"),
        ("ask", "SELECT * WHERE { ?s ?p ?o }"),
        ("select", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"),
        ("select", f"INSERT DATA {{ {iri(BASE + 'a')} {iri(BASE + 'b')} {iri(BASE + 'c')} }}"),
    ])
    def test_errors_are_sparql_errors(self, store: GraphStore, call: str, query: str) -> None:
        before = store.count_triples()
        method: Callable[[str], Any] = getattr(store, call)
        with pytest.raises(SparqlError, match=r"needs an? (SELECT|ASK) query|invalid SPARQL|rejected the query"):
            method(query)
        assert store.count_triples() == before

    # ------------------------------------------------------------------ the demo KG against its CSR graph
    def test_demo_counts_every_triple_of_its_file(self, backend: GraphBackend, demo_ntriples: tuple[Path, Any]) -> None:
        path, _ = demo_ntriples
        assert backend.demo.count_triples() == len(path.read_text(encoding="utf-8").splitlines())

    def test_demo_neighbourhoods_equal_the_csr_graph(self, backend: GraphBackend,
                                                     demo_ntriples: tuple[Path, Any]) -> None:
        _, graph = demo_ntriples
        base, checked = graph.iri_base, 0
        for idx in range(0, graph.num_entities, max(1, graph.num_entities // 25)):
            expected = sorted((graph.entity_ids[graph.key_index[h]], r, graph.entity_ids[graph.key_index[t]])
                              for h, r, t in graph.neighbourhood(idx))
            rows = backend.demo.select(neighbourhood_query(base, graph.entity_ids[idx]))
            assert sorted(tuple(r[k].value.removeprefix(base) for k in "spo") for r in rows) == expected
            checked += 1
        assert checked >= 20

    def test_demo_names_are_english_literals_of_the_named_entities(self, backend: GraphBackend,
                                                                   demo_ntriples: tuple[Path, Any]) -> None:
        _, graph = demo_ntriples
        rows = backend.demo.select(f"SELECT ?s ?n WHERE {{ ?s {relation_term(graph.iri_base, NAME_PREDICATE)} ?n }}")
        expected = {(graph.entity_ids[i], name) for i, name in enumerate(graph.entity_names) if name}
        assert {(r["s"].value.removeprefix(graph.iri_base), r["n"].value) for r in rows} == expected
        assert len(rows) == len(expected) and {r["n"].lang for r in rows} == {"en"}

    def test_demo_one_hop_names_follow_the_csr_graph(self, backend: GraphBackend,
                                                     demo_ntriples: tuple[Path, Any]) -> None:
        _, graph = demo_ntriples
        for edge in range(0, len(graph.head), max(1, len(graph.head) // 10)):
            head, rel = int(graph.head[edge]), graph.relations[graph.rel[edge]]
            tails = {int(graph.tail[e]) for e in graph.out_edges(head).tolist() if graph.relations[graph.rel[e]] == rel}
            expected = sorted(graph.entity_names[t] or graph.entity_ids[t] for t in tails)
            got = one_hop_names(backend.demo, graph.iri_base, graph.entity_ids[head], rel)
            assert sorted(got) == expected, (graph.entity_ids[head], rel)
