"""Property-based fuzzing of the KG tools: the ``<kg-query>`` parser and :meth:`KGSession.run`.

The parser must never raise and always answer one of the three query types; well-formed calls round-trip.
The session, driven by thousands of call-shaped and random strings against the embedded demo store, must never
raise, always answer a ``str`` and keep its trace well-formed.

Speed: hypothesis costs about 1 ms of engine time per example here, plus more per draw (``st.text()``: ~1.5 ms),
so the call-shaped inputs are built from ONE ``st.binary()`` draw decoded by a small byte-driven grammar (:class:`_Bytes`, in the style of libFuzzer's
FuzzedDataProvider): each byte picks a fragment, a quote, a character, a count... Hypothesis still mutates and
shrinks the bytes (shorter and smaller bytes decode to simpler calls, byte 0 always picks the simplest choice).
``st.text()`` stays in the mix for arbitrary unicode. The example database is off (``database=None``) so a
run leaves no ``.hypothesis/`` folder behind.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag.data.demo import demo_kg, demo_questions
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.tools import KGClient, KGSession, KGToolsConfig
from kgrag.tools.parse import GetRelations, GetTriples, ParseError, extract_query, parse_query

PARSER_EXAMPLES = 10_000
ROUND_TRIP_EXAMPLES = 2_000
SESSION_EXAMPLES = 10_000

_KG = demo_kg()
_QUESTIONS = demo_questions(_KG)
_NAMES = sorted(set(_KG.names.values()))
_MIDS = sorted(_KG.names)
_RELATIONS = sorted({t.relation for t in _KG.triples})
_NAMES_AND_MIDS = _NAMES + _MIDS
_ID_PREFIXES = ("m.", "g.", "en.", "e.")
#: relations on each demo entity's edges (both directions), by MID and by name: coherent get_triples calls
_ENTITY_RELATIONS: dict[str, list[str]] = {}
for _t in _KG.triples:
    for _node in (_t.head, _t.tail):
        for _key in (_node, _KG.names.get(_node)):
            if _key and _t.relation not in _ENTITY_RELATIONS.setdefault(_key, []):
                _ENTITY_RELATIONS[_key].append(_t.relation)

_FRAGMENTS = (
    "get_relations", "get_triples", "(", ")", "[", "]", '"', "'", ",", " ", "<kg-query>", "</kg-query>",
    "\n", "\t", "get_relation", "get_triple", ", ", "  ", "\r\n", "\\", '\\"', "{", "}", "m.0abc", "m.", "g.",
    "en.", "e.", "ns:", "France", "Paris", "people.person.spouse_s", "a.b", "\x00", "\u202e", "\u200d", "\u3000",
    "ｍ.０ａｂｃ", "м.0abc", "é", "中文", "🙂", "#", "?s ?p ?o", "} ; DROP ALL", "<http://evil/x>", "@en", "^^",
    "*", "?", ".*", "\\1", "<kg-query", "kg-query>", "\u2028", "\ufeff", "e\u0301", "''", '""', "[]", "()",
)
_WS = ("", " ", "  ", "\n", "\t", " \n ", "\u3000", "\r\n")
#: characters for random strings: simple first (byte 0 → "a"), then syntax, controls and unicode tricks
_CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._-"
    "\"'()[]{},;:<>?/\\#@^`|*+=!$%&~"
    "\x00\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f\x7f\x85\xa0"
    "éÉßøñçü中文日本語한국어العربيةעברית"
    "\u0301\u200b\u200c\u200d\u200e\u200f\u202a\u202e\u2066\u2028\u2029\u3000\ufeff\ufffd"
    "ｍ０ａｂｃмаеорс𝐦🙂👍🏽"
 "\ud800\udfff"  # lone surrogates (JSON-decoded model text can hold them)
)
_SAFE_CHARS = "".join(c for c in _CHARS if c not in "\"'<>" and ord(c) >= 0x20 and c not in "\x7f\x85\u2028\u2029")
_SAFE_REL_CHARS = "".join(c for c in _CHARS if c not in "\"',<>[]")


class _Bytes:
    """Decode bytes into choices; past the end every byte reads 0 (the simplest choice)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.i = 0

    def byte(self) -> int:
        b = self.data[self.i] if self.i < len(self.data) else 0
        self.i += 1
        return b

    def pick(self, options: Sequence[str]) -> str:
        return options[self.byte() % len(options)]

    def count(self, most: int) -> int:
        return self.byte() % (most + 1)

    def char(self, table: str) -> str:
        b = self.byte()
        if b < 0xF0 or table is _SAFE_REL_CHARS or table is _SAFE_CHARS:
            return table[b % len(table)]
        # any BMP/astral code point from two more bytes
        cp = (self.byte() << 8 | self.byte()) + (0x10000 if b & 1 else 0)
        return chr(cp)

    def text(self, most: int, table: str = _CHARS) -> str:
        return "".join(self.char(table) for _ in range(self.count(most)))

    def fragments(self, most: int) -> str:
        return "".join(self.pick(_FRAGMENTS) if self.byte() % 4 else self.char(_CHARS) for _ in range(self.count(most)))


