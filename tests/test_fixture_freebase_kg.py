"""The Freebase-shaped fixture graph (tests/fixtures/freebase_kg.py) really has what the KG-tool tests rely on."""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox
import pytest
from fixtures import freebase_kg
from fixtures.freebase_kg import (
    FREEBASE_FIXTURE,
    METADATA_RELATIONS,
    runnable_sparql,
    write_freebase_ntriples,
)
from fixtures.settings import require_shared

from kgrag.data.freebase import (
    is_meaningless_relation,
    read_cwq,
    read_meaningless_relations,
    read_relation_whitelist,
    read_webqsp,
)
from kgrag.graph.iri import ENTITY_ID_RE, FREEBASE_NS, NAME_PREDICATE, RELATION_RE
from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.sparql import literal
from kgrag.graph.store import GraphStore, Term

F = FREEBASE_FIXTURE
FACTS = F.facts


def node(local: str) -> str:
    return f"<{FREEBASE_NS}{local}>"


def value(term: Term) -> str:
    """A URI's local name (``m.0abc``), else the literal's lexical value."""
    if term.kind == "uri" and term.value.startswith(FREEBASE_NS):
        return term.value[len(FREEBASE_NS):]
    return term.value


def column(store: GraphStore, query: str, var: str = "x") -> set[str]:
    return {value(row[var]) for row in store.select(query) if var in row}


def objects(store: GraphStore, subject: str, relation: str) -> set[str]:
    return column(store, f"SELECT ?x WHERE {{ {node(subject)} {node(relation)} ?x }}")


def subjects(store: GraphStore, relation: str, obj: str) -> set[str]:
    return column(store, f"SELECT ?x WHERE {{ ?x {node(relation)} {node(obj)} }}")


def out_relations(store: GraphStore, entity: str) -> set[str]:
    return column(store, f"SELECT DISTINCT ?x WHERE {{ {node(entity)} ?x ?t }}")


def in_relations(store: GraphStore, entity: str) -> set[str]:
    return column(store, f"SELECT DISTINCT ?x WHERE {{ ?h ?x {node(entity)} }}")


def names(store: GraphStore, entity: str) -> dict[str, str]:
    rows = store.select(f"SELECT ?n WHERE {{ {node(entity)} {node(NAME_PREDICATE)} ?n }}")
    return {row["n"].lang or "": row["n"].value for row in rows}


def whitelist() -> set[str]:
    return set(read_relation_whitelist(require_shared("freebase/filtered_cwq_white_list.json")))


def meaningless() -> list[str]:
    return read_meaningless_relations(require_shared("freebase/meaningless_relations.txt"))


# --- the file itself ----------------------------------------------------------------------------------------


def test_ntriples_parse_strictly_sorted_and_deterministic(tmp_path) -> None:
    lines = F.ntriples.splitlines()
    assert lines == sorted(set(lines)) and F.ntriples.endswith(" .\n")
    triples = list(ox.parse(input=F.ntriples.encode("utf-8"), format=ox.RdfFormat.N_TRIPLES))  # not lenient
    assert len(triples) == len(lines) == FACTS["counts"]["triples"]
    assert freebase_kg._build().ntriples == F.ntriples
    path = write_freebase_ntriples(tmp_path / "sub" / "fb.nt")
    assert path.read_text(encoding="utf-8") == F.ntriples


