"""Property-based fuzzing of the KG tools: the ``<kg-query>`` parser and :meth:`KGSession.run`.

The parser must never raise and always answer one of the three query types; well-formed calls round-trip.
The session, driven by thousands of call-shaped and random strings against the embedded demo store, must never
raise, always answer a ``str`` and keep its trace well-formed.

The hypothesis example database is disabled (``database=None``) so a test run leaves no ``.hypothesis/`` folder.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag.data.demo import demo_kg, demo_questions
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.tools import KGClient, KGSession, KGToolsConfig
from kgrag.tools.parse import GetRelations, GetTriples, ParseError, extract_query, parse_query

PARSER_EXAMPLES = 10_000
SESSION_EXAMPLES = 10_000

#: Known bugs (see tests/test_tools_injection.py, ``test_known_bug_*``): with this False the session fuzz does
#: not generate the inputs that trigger them (lone surrogates, upper-cased ids of registered entities).
#: Flip it to True once they are fixed.
INCLUDE_KNOWN_BUGS = False

_KG = demo_kg()
_QUESTIONS = demo_questions(_KG)
_NAMES = sorted(set(_KG.names.values()))
_MIDS = sorted(_KG.names)
_RELATIONS = sorted({t.relation for t in _KG.triples})

_FRAGMENTS = [
    "get_relations", "get_triples", "get_relation", "get_triple", "(", ")", "[", "]", '"', "'", ",", ", ",
    "<kg-query>", "</kg-query>", "<kg-query", "kg-query>", " ", "  ", "\n", "\t", "\r\n", "\\", "\\\"", "{", "}",
    "m.0abc", "m.", "g.", "en.", "e.", "ns:", "France", "Paris", "people.person.spouse_s", "a.b", "\x00",
    "\u202e", "\u200d", "\u3000", "ｍ.０ａｂｃ", "м.0abc", "é", "中文", "🙂", "#", "?s ?p ?o", "} ; DROP ALL",
    "<http://evil/x>", "@en", "^^", "*", "?", ".*", "\\1",
]

_ERROR_PREFIXES = ("Invalid entity.", "The relation '", "[Could not parse query: ", "[KG query failed: ")
_MIDDLE_RECORDS = {"tool_call", "error", "filter"}


# ---------------------------------------------------------------------------------------------- strategies
_ws = st.sampled_from(["", " ", "  ", "\n", "\t", " \n "])
_quote = st.sampled_from(['"', "'"])


def _grammarish() -> st.SearchStrategy[str]:
    piece = st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=6))
    return st.lists(piece, max_size=24).map("".join)


@st.composite
def _call_like(draw: st.DrawFn, entity: st.SearchStrategy[str], relation: st.SearchStrategy[str]) -> str:
    """A text shaped like a tool call (possibly broken), maybe wrapped in ``<kg-query>`` and prose."""
    q = draw(_quote)
    ent = draw(entity)
    kind = draw(st.sampled_from(["relations", "triples", "triples", "broken"]))
    if kind == "relations":
        call = f"get_relations{draw(_ws)}({draw(_ws)}{q}{ent}{q}{draw(_ws)})"
    else:
        rels = draw(st.lists(relation, max_size=10))
        items = []
        for rel in rels:
            rq = draw(_quote)
            items.append(f"{rq}{rel}{rq}")
        body = draw(st.sampled_from([",", ", ", " ,\n"])).join(items)
        call = f"get_triples{draw(_ws)}({draw(_ws)}{q}{ent}{q}{draw(_ws)},{draw(_ws)}[{body}]{draw(_ws)})"
        if kind == "broken":  # drop, double or swap one character
            i = draw(st.integers(0, len(call) - 1))
            op = draw(st.sampled_from(["drop", "double", "junk"]))
            junk = draw(st.sampled_from(_FRAGMENTS))
            call = {"drop": call[:i] + call[i + 1:], "double": call[:i] + call[i] + call[i:],
                    "junk": call[:i] + junk + call[i:]}[op]
    wrap = draw(st.sampled_from(["bare", "tag", "prose"]))
    if wrap == "tag":
        return f"<kg-query>{call}</kg-query>"
    if wrap == "prose":
        return f"{draw(st.text(max_size=12))}<kg-query>{call}</kg-query>{draw(st.text(max_size=12))}"
    return call


_any_entity = st.one_of(
    st.sampled_from(_NAMES),
    st.sampled_from(_MIDS),
    st.sampled_from(_NAMES).map(str.lower),
    st.sampled_from(_NAMES).map(str.upper),
    st.text(max_size=20),
    st.builds(lambda p, s: p + s, st.sampled_from(["m.", "g.", "en.", "e.", "ns:m."]),
              st.text(alphabet=string.ascii_lowercase + string.digits + "_", max_size=10)),
    st.sampled_from(_FRAGMENTS),
)
_any_relation = st.one_of(
    st.sampled_from(_RELATIONS),
    st.sampled_from(_RELATIONS).map(lambda r: "ns:" + r),
    st.sampled_from(_RELATIONS).map(lambda r: "http://rdf.freebase.com/ns/" + r.replace(".", "/")),
    st.text(max_size=15),
    st.sampled_from(_FRAGMENTS),
)

parser_inputs = st.one_of(
    st.text(),
    _grammarish(),
    _call_like(st.text(max_size=15), st.text(max_size=10)),
)


# ---------------------------------------------------------------------------------------------- parser
@settings(max_examples=PARSER_EXAMPLES, deadline=None, database=None)
@given(parser_inputs)
def test_parse_query_never_raises(text: str) -> None:
    result = parse_query(text)
    assert isinstance(result, GetRelations | GetTriples | ParseError)
    if isinstance(result, ParseError):
        assert result.query == extract_query(text)
        assert result.message == f"[Could not parse query: {result.query}]"
    elif isinstance(result, GetRelations):
        assert result.entity == result.entity.strip()
    else:
        assert result.entity == result.entity.strip()
        assert isinstance(result.relations, tuple)
        assert len(set(result.relations)) == len(result.relations)
    if "<kg-query>" not in text and "</kg-query>" not in text:
        # the tagged form (with prose around it) parses exactly as the bare text
        assert parse_query(f"<kg-query>{text}</kg-query>") == result
        assert parse_query(f"I will ask. <kg-query>{text}</kg-query> Done.") == result
    assert parse_query(text) == result  # deterministic


_safe_entity = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\"'<>"), max_size=30,
).filter(lambda s: s == s.strip())
_safe_relation = st.one_of(
    st.sampled_from(_RELATIONS),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\"',<>[]"), max_size=20),
)


@settings(max_examples=PARSER_EXAMPLES, deadline=None, database=None)
@given(entity=_safe_entity, relations=st.lists(_safe_relation, max_size=12), sep=st.sampled_from([",", ", ", " , ", ",\n"]),
       quotes=st.lists(_quote, min_size=13, max_size=13), ws=st.lists(_ws, min_size=5, max_size=5))
def test_parse_query_round_trips(entity: str, relations: list[str], sep: str, quotes: list[str], ws: list[str]) -> None:
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
    bad = parse_query("<kg-query>get_relations(France)</kg-query>")
    assert isinstance(bad, ParseError)
    assert bad.message == "[Could not parse query: get_relations(France)]"
    assert parse_query("").message == "[Could not parse query: ]"  # type: ignore[union-attr]


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


session_inputs = st.one_of(
    _call_like(_any_entity, _any_relation),
    _call_like(_any_entity, _any_relation),
    _call_like(_any_entity, _any_relation),
    _grammarish(),
    st.text(max_size=40),
)


def check_run(session: KGSession, text: str) -> str:
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
    assert {r["type"] for r in middle} <= _MIDDLE_RECORDS, middle
    if result.startswith(_ERROR_PREFIXES):
        assert any(r["type"] == "error" and r["content"] == result for r in middle)
    else:
        tool_calls = [r for r in middle if r["type"] == "tool_call"]
        assert len(tool_calls) == 1 and tool_calls[0]["tool_output"] == result
    return result


def _known_bug(session: KGSession, text: str) -> bool:
    if INCLUDE_KNOWN_BUGS:
        return False
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return True
    query = parse_query(text)
    if isinstance(query, GetRelations | GetTriples):
        entity = query.entity.strip()
        lowered = entity.lower()
        return lowered != entity and lowered.startswith(("m.", "g.", "en.", "e.")) and lowered in session._entity_registry
    return False


@settings(max_examples=SESSION_EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=session_inputs)
def test_session_run_never_raises(demo_session: KGSession, text: str) -> None:
    if _known_bug(demo_session, text):
        return
    check_run(demo_session, text)


def test_session_still_answers_after_fuzzing(demo_session: KGSession) -> None:
    """Runs after the fuzz (same module-scoped session): real calls still give real answers."""
    q = _QUESTIONS[0]
    mid, name = q.topic_ids[0], q.topic_names[0]
    relations = check_run(demo_session, f'<kg-query>get_relations("{name}")</kg-query>').splitlines()
    assert relations and not relations[0].startswith(_ERROR_PREFIXES)
    triples = check_run(demo_session, f'get_triples("{mid}", {relations[:4]!r})')
    assert triples.startswith("[") and name in triples