def _entity(d: _Bytes) -> str:
    kind = d.byte() % 10
    if kind in (0, 1):
        return d.pick(_NAMES)
    if kind in (2, 3):
        return d.pick(_MIDS)
    if kind == 4:
        value = d.pick(_NAMES_AND_MIDS)
        return (value.lower(), value.upper(), value.swapcase())[d.byte() % 3]
    if kind == 5:
        return d.pick(_ID_PREFIXES + ("ns:m.", "M.", "m. ")) + d.text(8)
    if kind == 6:
        return d.pick(_MIDS) + d.pick(_FRAGMENTS)
    if kind == 7:
        return d.fragments(4)
    return d.text(20)


def _relation(d: _Bytes) -> str:
    kind = d.byte() % 7
    if kind in (0, 1):
        return d.pick(_RELATIONS)
    if kind == 2:
        return "ns:" + d.pick(_RELATIONS)
    if kind == 3:
        return "http://rdf.freebase.com/ns/" + d.pick(_RELATIONS).replace(".", "/")
    if kind == 4:
        return d.pick(_RELATIONS) + d.pick(_FRAGMENTS)
    return d.text(15)


def _call(data: bytes) -> str:
    """A text shaped like a tool call (sometimes broken), bare, tagged or inside prose."""
    d = _Bytes(data)
    q = d.pick(('"', "'"))
    ws = [d.pick(_WS) for _ in range(5)]
    ent = _entity(d)
    shape = d.byte() % 6
    if shape in (0, 1):
        call = f"get_relations{ws[0]}({ws[1]}{q}{ent}{q}{ws[2]})"
    else:
        items = []
        own = _ENTITY_RELATIONS.get(ent)
        coherent = own is not None and d.byte() % 3 != 2  # relations the entity really has
        for _ in range(1 + d.count(3) if coherent else d.count(10)):
            rq = d.pick(('"', "'", '"', "'", ""))
            items.append(f"{rq}{d.pick(own) if coherent else _relation(d)}{rq}")
        body = d.pick((", ", ",", " ,\n", "")).join(items)
        call = f"get_triples{ws[0]}({ws[1]}{q}{ent}{q}{ws[2]},{ws[3]}[{body}]{ws[4]})"
    if shape == 5:  # break it: drop, double or insert at one position
        i = d.byte() * len(call) // 256
        op = d.byte() % 3
        call = (call[:i] + call[i + 1:], call[:i] + call[i:i + 1] + call[i:], call[:i] + d.pick(_FRAGMENTS) + call[i:])[op]
    wrap = d.byte() % 4
    if wrap == 1:
        return f"<kg-query>{call}</kg-query>"
    if wrap == 2:
        return f"{d.text(10)}<kg-query>{call}</kg-query>{d.text(10)}"
    if wrap == 3:
        return f"{d.pick(_WS)}{call}{d.pick(_WS)}"
    return call


def _grammar(data: bytes) -> str:
    return _Bytes(data).fragments(40)


_text = st.text()
parser_inputs = st.one_of(_text, st.binary(max_size=64).map(_grammar), st.binary(max_size=96).map(_call))
session_inputs = st.one_of(st.binary(max_size=96).map(_call), st.binary(max_size=64).map(_grammar))


# ---------------------------------------------------------------------------------------------- parser
@settings(max_examples=PARSER_EXAMPLES, deadline=None, database=None)
@given(parser_inputs)
def test_parse_query_never_raises(text: str) -> None:
    result = parse_query(text)
    assert isinstance(result, GetRelations | GetTriples | ParseError)
    if isinstance(result, ParseError):
        assert result.query == extract_query(text)
        assert result.message == f"[Could not parse query: {result.query}]"
    else:
        assert result.entity == result.entity.strip()
        if isinstance(result, GetTriples):
            assert isinstance(result.relations, tuple)
            assert len(set(result.relations)) == len(result.relations)
    if "<kg-query>" not in text and "</kg-query>" not in text:
        # the tagged form (with prose around it) parses exactly as the bare text
        assert parse_query(f"I will ask. <kg-query>{text}</kg-query> Done.") == result
    assert parse_query(text) == result  # deterministic


def _round_trip_case(data: bytes) -> tuple[str, list[str], str, list[str], list[str]]:
    d = _Bytes(data)
    entity = d.text(30, _SAFE_CHARS).strip()
    relations = [d.pick(_RELATIONS) if d.byte() % 2 else d.text(20, _SAFE_REL_CHARS) for _ in range(d.count(12))]
    sep = d.pick((", ", ",", " , ", ",\n", "\t,\t"))
    quotes = [d.pick(('"', "'")) for _ in range(13)]
    ws = [d.pick(_WS) for _ in range(5)]
    return entity, relations, sep, quotes, ws


