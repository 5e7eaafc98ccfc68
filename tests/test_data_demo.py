"""Demo KG: Freebase shape (MIDs, CVTs, real relation names), determinism, questions correct by construction."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from fixtures.settings import require_shared

from kgrag.data import load_kg, load_questions
from kgrag.data.demo import MID_PATTERN, REVERSE_RELATIONS, cvt_nodes, demo_kg, demo_questions
from kgrag.data.download import MEANINGLESS_RELATIONS_DEFAULT
from kgrag.data.freebase import FREEBASE_NS, is_meaningless_relation, read_relation_whitelist
from kgrag.data.records import KGDataset, KGQuestion
from kgrag.data.spec import BUILTIN_SPECS

MID = re.compile(MID_PATTERN)


@pytest.fixture(scope="module")
def kg() -> KGDataset:
    return demo_kg(seed=0)


@pytest.fixture(scope="module")
def questions(kg: KGDataset) -> list[KGQuestion]:
    return demo_questions(kg)


def test_freebase_shape(kg: KGDataset) -> None:
    assert (kg.name, kg.iri_base, kg.id_style, kg.name_lang) == ("demo", FREEBASE_NS, "key", "en")
    assert 300 <= len(kg.triples) <= 600
    assert len(set(kg.triples)) == len(kg.triples)
    keys = {t.head for t in kg.triples} | {t.tail for t in kg.triples}
    assert all(MID.match(k) for k in keys)
    assert set(kg.names) <= keys
    assert all(name.strip() for name in kg.names.values())


def test_cvt_nodes_are_unnamed_and_use_real_relations(kg: KGDataset) -> None:
    cvts = cvt_nodes(kg)
    assert len(cvts) >= 40
    assert not cvts & kg.names.keys()
    out = defaultdict(set)
    for t in kg.triples:
        out[t.head].add(t.relation)
    relations = set(kg.relations)
    expected = {
        "people.person.spouse_s", "people.marriage.spouse", "people.marriage.from",
        "government.politician.government_positions_held", "government.government_position_held.office_holder",
        "government.government_position_held.basic_title", "government.government_position_held.jurisdiction_of_office",
        "government.government_position_held.from", "film.actor.film", "film.performance.film",
        "film.performance.character", "film.film.directed_by", "film.director.film", "people.person.place_of_birth",
        "location.location.containedby", "people.person.nationality", "film.film.genre", "type.object.type",
        "common.topic.article",
    }  # fmt: skip
    assert expected <= relations
    # every marriage CVT links two spouses and has a start year
    marriages = {t.tail for t in kg.triples if t.relation == "people.person.spouse_s"}
    assert marriages <= cvts
    spouses = Counter(t.head for t in kg.triples if t.relation == "people.marriage.spouse")
    assert all(spouses[m] == 2 and "people.marriage.from" in out[m] for m in marriages)


def test_relations_are_real_freebase_relations() -> None:
    path = require_shared("freebase/filtered_cwq_white_list.json")
    whitelist = set(read_relation_whitelist(path))
    outside = [r for r in demo_kg().relations if r not in whitelist]
    assert outside == ["common.topic.article", "type.object.type"]  # metadata, filtered as meaningless


def test_metadata_reverse_relations_and_years(kg: KGDataset) -> None:
    counts = Counter(t.relation for t in kg.triples)
    metadata = sum(n for r, n in counts.items() if is_meaningless_relation(r, MEANINGLESS_RELATIONS_DEFAULT))
    assert 0 < metadata < 0.15 * len(kg.triples)
    # reverse relations mirror their forward relation exactly and make up about 5% of the triples
    edges = {(t.head, t.relation, t.tail) for t in kg.triples}
    for reverse, forward in REVERSE_RELATIONS.items():
        assert {(t, forward, h) for h, r, t in edges if r == reverse} <= edges
    share = sum(counts[r] for r in REVERSE_RELATIONS) / len(kg.triples)
    assert 0.03 <= share <= 0.08
    years = [k for k, v in kg.literal_types.items() if v == "gYear"]
    assert years and all(re.fullmatch(r"\d{4}", kg.names[k]) for k in years)
    assert set(kg.literal_types.values()) == {"gYear"}


def test_deterministic_per_seed(kg: KGDataset, questions: list[KGQuestion]) -> None:
    again = demo_kg(seed=0)
    assert again.triples == kg.triples and again.names == kg.names and again.literal_types == kg.literal_types
    assert demo_questions(again) == questions
    other = demo_kg(seed=1)
    assert other.triples != kg.triples
    assert sorted(other.names.values()) != sorted(kg.names.values()) or set(other.names) != set(kg.names)


def _reachable(kg: KGDataset, start: str, hops: int) -> set[str]:
    out = defaultdict(set)
    for t in kg.triples:
        out[t.head].add(t.tail)
    seen, frontier = set(), {start}
    for _ in range(hops):
        frontier = {n for f in frontier for n in out[f]}
        seen |= frontier
    return seen


def test_questions_correct_by_construction(kg: KGDataset, questions: list[KGQuestion]) -> None:
    assert 10 <= len(questions) <= 20
    assert {q.hop for q in questions} == {1, 2, 3}
    assert sum(q.qtype.endswith("_cvt") for q in questions) >= 5
    assert len({q.qid for q in questions}) == len(questions)
    for q in questions:
        assert q.topic_ids and q.answer_ids and q.dataset == "demo"
        assert q.topic_names == [kg.names[t] for t in q.topic_ids]
        assert q.answer_names == [kg.names[a] for a in q.answer_ids]
        assert q.topic_names[0] in q.text
        reach = _reachable(kg, q.topic_ids[0], q.hop)
        assert set(q.answer_ids) <= reach, q


def test_spouse_question_goes_through_the_marriage_cvt(kg: KGDataset, questions: list[KGQuestion]) -> None:
    (q,) = [q for q in questions if q.qtype == "person_to_spouse_cvt"]
    edges = {(t.head, t.relation, t.tail) for t in kg.triples}
    (spouse,) = q.answer_ids
    assert spouse != q.topic_ids[0]
    assert any(
        (q.topic_ids[0], "people.person.spouse_s", m) in edges
        and (m, "people.marriage.spouse", spouse) in edges
        for m in cvt_nodes(kg)
    )


def test_load_api_needs_no_files(tmp_path: Path) -> None:
    assert load_kg(BUILTIN_SPECS["demo"], data_dir=tmp_path / "absent").triples == demo_kg().triples
    assert load_questions(BUILTIN_SPECS["demo"]).records == demo_questions(demo_kg())
