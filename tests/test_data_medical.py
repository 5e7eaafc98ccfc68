"""Medical KG: typed disease records, derived graph counts (README), tolerant parsing, Cypher questions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from fixtures.settings import require_shared

from kgrag.data import load_kg, load_questions
from kgrag.data.medical import (
    MEDICAL_NS,
    MEDICAL_RELATIONS,
    Disease,
    medical_kg,
    node_type,
    read_cypher_questions,
    read_diseases,
    relation_entry_counts,
)
from kgrag.data.records import KGDataset
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.errors import DataNotFoundError, KgragError

# README "derived counts": list entries per relation, distinct names per node type
README_RELATION_ENTRIES = {
    "has_symptom": 58_399,
    "inspection": 39_211,
    "good_food": 34_262,
    "avoid_food": 34_283,
    "recipes": 39_707,
    "has_complication": 19_195,
    "department": 16_667,
    "common_drug": 13_479,
}
README_NODE_COUNTS = {
    "Symptom": 6_556,
    "Check": 3_342,
    "Drug": 1_204,
    "Department": 54,
    "Food": 385,
    "Recipe": 4_472,
}
# unique (disease, relation, target) triples: repeated list items and the two records named 胎膜早破 collapse
UNIQUE_TRIPLES = {
    "has_symptom": 58_398,
    "inspection": 39_098,
    "good_food": 34_221,
    "avoid_food": 34_215,
    "recipes": 39_663,
    "has_complication": 19_151,
    "department": 16_665,
    "common_drug": 13_477,
}


def medical_dir() -> Path:
    path = require_shared("medical/diseases").parent
    return path


@pytest.fixture(scope="module")
def diseases() -> list[Disease]:
    result = read_diseases(medical_dir() / "diseases")
    assert result.issues == []
    return result.records


@pytest.fixture(scope="module")
def kg(diseases: list[Disease]) -> KGDataset:
    return medical_kg(diseases)


def test_disease_records(diseases: list[Disease]) -> None:
    assert len(diseases) == 8_792
    assert len({d.name for d in diseases}) == 8_791
    assert [n for n, c in Counter(d.name for d in diseases).items() if c > 1] == ["胎膜早破"]
    first = diseases[0]
    assert (first.name, first.source) == ("百日咳", "medical_0.json#0")
    g = first.gaishu_info
    assert g.belongs_to_department == ["儿科", "小儿内科"] and g.cure_prob == "98%"
    assert first.symptom_data.symptoms[:2] == ["干咳", "惊厥"]
    assert first.food_info.recommand_recipes[0] == "清蒸鸡蛋羹"
    assert "血常规" in first.inspect_info and first.cause_info and first.nursing_info
    # 50 records lack the treatment block; its fields default to empty
    assert sum(1 for d in diseases if not d.gaishu_info.treat_way and not d.gaishu_info.cure_prob) == 50


def test_relation_entries_match_readme(diseases: list[Disease]) -> None:
    assert relation_entry_counts(diseases) == README_RELATION_ENTRIES


def test_graph_counts(kg: KGDataset) -> None:
    types = Counter(node_type(k) for k in kg.names)
    assert {t: types[t] for t in README_NODE_COUNTS} == README_NODE_COUNTS
    # 8,791 distinct disease names plus 8 complications that have no disease record of their own
    assert types["Disease"] == 8_799
    assert Counter(t.relation for t in kg.triples) == UNIQUE_TRIPLES
    assert len(set(kg.triples)) == len(kg.triples)


def test_graph_conventions(kg: KGDataset) -> None:
    assert (kg.name, kg.iri_base, kg.id_style, kg.name_lang) == ("medical", MEDICAL_NS, "slug", "zh")
    assert kg.iri_base == "http://example.org/kgrag/medical/ns/"
    assert all(k == f"{node_type(k)}:{v}" for k, v in kg.names.items())
    for t in kg.triples[::97]:
        assert node_type(t.head) == "Disease"
        assert node_type(t.tail) == MEDICAL_RELATIONS[t.relation][0]
    assert kg.names["Disease:百日咳"] == "百日咳"
    assert ("Disease:百日咳", "has_complication", "Disease:支气管肺炎") in {
        (t.head, t.relation, t.tail) for t in kg.triples if t.head == "Disease:百日咳"
    }


def test_tolerant_parsing_and_issues(tmp_path: Path) -> None:
    records = {
        "0": {"gaishu_info": {"name": " 感冒 ", "has_complication": None, "common_drug": "板蓝根"}},
        "1": {"gaishu_info": {"desc": "no name"}},
        "2": "not an object",
        "3": {
            "gaishu_info": {"name": "咳嗽", "belongs_to_department": ["内科", " ", ""]},
            "symptom_data": None,
            "food_info": {"good_food": ["梨"], "extra_field": 1},
        },
        "4": {"gaishu_info": {"name": "X", "has_complication": 5}},
    }
    (tmp_path / "medical_0.json").write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    result = read_diseases(tmp_path)
    assert [d.name for d in result.records] == ["感冒", "咳嗽"]
    assert [i.line for i in result.issues] == [2, 3, 5]
    cold, cough = result.records
    assert cold.gaishu_info.has_complication == [] and cold.gaishu_info.common_drug == ["板蓝根"]
    assert cough.gaishu_info.belongs_to_department == ["内科"] and cough.symptom_data.symptoms == []
    kg = medical_kg(result.records)
    assert {(t.head, t.relation, t.tail) for t in kg.triples} == {
        ("Disease:感冒", "common_drug", "Drug:板蓝根"),
        ("Disease:咳嗽", "department", "Department:内科"),
        ("Disease:咳嗽", "good_food", "Food:梨"),
    }


def test_cypher_questions() -> None:
    result = read_cypher_questions(medical_dir() / "questions_cypher_train.json")
    assert len(result.records) == 19_702 and result.issues == []
    q = result.records[0]
    assert (q.qid, q.question) == ("medical-cypher-1", "怎样可以治好细菌性阴道炎")
    assert q.cypher == "MATCH (d:Disease {name: '细菌性阴道炎'}) RETURN d.cure_way"
    assert all(r.cypher.upper().startswith("MATCH") for r in result.records[:100])


def test_load_api_and_missing_data(tmp_path: Path) -> None:
    with pytest.raises(KgragError, match="read_cypher_questions"):
        load_questions(BUILTIN_SPECS["medical"])
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR") as err:
        load_kg(BUILTIN_SPECS["medical"], data_dir=tmp_path)
    assert str(tmp_path / "medical" / "diseases") in str(err.value)
    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR"):
        read_cypher_questions(tmp_path / "questions_cypher_train.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="medical_"):
        read_diseases(tmp_path / "empty")


def test_load_kg_medical() -> None:
    kg = load_kg(BUILTIN_SPECS["medical"], medical_dir().parent)
    assert len(kg.triples) == sum(UNIQUE_TRIPLES.values()) and kg.issues == []
