"""A hostile ``<kg-query>`` gets the spec's error text (kg-tools.md), never a modified SPARQL query.

Every query the tools send goes through :class:`RecordingStore`, a :class:`GraphStore` that delegates to the
real store (embedded pyoxigraph, a real ``oxigraph serve-read-only`` over HTTP, or a real Virtuoso 7 with the
demo KG in a named graph) and records the query text.
For each hostile input we check:

- the answer is exactly the spec's error (unknown entity, relation not in the latest predicate list, unparsable
  query), or the normal answer when the input is harmless (e.g. a real name with extra whitespace);
- every recorded query parses with pyoxigraph's SPARQL parser;
- a hostile entity NAME reaches SPARQL only as one escaped literal: the query equals, character for character,
  the query made for a benign name once that literal is swapped for the benign one, and the literal's value is
  exactly the hostile text (evaluated with ``BIND``). So nothing of the payload lies outside the literal;
- a hostile RELATION (or entity id) never reaches SPARQL at all.

The session keeps working after all of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyoxigraph as ox
import pytest
from fixtures.virtuoso_server import DEMO_GRAPH

from kgrag.data.demo import demo_kg
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.sparql import literal
from kgrag.graph.store import GraphStore, Row
from kgrag.tools import KGClient, KGSession, KGToolsConfig
from kgrag.tools.parse import GetRelations, GetTriples, ParseError, extract_query, parse_query

ENTITY_ERROR = "Invalid entity. Use an entity returned by the previous step and copy it exactly."
BENIGN = "zz benign name zz"

_KG = demo_kg()
FRANCE = "m.0v2j_"
assert _KG.names[FRANCE] == "France"


class RecordingStore(GraphStore):
    """Delegates to ``inner`` and records every query string it is asked to run."""

    def __init__(self, inner: GraphStore) -> None:
        self.inner = inner
        self.location = f"recording({inner.location})"
        self.queries: list[str] = []

    def select(self, query: str, timeout: float | None = None) -> list[Row]:
        self.queries.append(query)
        return self.inner.select(query, timeout=timeout)

    def ask(self, query: str, timeout: float | None = None) -> bool:
        self.queries.append(query)
        return self.inner.ask(query, timeout=timeout)

    def count_triples(self) -> int:
        return self.inner.count_triples()


@dataclass
class Backend:
    name: str
    inner: GraphStore
    survivor: KGSession  # sees every hostile input of this module, then must still work
    survivor_inputs: list[str] = field(default_factory=list)

    def session(self) -> tuple[KGSession, RecordingStore]:
        rec = RecordingStore(self.inner)
        return KGSession(KGClient(rec), config=KGToolsConfig(max_calls=10**6)), rec

    def run(self, session: KGSession, rec: RecordingStore, text: str) -> tuple[str, list[str]]:
        """Run ``text`` on ``session`` (and on the survivor); the answer and the queries it sent."""
        rec.queries.clear()
        result = session.run(text)
        assert isinstance(result, str)
        self.survivor_inputs.append(text)
        assert isinstance(self.survivor.run(text), str)
        return result, list(rec.queries)


@pytest.fixture(scope="module", params=["embedded", "remote", "virtuoso"])
def backend(request, demo_ntriples, tmp_path_factory) -> Iterator[Backend]:
    if request.param == "embedded":
        path, _ = demo_ntriples
        target = tmp_path_factory.mktemp("tools-injection") / "s"
        build_store(path, target)
        inner: GraphStore = OxigraphStore(target, read_only=True)
    elif request.param == "virtuoso":  # Virtuoso 7 with the demo KG in a named graph (fixtures/virtuoso_server)
        inner = RemoteStore(request.getfixturevalue("virtuoso").url, timeout=30, graph=DEMO_GRAPH)
    else:
        inner = RemoteStore(request.getfixturevalue("oxigraph_server").url, timeout=30)
    survivor = KGSession(KGClient(RecordingStore(inner)), config=KGToolsConfig(max_calls=10**6))
    yield Backend(request.param, inner, survivor)
    inner.close()


# ---------------------------------------------------------------------------------------------- helpers
_EMPTY = ox.Store()
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\r]|\\.)*"')


def assert_parses(query: str) -> None:
    try:
        _EMPTY.query(query)
    except SyntaxError as exc:  # pragma: no cover - the failure message is the point
        pytest.fail(f"recorded query does not parse: {exc}\n{query}")


def literal_value(lit: str) -> str:
    rows = list(_EMPTY.query(f"SELECT ?x WHERE {{ BIND({lit} AS ?x) }}"))
    return rows[0]["x"].value


def without_literals(query: str) -> str:
    return _STRING_LITERAL.sub('""', query)


def call(tool: str, entity: str, relations: list[str] | None = None, wrap: bool = True) -> str:
    """A ``<kg-query>`` for ``entity`` with a quote that survives the payload."""
    q = '"' if '"' not in entity else "'"
    if tool == "get_relations":
        text = f"get_relations({q}{entity}{q})"
    else:
        items = ", ".join(f"'{r}'" if '"' in r else f'"{r}"' for r in relations or [])
        text = f"get_triples({q}{entity}{q}, [{items}])"
    return f"<kg-query>{text}</kg-query>" if wrap else text


def relation_error(rel: str) -> str:
    return f"The relation '{rel}' is not in the latest predicate list."


# ---------------------------------------------------------------------------------------------- payloads
#: hostile strings used as an entity: each must give the spec's entity error
ENTITY_PAYLOADS = {
    "double-quote": '"',
    "single-quote": "'",
    "quotes": "\"'\"'\"",
    "backslash": "\\",
    "escaped-quote": '\\"',
    "trailing-backslash": "France\\",
    "braces": "{ }",
    "close-brace": "}",
    "drop-all": "} ; DROP ALL",
    "union": '"} UNION { ?s ?p ?o }',
    "union-comment": '" } UNION { ?s ?p ?o } #',
    "name-then-union": 'France"} UNION { ?e ?p ?o } #',
    "lang-tag-break": '"@en . ?e ?p ?o . #',
    "datatype-break": '"^^<http://evil/x> . ?s ?p ?o #',
    "codepoint-escape": "\\u0022} UNION { ?s ?p ?o } #",
    "codepoint-newline": "\\u000a",
    "codepoint-long": "\\U00000022 } #",
    "newline": "France\n} ; DROP ALL",
    "carriage-return": 'a\r" } #',
    "tab": "France\t} UNION {",
    "nul": "France\x00} UNION {",
    "escape-seq": "\x07\x1b[31mred",
    "del": "x\x7f",
    "nel": "a\x85b",
    "line-separators": "a\u2028b\u2029c",
    "vertical-tab": "a\x0bb\x0cc",
    "iri": "<http://evil/x>",
    "iri-braces": "<http://evil/x> } UNION { ?s ?p ?o",
    "mid-breakout": "m.0abc> . ?s ?p ?o . <x",
    "mid-breakout-real": "m.0v2j_> ?p ?o } UNION { <x",
    "mid-newline": "m.0v2j_\n} ; DROP ALL",
    "mid-space": "m.0v2j_ ?p ?o",
    "en-breakout": "en.foo> ?p ?o",
    "g-brace": "g.11b}",
    "e-bad-hash": "e.x_1234567g",
    "prefixed": "ns:m.0abc",
    "prefixed-breakout": "ns:m.0abc . ?s ?p ?o",
    "fullwidth-mid": "ｍ.０ａｂｃ",
    "rtl-mid": "m.0abc\u202e",
    "rtl-name": "\u202eecnarF",
    "zwj-mid": "m.0\u200dabc",
    "zwj-name": "Fra\u200dnce",
    "cyrillic-mid": "м.0abc",
    "cyrillic-name": "Fr\u0430nce",
    "bom-name": "\ufeffFrance",
    "combining": "Pari\u0301s",
    "variable": "?s",
    "comment": "# } DROP ALL",
    "select": "SELECT * WHERE { ?s ?p ?o }",
    "long-500": "x" * 500,
    "long-501": "y" * 501,
    "long-union": '"} UNION { ?s ?p ?o } #' * 5000,
    "long-name": "A" * 100_000,
    "empty": "",
    "blank": "   ",
}

#: harmless variants of real entities: the normal answer, as for the plain id
HARMLESS_ENTITIES = {
    "padded-name": ("  France  ", FRANCE),
    "upper-name": ("FRANCE", FRANCE),
    "lower-name": ("france", FRANCE),
    "mid-trailing-newline": (f"{FRANCE}\n", FRANCE),
    "mid-padded": (f"\t{FRANCE} ", FRANCE),
}

#: hostile relations: each must give the spec's relation error, and never reach SPARQL
RELATION_PAYLOADS = {
    "spouse-breakout": "people.person.spouse_s> ?x . ?y <p",
    "brace": "a.b}",
    "iri-breakout": "a.b> . ?s ?p ?o . <x",
    "drop-all": "} ; DROP ALL",
    "union": '"} UNION { ?s ?p ?o }',
    "iri": "<http://evil/x>",
    "foreign-iri": "http://evil/x",
    "prefixed-breakout": "ns:people.person.nationality> ?o } #",
    "newline": "people.person.nationality\n} ; DROP ALL",
    "nul": "people.person.nationality\x00",
    "rtl": "people.person.nationality\u202e",
    "zwj": "people.person\u200d.nationality",
    "cyrillic": "people.person.n\u0430tionality",
    "fullwidth": "ｐeople.person.nationality",
    "space-var": "people.person.nationality ?o",
    "slash-breakout": "people/person/nationality>",
    "variable": "?relation",
    "comment": "people.person.nationality #",
    "backslash": "people.person.nationality\\",
    "codepoint": "people.person.nationality\\u003e",
    "too-deep": "a.b.c.d.e.f.g.h.i.j.k",
    "digit-first": "1abc.def",
    "empty": "",
    "blank": "   ",
    "long": "a" * 10_000 + "> ?s ?p ?o",
}

PARSE_ERRORS = {
    "trailing-statement": 'get_relations("France")); DROP ALL; #',
    "trailing-union": 'get_relations("France") UNION { ?s ?p ?o }',
    "unquoted": "get_relations(France)",
    "unquoted-breakout": "get_relations(m.0v2j_> ?p ?o })",
    "relations-not-list": 'get_triples("France", "people.person.nationality")',
    "sparql": "SELECT * WHERE { ?s ?p ?o }",
    "drop": "DROP ALL",
    "nested-call": 'get_relations(get_relations("France"))',
    "mismatched-quotes": "get_relations(\"France')",
    "unclosed-call": "<kg-query>get_relations(\"France\"",
    "empty": "",
    "only-tag": "<kg-query></kg-query>",
    "unknown-tool": 'get_everything("France")',
    "python": "__import__('os').system('id')",
}


# ---------------------------------------------------------------------------------------------- entities
def _benign_queries(backend: Backend, tool: str, relations: list[str] | None) -> list[str]:
    session, rec = backend.session()
    rec.queries.clear()
    assert session.run(call(tool, BENIGN, relations)) == ENTITY_ERROR
    return list(rec.queries)


@pytest.mark.parametrize("tool", ["get_relations", "get_triples"])
@pytest.mark.parametrize("payload", list(ENTITY_PAYLOADS.values()), ids=list(ENTITY_PAYLOADS))
def test_hostile_entity_gives_entity_error(backend: Backend, tool: str, payload: str) -> None:
    relations = ["location.location.contains"] if tool == "get_triples" else None
    text = call(tool, payload, relations)
    parsed = parse_query(text)
    assert isinstance(parsed, GetRelations | GetTriples) and parsed.entity == payload.strip()
    session, rec = backend.session()
    result, queries = backend.run(session, rec, text)
    assert result == ENTITY_ERROR  # a fresh session: no "Last entities" part
    assert session.trace[-2] == {"type": "error", "content": ENTITY_ERROR, "entity": parsed.entity}

    entity = parsed.entity
    hostile_lit, benign_lit = literal(entity), literal(BENIGN)
    benign = _benign_queries(backend, tool, relations)
    for q in queries:
        assert_parses(q)
    if queries:  # resolved by name: the payload is one escaped literal, nothing else changed
        assert literal_value(hostile_lit) == entity
        assert [q.replace(hostile_lit, benign_lit) for q in queries] == benign
        for q in queries:
            assert q.count(hostile_lit) == 1
    # with or without a query, the payload never shows outside a literal
    for q in queries:
        if len(entity) >= 2 and entity not in "".join(benign):
            assert entity not in without_literals(q)


@pytest.mark.parametrize("tool", ["get_relations", "get_triples"])
@pytest.mark.parametrize(("variant", "mid"), list(HARMLESS_ENTITIES.values()), ids=list(HARMLESS_ENTITIES))
def test_harmless_entity_variants_answer_normally(backend: Backend, tool: str, variant: str, mid: str) -> None:
    relations = ["location.location.contains", "location.country.official_language"]
    rels = relations if tool == "get_triples" else None
    session, rec = backend.session()
    result, queries = backend.run(session, rec, call(tool, variant, rels))
    reference, _ = backend.session()
    expected = reference.run(call(tool, mid, rels))
    assert result == expected
    assert not expected.startswith((ENTITY_ERROR, "The relation", "[")) or expected.startswith("[France")
    for q in queries:
        assert_parses(q)
        if variant.strip() != mid:  # resolved by name: only as an escaped literal
            assert variant.strip() not in without_literals(q)


# ---------------------------------------------------------------------------------------------- relations
@pytest.mark.parametrize("primed", [False, True], ids=["fresh", "after-get_relations"])
@pytest.mark.parametrize("payload", list(RELATION_PAYLOADS.values()), ids=list(RELATION_PAYLOADS))
def test_hostile_relation_gives_relation_error(backend: Backend, payload: str, primed: bool) -> None:
    session, rec = backend.session()
    listed = ""
    if primed:
        listed, _ = backend.run(session, rec, call("get_relations", FRANCE))
        assert "location.location.contains" in listed.splitlines()
    text = call("get_triples", FRANCE, [payload])
    parsed = parse_query(text)
    assert isinstance(parsed, GetTriples) and parsed.relations == (payload,)
    result, queries = backend.run(session, rec, text)
    assert result.startswith(relation_error(payload)), result
    if primed:  # the spec's message lists the latest predicates
        assert result.endswith(listed)
    assert queries == []  # the entity is an id and the relation is refused: nothing reached SPARQL
    assert session.trace[-2]["type"] == "error" and session.trace[-2]["content"] == result


@pytest.mark.parametrize("payload", list(RELATION_PAYLOADS.values()), ids=list(RELATION_PAYLOADS))
def test_hostile_relation_with_named_entity_reaches_no_query(backend: Backend, payload: str) -> None:
    """Entity by name (one escaped literal query to resolve it), then the relation is refused."""
    session, rec = backend.session()
    result, queries = backend.run(session, rec, call("get_triples", "France", ["location.location.contains", payload]))
    assert result.startswith(relation_error(payload))
    for q in queries:
        assert_parses(q)
        assert literal("France") in q
        if len(payload.strip()) >= 2:
            assert payload not in q and payload.strip() not in without_literals(q)


_VALID4 = ["location.country.official_language", "location.location.contains",
           "location.location.containedby", "people.person.nationality"]
_HOSTILE6 = [RELATION_PAYLOADS[k] for k in ("spouse-breakout", "brace", "drop-all", "union", "iri", "newline")]


def _primed(backend: Backend) -> tuple[KGSession, RecordingStore, str]:
    session, rec = backend.session()
    listed, _ = backend.run(session, rec, call("get_relations", FRANCE))
    assert set(_VALID4) <= set(listed.splitlines())
    return session, rec, listed


def test_ten_relations_only_first_four_used(backend: Backend) -> None:
    session, rec, _ = _primed(backend)
    result, queries = backend.run(session, rec, call("get_triples", FRANCE, _VALID4 + _HOSTILE6))
    reference, ref_rec, _ = _primed(backend)
    expected, expected_queries = backend.run(reference, ref_rec, call("get_triples", FRANCE, _VALID4))
    assert result == expected and result.startswith("[France, ")
    assert queries == expected_queries  # items 5-10 changed nothing
    assert session.trace[-2]["args"]["relations"] == _VALID4
    for q in queries:
        assert_parses(q)
        for hostile in _HOSTILE6:
            assert hostile not in q


def test_ten_relations_deduplicated_before_the_cut(backend: Backend) -> None:
    session, rec, _ = _primed(backend)
    rels = [_VALID4[0]] * 4 + [_HOSTILE6[0]] + _VALID4[1:] + _HOSTILE6[1:3]
    assert len(rels) == 10
    result, queries = backend.run(session, rec, call("get_triples", FRANCE, rels))
    assert result.startswith(relation_error(_HOSTILE6[0]))
    assert queries == []


@pytest.mark.parametrize("position", [0, 2, 3])
def test_ten_relations_hostile_within_first_four(backend: Backend, position: int) -> None:
    session, rec, _ = _primed(backend)
    rels = _VALID4 + _HOSTILE6[:5]
    rels.insert(position, RELATION_PAYLOADS["spouse-breakout"] + "!")
    result, queries = backend.run(session, rec, call("get_triples", FRANCE, rels))
    assert result.startswith(relation_error(rels[position]))
    assert queries == []


def test_ten_unseen_valid_relations(backend: Backend) -> None:
    session, rec, listed = _primed(backend)
    rels = [f"evil.relation.r{i}" for i in range(10)]
    result, queries = backend.run(session, rec, call("get_triples", FRANCE, rels))
    assert result.startswith(relation_error(rels[0])) and result.endswith(listed)
    assert queries == []


# ---------------------------------------------------------------------------------------------- parse errors
@pytest.mark.parametrize("text", list(PARSE_ERRORS.values()), ids=list(PARSE_ERRORS))
@pytest.mark.parametrize("wrap", [False, True], ids=["bare", "tagged"])
def test_unparsable_query_gives_parse_error(backend: Backend, text: str, wrap: bool) -> None:
    full = f"<kg-query>{text}</kg-query>" if wrap else text
    session, rec = backend.session()
    result, queries = backend.run(session, rec, full)
    assert result == f"[Could not parse query: {extract_query(full)}]"
    assert queries == []


@pytest.mark.parametrize("text", [
    'get_relations("a") get_relations("b")',
    'get_triples("x", ["a.b"]) ; get_triples("y", ["people.person.nationality"])',
    'get_relations("France") ; get_relations("x")',
], ids=["two-calls", "two-triples-calls", "semicolon"])
def test_smuggled_second_call_is_one_escaped_name(backend: Backend, text: str) -> None:
    """A smuggled second call is either swallowed into the entity name (still one escaped literal) or, when the
    relation list then holds junk, the whole text is a parse error: never a second executed call."""
    parsed = parse_query(text)
    session, rec = backend.session()
    result, queries = backend.run(session, rec, f"<kg-query>{text}</kg-query>")
    if isinstance(parsed, ParseError):
        assert result == parsed.message and queries == []
        return
    assert isinstance(parsed, GetRelations | GetTriples)
    assert result == ENTITY_ERROR
    for q in queries:
        assert_parses(q)
        assert q.count(literal(parsed.entity)) == 1
        assert "get_" not in without_literals(q)


def test_only_the_first_tag_is_executed(backend: Backend) -> None:
    session, rec = backend.session()
    text = f'<kg-query>get_relations("{FRANCE}")</kg-query> <kg-query>get_relations("}} ; DROP ALL")</kg-query>'
    result, queries = backend.run(session, rec, text)
    reference, _ = backend.session()
    assert result == reference.run(call("get_relations", FRANCE))
    for q in queries:
        assert_parses(q)
        assert "DROP" not in q


# ---------------------------------------------------------------------------------------------- afterwards
def test_session_works_after_every_hostile_input(backend: Backend) -> None:
    """Last in the module (per backend): the survivor saw every input above and still answers normally."""
    survivor = backend.survivor
    for payload in (*ENTITY_PAYLOADS.values(), *RELATION_PAYLOADS.values()):  # in case this test runs alone
        survivor.run(call("get_triples", payload, [payload]))
    relations = survivor.run(call("get_relations", "France")).splitlines()
    assert "location.location.contains" in relations and not relations[0].startswith((ENTITY_ERROR, "["))
    triples = survivor.run(call("get_triples", "France", ["location.location.contains"]))
    assert "[France, location.location.contains, Paris]" in triples.splitlines()
    assert survivor.trace[-1] == {"type": "information", "tag": "information", "content": triples,
                                  "call_number": survivor.calls}


# ------------------------------------------------------------------------------- regressions (bugs fixed)
def test_uppercased_registered_id_is_not_answered_with_a_name(backend: Backend) -> None:
    session = KGSession(KGClient(RecordingStore(backend.inner)), topic_entities={FRANCE: "France"})
    result = session.run('<kg-query>get_relations("M.0V2J_")</kg-query>')
    assert result.startswith(ENTITY_ERROR) or "location.location.contains" in result


@pytest.mark.parametrize("tool", ["get_relations", "get_triples"])
def test_lone_surrogate_entity_is_an_entity_error(backend: Backend, tool: str) -> None:
    session, _ = backend.session()
    result = session.run(call(tool, "Fr\ud800nce", ["location.location.contains"]))
    assert result == ENTITY_ERROR


def test_topic_entity_id_with_trailing_newline_is_ignored(backend: Backend) -> None:
    session = KGSession(KGClient(RecordingStore(backend.inner)), topic_entities={f"{FRANCE}\n": "France"})
    result = session.run('get_relations("France")')
    assert "location.location.contains" in result.splitlines()  # resolved by name, not through the bad id


def test_comma_inside_a_relation_is_a_parse_error() -> None:
    from kgrag.tools.parse import ParseError, parse_query

    assert isinstance(parse_query('get_triples("France", ["x,y"])'), ParseError) is False
    assert parse_query('get_triples("France", ["x,y"])').relations == ("x,y",)
    assert isinstance(parse_query('get_triples("France", [x, "y"])'), ParseError)