def test_every_iri_is_a_valid_freebase_id_or_schema_name() -> None:
    triples = ox.parse(input=F.ntriples.encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
    for triple in triples:
        assert RELATION_RE.match(value(Term("uri", triple.predicate.value)))
        for term in (triple.subject, triple.object):
            if isinstance(term, ox.NamedNode):
                local = value(Term("uri", term.value))
                assert term.value.startswith(FREEBASE_NS) and (ENTITY_ID_RE.match(local) or RELATION_RE.match(local))


def test_store_holds_every_triple(freebase_store: OxigraphStore) -> None:
    assert freebase_store.count_triples() == FACTS["counts"]["triples"] > 1000
    assert FACTS["counts"]["cvts"] == len(F.cvts) >= 80
    assert FACTS["counts"]["named_entities"] >= 200


# --- names ----------------------------------------------------------------------------------------------------


def test_non_english_and_fallback_names(freebase_store) -> None:
    fr_only = names(freebase_store, FACTS["fr_only_entity"])
    assert fr_only == {"fr": FACTS["fr_only_name"]}
    for entity in FACTS["multilingual_entities"]:
        langs = names(freebase_store, entity)
        assert "en" in langs and set(langs) - {"en"}, entity
    assert names(freebase_store, "m.09c7w0") == {"en": "United States of America", "fr": "États-Unis", "zh": "美国"}


def test_tricky_name_round_trips_through_escaping(freebase_store) -> None:
    name = FACTS["tricky_name"]
    assert all(c in name for c in ('"', "\\", "\u2014", "\u6771", "\U0001f3b5"))
    assert names(freebase_store, FACTS["tricky_name_entity"]) == {"en": name}
    found = column(freebase_store, f"SELECT ?x WHERE {{ ?x {node(NAME_PREDICATE)} {literal(name, 'en')} }}")
    assert found == {FACTS["tricky_name_entity"]}


def test_ambiguous_name_has_two_mids(freebase_store) -> None:
    ambiguous = FACTS["ambiguous_name"]
    found = column(freebase_store, f"SELECT ?x WHERE {{ ?x {node(NAME_PREDICATE)} {literal(ambiguous['name'], 'en')} }}")
    assert found == set(ambiguous["ids"]) and len(found) == 2


# --- CVTs -----------------------------------------------------------------------------------------------------


def test_cvts_are_unnamed_typed_m_nodes(freebase_store) -> None:
    for cvt, cvt_type in F.cvts.items():
        assert cvt.startswith("m.") and names(freebase_store, cvt) == {}, cvt
        assert cvt_type in objects(freebase_store, cvt, "type.object.type")
    # every unnamed m./g. node is a CVT, an article/image node or the one g. dated_integer
    unnamed = column(freebase_store, f"""SELECT DISTINCT ?x WHERE {{
        {{ ?x ?p ?o }} UNION {{ ?s ?p ?x }} FILTER(isIRI(?x))
        FILTER(REGEX(STR(?x), "^{FREEBASE_NS}[mg][.]"))
        FILTER NOT EXISTS {{ ?x {node(NAME_PREDICATE)} ?n }} }}""")
    assert unnamed == set(F.cvts) | set(FACTS["unnamed_metadata_nodes"]) | {FACTS["unnamed_g_node"]}
    assert FACTS["unnamed_g_node"].startswith("g.") and FACTS["unnamed_g_node"] not in F.cvts


def test_two_marriages_out_direction_with_self_loop(freebase_store) -> None:
    person, cvts = FACTS["spouse_person"], FACTS["marriage_cvts"]
    assert objects(freebase_store, person, "people.person.spouse_s") == set(cvts) and len(cvts) == 2
    assert subjects(freebase_store, "people.marriage.spouse", person) == set(cvts)  # also an in-edge of the person
    for cvt in cvts:
        assert objects(freebase_store, cvt, "people.marriage.spouse") == {person, FACTS["spouses"][cvt]}
        assert objects(freebase_store, cvt, "people.marriage.type_of_union") == {"m.04ztj"}
        dates = freebase_store.select(f"SELECT ?d WHERE {{ {node(cvt)} ?p ?d FILTER(isLiteral(?d)) }}")
        assert {row["d"].datatype.rsplit("#", 1)[1] for row in dates if row["d"].datatype} <= {"date", "gYear"}
        assert any(row["d"].datatype for row in dates)
    assert objects(freebase_store, cvts[1], "people.marriage.location_of_ceremony") == {"m.kg_mexico"}
    loop = FACTS["self_loop_out"]
    assert freebase_store.ask(f"ASK {{ {node(loop['entity'])} {node(loop['relation'])} ?c . "
                              f"?c {node(loop['cvt_relation'])} {node(loop['entity'])} }}")


def test_position_cvt_reaches_politician_as_in_edge(freebase_store) -> None:
    politician, cvt = FACTS["politician"], FACTS["position_cvt"]
    assert cvt in subjects(freebase_store, "government.government_position_held.office_holder", politician)
    heads = freebase_store.select(f"SELECT ?p ?h WHERE {{ ?h ?p {node(cvt)} }}")
    assert {value(r["p"]): value(r["h"]) for r in heads} == FACTS["position_cvt_in_edges"]
    assert FACTS["position_cvt_in_edges"]["government.politician.government_positions_held"] == politician
    prefix = "government.government_position_held."
    assert objects(freebase_store, cvt, prefix + "basic_title") == {"m.0fkvn"}
    assert objects(freebase_store, cvt, prefix + "jurisdiction_of_office") == {"m.kg_massachusetts"}
    assert objects(freebase_store, cvt, prefix + "from") == {"2003-01-02"}
    assert objects(freebase_store, cvt, prefix + "to") == {"2007-01-04"}
    loop = FACTS["self_loop_in"]
    assert freebase_store.ask(f"ASK {{ ?c {node(loop['relation'])} {node(loop['entity'])} . "
                              f"{node(loop['entity'])} {node(loop['cvt_relation'])} ?c }}")


def test_real_data_cvts_have_their_types(freebase_store) -> None:
    for pattern, cvts in FACTS["real_data_cvts"].items():
        cvt_type = pattern.split(" ", 1)[0]
        assert cvts and all(F.cvts[c] == cvt_type for c in cvts), pattern
    assert len(FACTS["real_data_cvts"]["sports.sports_team_roster"]) == 7


def _flatten_candidates(store: GraphStore, cvts: Iterable[str], skip: Iterable[str]) -> int:
    skip = set(skip)
    return sum(len(out_relations(store, cvt) - skip) for cvt in cvts)


def test_many_cvt_entity(freebase_store) -> None:
    entity, relation = FACTS["many_cvt_entity"], FACTS["many_cvt_relation"]
    cvts = objects(freebase_store, entity, relation)
    assert cvts == set(FACTS["many_cvt_cvts"]) and len(cvts) == FACTS["many_cvt_count"] >= 30
    assert cvts <= set(F.cvts)
    count = _flatten_candidates(freebase_store, cvts, METADATA_RELATIONS)
    assert count >= FACTS["many_cvt_min_flatten_candidates"] >= 60


def test_many_cvt_candidates_survive_the_real_filters(freebase_store) -> None:
    wl, patterns = whitelist(), meaningless()
    total = 0
    for cvt in FACTS["many_cvt_cvts"]:
        rels = [r for r in out_relations(freebase_store, cvt) if not is_meaningless_relation(r, patterns)]
        total += len([r for r in rels if r in wl] or rels)
    assert total >= 60


# --- plain relations, fan-out, relation counts -------------------------------------------------------------------


def test_big_fanout_both_directions(freebase_store) -> None:
    fan = FACTS["big_fanout"]
    assert len(objects(freebase_store, fan["entity"], fan["relation"])) == fan["count"] > 15
    assert len(subjects(freebase_store, fan["reverse_relation"], fan["entity"])) == fan["count"]
    fan = FACTS["big_fanout_with_cvt"]
    assert len(subjects(freebase_store, fan["relation"], fan["entity"])) == fan["count"] >= 20
    assert objects(freebase_store, fan["entity"], fan["cvt_relation"]) <= set(F.cvts)


def test_plain_relations_between_named_entities(freebase_store) -> None:
    assert objects(freebase_store, "m.01j324", "people.person.place_of_birth") == {"m.0j7ng"}
    assert objects(freebase_store, "m.0m63c", "film.film.directed_by") == {"m.kg_roger_allers", "m.kg_rob_minkoff"}
    assert "m.09c7w0" in objects(freebase_store, "m.0271_s", "people.person.nationality")
    assert "m.0d0x8" in objects(freebase_store, "m.013yq", "location.location.containedby")


def test_many_relations_entity(freebase_store) -> None:
    entity = FACTS["many_relations_entity"]
    wl, patterns = whitelist(), meaningless()
    rels = out_relations(freebase_store, entity) | in_relations(freebase_store, entity)
    kept = {r for r in rels if r in wl and not is_meaningless_relation(r, patterns)}
    assert len(kept) >= FACTS["many_relations_min"] > 30


def test_whitelist_fallback_and_filtering(freebase_store) -> None:
    wl = whitelist()
    eminem = FACTS["all_non_whitelisted_entity"]
    rels = out_relations(freebase_store, eminem) | in_relations(freebase_store, eminem)
    assert rels and not rels & wl
    atlanta = FACTS["partially_whitelisted_entity"]
    rels = out_relations(freebase_store, atlanta) | in_relations(freebase_store, atlanta)
    assert set(FACTS["partially_whitelisted_kept"]) <= rels & wl
    assert set(FACTS["partially_whitelisted_dropped"]) <= rels - wl
    for cvt in FACTS["real_data_cvts"]["measurement_unit.dated_integer"]:  # CVT relations all outside
        assert not (out_relations(freebase_store, cvt) - set(METADATA_RELATIONS)) & wl
    assert "people.marriage.type_of_union" not in wl and "people.marriage.spouse" in wl


def test_metadata_relations_on_entities_and_cvts(freebase_store) -> None:
    patterns = meaningless()
    assert all(is_meaningless_relation(r, patterns) for r in FACTS["metadata_relations"])
    for entity in [*FACTS["metadata_entities"], *FACTS["metadata_cvts"]]:
        assert set(FACTS["metadata_relations"]) <= out_relations(freebase_store, entity), entity
    assert set(FACTS["metadata_cvts"]) <= set(F.cvts)
    for entity in FACTS["metadata_entities"]:
        for relation in ("common.topic.article", "common.topic.image"):
            (target,) = objects(freebase_store, entity, relation)
            assert target.startswith("m.") and names(freebase_store, target) == {}


# --- sample questions --------------------------------------------------------------------------------------------


def _gold(question: dict) -> set[str]:
    return set(question["answer_ids"]) | set(question["answer_values"])


@pytest.mark.parametrize("question", F.questions, ids=[q["qid"] for q in F.questions])
def test_sample_question_sparql_returns_the_gold_answers(freebase_store, question: dict) -> None:
    assert column(freebase_store, runnable_sparql(question["sparql"])) == _gold(question)
    for mid, name in question["topic_entity"].items():
        assert name in names(freebase_store, mid).values()
    assert len(question["answer_names"]) == len(question["answer_ids"]) + len(question["answer_values"]) or (
        question["dataset"] == "cwq")


@pytest.mark.parametrize("question", F.questions, ids=[q["qid"] for q in F.questions])
def test_sample_question_chain_reaches_the_answers(freebase_store, question: dict) -> None:
    """Walk the chain from the first topic entity. WebQSP: forward hops, the last one gives the answers; CWQ: hops
    in either direction, the answer is reached on the way (the chain may end on a constraint)."""
    cwq = question["dataset"] == "cwq"
    frontier = {next(iter(question["topic_entity"]))}
    reached: set[str] = set()
    seen: set[str] = set()
    for relation in question["chain"]:
        values = " ".join(node(x) for x in sorted(frontier))
        backward = f"UNION {{ ?x {node(relation)} ?s }}" if cwq else ""
        rows = freebase_store.select(f"SELECT DISTINCT ?x WHERE {{ VALUES ?s {{ {values} }} "
                                     f"{{ ?s {node(relation)} ?x }} {backward} }}")
        reached = {value(r["x"]) for r in rows}
        seen |= reached
        frontier = {value(r["x"]) for r in rows if r["x"].kind == "uri"}
        assert frontier or relation == question["chain"][-1], relation
    assert _gold(question) <= (seen if cwq else reached)


def test_questions_cover_the_datasets_and_patterns() -> None:
    qids = {q["qid"] for q in F.questions}
    assert len(F.questions) == 22 and len(qids) == 22
    assert {q["dataset"] for q in F.questions} == {"webqsp", "cwq"}
    chains = {r for q in F.questions for r in q["chain"]}
    assert {"people.person.spouse_s", "government.government_position_held.office_holder", "film.actor.film",
            "sports.pro_athlete.teams", "location.statistical_region.religions"} <= chains


def test_questions_match_the_shared_samples() -> None:
    webqsp = {q.qid: q for q in read_webqsp(require_shared("freebase/webqsp_100.json")).records}
    cwq = {q.qid: q for q in read_cwq(require_shared("freebase/cwq_300.json")).records}
    for q in F.questions:
        if q["dataset"] == "webqsp":
            sample = webqsp[q["qid"]]
            parse = sample.parses[0]
            assert q["question"] == sample.question
            assert q["topic_entity"] == {parse.topic_entity_mid: parse.topic_entity_name}
            assert q["chain"] == parse.inferential_chain
            assert q["sparql"] == parse.sparql
            assert set(q["answer_ids"]) == {a.mid for a in parse.answers if a.mid}
            assert set(q["answer_values"]) == {a.value for a in parse.answers if not a.mid}
            assert sorted(q["answer_names"]) == sorted(a.label for a in parse.answers)
        else:
            sample = cwq[q["qid"]]
            assert (q["question"], q["topic_entity"], q["sparql"]) == (
                sample.question, sample.topic_entities, sample.sparql)
            assert q["answer_names"] == [sample.answer]
            assert all(FREEBASE_FIXTURE.names[a]["en"] == sample.answer for a in q["answer_ids"])


# --- the served copy ------------------------------------------------------------------------------------------


def test_remote_server_answers_like_the_embedded_store(freebase_store, freebase_server) -> None:
    remote = RemoteStore(freebase_server.url, timeout=10)
    assert remote.count_triples() == freebase_store.count_triples()
    query = f"SELECT ?x WHERE {{ {node('m.09c7w0')} ?p ?x }}"
    assert column(remote, query) == column(freebase_store, query)
    assert names(remote, FACTS["tricky_name_entity"]) == {"en": FACTS["tricky_name"]}
    cvts = FACTS["many_cvt_cvts"]
    assert objects(remote, FACTS["many_cvt_entity"], FACTS["many_cvt_relation"]) == set(cvts)
