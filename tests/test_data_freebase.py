"""Freebase-flavoured samples: WebQSP/CWQ readers and conversion, relation whitelist, metadata filter."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from fixtures.settings import require_shared

from kgrag.data import load_questions
from kgrag.data.freebase import (
    cwq_to_kgquestions,
    is_meaningless_relation,
    read_cwq,
    read_meaningless_relations,
    read_relation_whitelist,
    read_webqsp,
    strip_ns,
    webqsp_to_kgquestions,
)
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.errors import DataNotFoundError

MID = re.compile(r"^[mg]\.[0-9a-z_]+$")


def freebase_dir() -> Path:
    path = require_shared("freebase")
    return path


def test_webqsp_sample() -> None:
    result = read_webqsp(freebase_dir() / "webqsp_100.json")
    assert len(result.records) == 100 and result.issues == []
    q = result.records[0]
    assert (q.qid, q.question) == ("WebQTest-459", "where did jovan belcher kill himself?")
    assert (q.topic_entity_mid, q.topic_entity_name) == ("m.055d_1d", "Jovan Belcher")
    assert q.inferential_chain == ["people.deceased_person.place_of_death"]
    assert "ns:m.055d_1d ns:people.deceased_person.place_of_death ?x" in q.sparql
    assert [(a.mid, a.name) for a in q.answers] == [("m.04f_d", "Kansas City")]
    assert sum(len(x.parses) for x in result.records) == 111
    assert sum(len(x.constraints) for x in result.records for x in x.parses) == 31
    values = [a for x in result.records for a in x.answers if a.kind == "Value"]
    assert len(values) == 3 and all(a.mid is None and a.label == a.value for a in values)

    kgq = webqsp_to_kgquestions(result.records)
    assert len(kgq) == 100
    assert Counter(x.hop for x in kgq) == {1: 61, 2: 37, None: 2}
    assert all(x.topic_ids and all(MID.match(m) for m in x.topic_ids) for x in kgq)
    assert all(MID.match(m) for x in kgq for m in x.answer_ids)
    assert all(x.answer_names and x.dataset == "webqsp" and x.split == "test" for x in kgq)


def test_cwq_sample() -> None:
    result = read_cwq(freebase_dir() / "cwq_300.json")
    assert len(result.records) == 300 and result.issues == []
    assert Counter(q.compositionality_type for q in result.records) == {
        "composition": 133,
        "conjunction": 130,
        "comparative": 20,
        "superlative": 17,
    }
    assert Counter(len(q.topic_entities) for q in result.records) == {1: 179, 2: 114, 3: 7}
    kgq = cwq_to_kgquestions(result.records)
    first = kgq[0]
    assert first.topic_ids == ["m.05sqd0p"] and first.topic_names == ["Defamation"]
    assert first.answer_names == ["Parliamentary system"] and first.answer_ids == []
    assert first.qtype == "composition" and first.dataset == "cwq"


def test_load_questions_api_for_freebase_sets() -> None:
    data_dir = freebase_dir().parent
    freebase = BUILTIN_SPECS["freebase"]
    webqsp = freebase.model_copy(update={"questions": ("freebase/webqsp_100.json",)})
    cwq = freebase.model_copy(update={"questions": ("freebase/cwq_300.json",)})
    assert len(load_questions(webqsp, data_dir).records) == 100
    assert len(load_questions(cwq, data_dir).records) == 300


def test_whitelist_and_meaningless_relations() -> None:
    whitelist = read_relation_whitelist(freebase_dir() / "filtered_cwq_white_list.json")
    assert len(whitelist) == 2_868
    assert all("/" not in r and r.count(".") >= 2 for r in whitelist)
    assert {"people.person.spouse_s", "people.marriage.spouse", "film.actor.film"} <= set(whitelist)
    patterns = read_meaningless_relations(freebase_dir() / "meaningless_relations.txt")
    assert (
        len(patterns) == 23
        and "type.object.type" in patterns
        and not any(p.startswith("#") for p in patterns)
    )
    assert not any(is_meaningless_relation(r, patterns) for r in whitelist)


def test_is_meaningless_relation_exact_or_dotted_prefix() -> None:
    patterns = ["type.object.type", "common.document", "common.topic.article"]
    assert is_meaningless_relation("type.object.type", patterns)
    assert is_meaningless_relation("common.document.text", patterns)
    assert is_meaningless_relation("http://rdf.freebase.com/ns/common.topic.article", patterns)
    assert not is_meaningless_relation("common.topic.articles", patterns)
    assert not is_meaningless_relation("common.documentation", patterns)
    assert not is_meaningless_relation("film.film.genre", patterns)
    assert strip_ns("<http://rdf.freebase.com/ns/film.film.genre>") == "film.film.genre"
    assert strip_ns("ns:film.film.genre") == "film.film.genre"


def test_malformed_records_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "cwq.json"
    good = {"ID": "q1", "question": "who?", "topic_entity": {"m.01": "X"}, "answer": "Y"}
    path.write_text(
        json.dumps([good, {"ID": "q2", "question": "no answer"}, "not an object"]), encoding="utf-8"
    )
    result = read_cwq(path)
    assert [q.qid for q in result.records] == ["q1"]
    assert [i.line for i in result.issues] == [2, 3]
    assert "answer" in result.issues[0].reason

    path = tmp_path / "webqsp.json"
    record = {
        "QuestionId": "W1",
        "RawQuestion": "q?",
        "Parses": [{"ParseId": "W1.P0", "InferentialChain": None}],
    }
    path.write_text(
        json.dumps({"Questions": [record, {"QuestionId": "W2", "RawQuestion": "q?", "Parses": []}]})
    )
    result = read_webqsp(path)
    assert [q.qid for q in result.records] == ["W1"] and result.records[0].inferential_chain == []
    assert [i.line for i in result.issues] == [2]


def test_missing_file_raises_data_not_found(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR"):
        read_webqsp(tmp_path / "webqsp_100.json")
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR"):
        read_meaningless_relations(tmp_path / "meaningless_relations.txt")
