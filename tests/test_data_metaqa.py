"""MetaQA reader: kb.txt counts and literal types, question files, malformed input, seeded split."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from fixtures.settings import require_shared

from kgrag.data import load_kg, load_questions
from kgrag.data.metaqa import METAQA_NS, literal_type, read_kb, read_questions, split_train_validation
from kgrag.data.records import KGDataset, KGQuestion
from kgrag.data.spec import BUILTIN_SPECS, DatasetSpec
from kgrag.errors import DataNotFoundError, KgragError

README_RELATION_COUNTS = {
    "starred_actors": 33_718,
    "has_tags": 28_719,
    "written_by": 19_127,
    "release_year": 16_715,
    "directed_by": 15_957,
    "has_genre": 15_485,
    "in_language": 3_428,
    "has_imdb_rating": 314,
    "has_imdb_votes": 119,
}
README_QUESTION_COUNTS = {1: 9_992, 2: 14_872, 3: 14_274}


def metaqa_dir() -> Path:
    """The shared MetaQA folder, or skip (with the path looked at) when the data dir lacks it."""
    path = require_shared("metaqa/kb.txt").parent
    return path


@pytest.fixture(scope="module")
def kb() -> KGDataset:
    return read_kb(metaqa_dir() / "kb.txt")


@pytest.fixture(scope="module")
def questions() -> list[KGQuestion]:
    result = read_questions(metaqa_dir())
    assert result.issues == []
    return result.records


def test_kb_counts_match_readme(kb: KGDataset) -> None:
    assert kb.name == "metaqa"
    assert len(kb.triples) == 133_582
    assert len(kb.names) == 43_234
    assert kb.relations == sorted(README_RELATION_COUNTS)
    assert Counter(t.relation for t in kb.triples) == README_RELATION_COUNTS
    assert kb.issues == []
    assert len(set(kb.triples)) == len(kb.triples)


def test_kb_conventions(kb: KGDataset) -> None:
    assert kb.iri_base == METAQA_NS == "http://example.org/kgrag/metaqa/ns/"
    assert (kb.id_style, kb.name_lang) == ("slug", "en")
    assert all(k == v for k, v in kb.names.items())
    assert {t.head for t in kb.triples} | {t.tail for t in kb.triples} == set(kb.names)


def test_kb_literal_types(kb: KGDataset) -> None:
    years = {t.tail for t in kb.triples if t.relation == "release_year"}
    assert len(years) == 104
    assert kb.literal_types == {y: "gYear" for y in years}
    # the shipped ratings/votes are words, so none is typed as a number
    ratings = {t.tail for t in kb.triples if t.relation == "has_imdb_rating"}
    assert ratings == {"bad", "fantastic", "good"}
    # titles that are also years share the year's node (MetaQA keys entities by name)
    heads = {t.head for t in kb.triples}
    assert sorted(years & heads) == ["1941", "1969", "1981", "1984", "2010", "2012"]


def test_literal_type_rules() -> None:
    assert literal_type("release_year", "1999") == "gYear"
    assert literal_type("release_year", "199") is None
    assert literal_type("has_imdb_rating", "7.5") == "decimal"
    assert literal_type("has_imdb_rating", "good") is None
    assert literal_type("has_imdb_votes", "12034") == "integer"
    assert literal_type("directed_by", "1999") is None


def test_kb_malformed_lines_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "kb.txt"
    path.write_text(
        "A|directed_by|B\n"
        "just two|fields\n"
        "\n"
        "A|has_tags|x|y\n"
        "A||B\n"
        "A|directed_by|B\n"
        "M|release_year|2001\n"
        "M|has_imdb_rating|7.9\n"
        "M|has_imdb_rating|good\n",
        encoding="utf-8",
    )
    kg = read_kb(path)
    assert [(i.line, i.reason.split(",")[0]) for i in kg.issues] == [
        (2, "expected 3 '|'-separated fields"),
        (4, "expected 3 '|'-separated fields"),
        (5, "empty head"),
        (6, "duplicate of line 1"),
    ]
    assert str(kg.issues[0]).startswith(f"{path}:2: ")
    assert len(kg.triples) == 4
    assert kg.literal_types == {"2001": "gYear", "7.9": "decimal"}


def test_questions_counts_and_fields(questions: list[KGQuestion], kb: KGDataset) -> None:
    assert Counter(q.hop for q in questions) == README_QUESTION_COUNTS
    assert len({q.qid for q in questions}) == len(questions)
    first = questions[0]
    assert first.qid == "metaqa-1hop-dev-1"
    assert first.text == "what movies did [Temuera Morrison] act in"
    assert first.topic_names == first.topic_ids == ["Temuera Morrison"]
    assert first.answer_names == ["Once Were Warriors", "Tracker", "River Queen"]
    assert (first.dataset, first.split, first.qtype) == ("metaqa", "dev", "actor_to_movie")
    assert all(q.qtype and len(q.topic_names) == 1 and q.answer_names for q in questions)
    assert len({q.qtype for q in questions}) == 49
    # every topic and answer is an entity key of the KB
    assert all(t in kb.names for q in questions for t in q.topic_ids)
    assert all(a in kb.names for q in questions for a in q.answer_ids)


def test_questions_line_issues_and_multiple_topics(tmp_path: Path) -> None:
    hop = tmp_path / "1-hop"
    hop.mkdir()
    (hop / "dev.txt").write_text(
        "who is in [A] and [B]\tX|Y\nno tab here\nno topic\tX\nempty answers [A]\t|\n", encoding="utf-8"
    )
    (hop / "dev_qtype.txt").write_text("t1\nt2\nt3\nt4\n", encoding="utf-8")
    result = read_questions(tmp_path, hops=(1,))
    assert [(i.line, i.reason) for i in result.issues] == [
        (2, "no tab between question and answers"),
        (3, "no [bracketed] topic entity in the question"),
        (4, "no answers"),
    ]
    (q,) = result.records
    assert q.topic_names == ["A", "B"] and q.answer_names == ["X", "Y"] and q.qid == "metaqa-1hop-dev-1"


def test_questions_qtype_line_count_mismatch(tmp_path: Path) -> None:
    hop = tmp_path / "2-hop"
    hop.mkdir()
    (hop / "dev.txt").write_text("q [A]\tB\nq [C]\tD\n", encoding="utf-8")
    (hop / "dev_qtype.txt").write_text("only_one\n", encoding="utf-8")
    with pytest.raises(KgragError, match="has 1 lines but .* has 2"):
        read_questions(tmp_path, hops=(2,))


def test_missing_files_raise_data_not_found(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR") as err:
        read_kb(tmp_path / "kb.txt")
    assert str(tmp_path / "kb.txt") in str(err.value)
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR"):
        read_questions(tmp_path, hops=(1,))
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR") as err:
        load_kg(BUILTIN_SPECS["metaqa"], data_dir=tmp_path)
    assert str(tmp_path / "metaqa" / "kb.txt") in str(err.value)
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR"):
        load_questions(BUILTIN_SPECS["metaqa"], data_dir=tmp_path / "absent")


def test_load_api_reads_metaqa() -> None:
    data_dir = metaqa_dir().parent
    assert len(load_kg(BUILTIN_SPECS["metaqa"], data_dir).triples) == 133_582
    assert len(load_questions(BUILTIN_SPECS["metaqa"], data_dir).records) == sum(README_QUESTION_COUNTS.values())
    with pytest.raises(KgragError, match="choose one of"):
        load_kg(DatasetSpec(name="wikidata", reader="endpoint"), data_dir)


def test_split_is_seeded_stratified_and_complete(questions: list[KGQuestion]) -> None:
    split = split_train_validation(questions, validation_fraction=0.1, seed=0)
    train, val = split["train"], split["validation"]
    assert len(train) + len(val) == len(questions)
    assert {q.qid for q in train}.isdisjoint(q.qid for q in val)
    for hop, n in README_QUESTION_COUNTS.items():
        assert sum(q.hop == hop for q in val) == round(n * 0.1)
    assert {q.split for q in train} == {"train"} and {q.split for q in val} == {"validation"}
    assert {q.split for q in questions} == {"dev"}  # inputs untouched

    again = split_train_validation(list(reversed(questions)), validation_fraction=0.1, seed=0)
    assert [q.qid for q in again["validation"]] == [q.qid for q in val]
    other = split_train_validation(questions, validation_fraction=0.1, seed=1)
    assert {q.qid for q in other["validation"]} != {q.qid for q in val}


def test_split_rejects_bad_input(questions: list[KGQuestion]) -> None:
    with pytest.raises(ValueError):
        split_train_validation(questions[:10], validation_fraction=1.0)
    with pytest.raises(ValueError, match="unique"):
        split_train_validation(questions[:2] + questions[:1])