@settings(max_examples=ROUND_TRIP_EXAMPLES, deadline=None, database=None)
@given(st.binary(max_size=200).map(_round_trip_case))
def test_parse_query_round_trips(case: tuple[str, list[str], str, list[str], list[str]]) -> None:
    entity, relations, sep, quotes, ws = case
    rels = sep.join(f"{q}{r}{q}" for q, r in zip(quotes[1:], relations, strict=False))
    expected = GetTriples(entity=entity, relations=tuple(dict.fromkeys(relations)))
    bare = f'get_triples("{entity}", [{rels}])'
    assert parse_query(bare) == expected
    q = quotes[0]
    spaced = f"get_triples{ws[0]}({ws[1]}{q}{entity}{q}{ws[2]},{ws[3]}[{rels}]{ws[4]})"
    assert parse_query(spaced) == expected
    assert parse_query(f"<kg-query>{bare}</kg-query>") == expected
    assert parse_query(f"Thinking...\n<kg-query>\n{spaced}\n</kg-query>\nwait") == expected
    assert parse_query(f"get_relations({q}{entity}{q})") == GetRelations(entity=entity)
    assert parse_query(f"<kg-query> get_relations( {q}{entity}{q} ) </kg-query>") == GetRelations(entity=entity)


def test_parse_query_examples() -> None:
    assert parse_query('get_triples("France", ["a.b", "c.d", "a.b"])') == GetTriples("France", ("a.b", "c.d"))
    assert parse_query("get_triples('France', [])") == GetTriples("France", ())
    assert parse_query("<kg-query>get_relations('m.0v2j_')</kg-query>") == GetRelations("m.0v2j_")
    assert parse_query("get_triples(\"São Paulo\", ['a.b',\"c.d\"])") == GetTriples("São Paulo", ("a.b", "c.d"))
    bad = parse_query("<kg-query>get_relations(France)</kg-query>")
    assert isinstance(bad, ParseError)
    assert bad.message == "[Could not parse query: get_relations(France)]"
    empty = parse_query("")
    assert isinstance(empty, ParseError) and empty.message == "[Could not parse query: ]"


def test_byte_grammar_reaches_every_shape() -> None:
    """The byte-driven generators are not degenerate: they produce all three query types."""
    import random

    rng = random.Random(0)
    kinds = {type(parse_query(_call(rng.randbytes(rng.randrange(96))))).__name__ for _ in range(2000)}
    assert kinds == {"GetRelations", "GetTriples", "ParseError"}
    assert _call(b"") == f'get_relations("{_NAMES[0]}")'


# ---------------------------------------------------------------------------------------------- session
@pytest.fixture(scope="module")
def demo_session(demo_ntriples, tmp_path_factory):
    path, _ = demo_ntriples
    target = tmp_path_factory.mktemp("tools-fuzz") / "s"
    build_store(path, target)
    store = OxigraphStore(target, read_only=True)
    q = _QUESTIONS[0]
    session = KGSession(KGClient(store), question=q.text, topic_entities=dict(zip(q.topic_ids, q.topic_names, strict=True)),
                        config=KGToolsConfig(max_calls=10**9))
    yield session
    store.close()


_ERROR_PREFIXES = ("Invalid entity.", "The relation '", "[Could not parse query: ", "[KG query failed: ")


def check_run(session: KGSession, text: str) -> str:
    """Run one query; the result is a str and the trace gained one well-formed call."""
    before, calls = len(session.trace), session.calls
    result = session.run(text)
    assert isinstance(result, str)
    assert session.calls == calls + 1
    new = session.trace[before:]
    assert len(new) >= 2
    first, last = new[0], new[-1]
    assert first["type"] == "kg_query" and first["content"] == extract_query(text)
    assert first["call_number"] == session.calls
    assert last["type"] == "information" and last["content"] == result and last["call_number"] == session.calls
    middle = new[1:-1]
    assert {r["type"] for r in middle} <= {"tool_call", "error", "filter"}, middle
    if result.startswith(_ERROR_PREFIXES):
        assert any(r["type"] == "error" and r["content"] == result for r in middle)
        assert not result.startswith("[KG query failed: "), result  # the demo store never fails
    else:
        tool_calls = [r for r in middle if r["type"] == "tool_call"]
        assert len(tool_calls) == 1 and tool_calls[0]["tool_output"] == result
    return result



@settings(max_examples=SESSION_EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=session_inputs)
def test_session_run_never_raises(demo_session: KGSession, text: str) -> None:
    check_run(demo_session, text)


def test_session_still_answers_after_fuzzing(demo_session: KGSession) -> None:
    """Runs after the fuzz on the same session: real calls still give real answers, and the fuzz got far."""
    assert demo_session.calls >= SESSION_EXAMPLES * 0.9
    tools = {r.get("tool") for r in demo_session.trace if r["type"] == "tool_call"}
    assert tools == {"get_relations", "get_triples"}
    q = _QUESTIONS[0]
    mid, name = q.topic_ids[0], q.topic_names[0]
    relations = check_run(demo_session, f'<kg-query>get_relations("{name}")</kg-query>').splitlines()
    assert relations and not relations[0].startswith(_ERROR_PREFIXES)
    triples = check_run(demo_session, f'get_triples("{mid}", {relations[:4]!r})')
    assert triples.startswith("[") and name in triples
