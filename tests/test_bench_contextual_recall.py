"""The pure helpers of ``bench.contextual_recall``: variant generators, case sampling, questions and metrics."""

from __future__ import annotations

import random

import pytest

from bench.contextual_recall import (
    TEMPLATES,
    VARIANTS,
    Question,
    drop_char,
    judge,
    make_cases,
    make_questions,
    mapping_figures,
    mixed_script,
    mixed_script_forms,
    no_punct,
    recall_figures,
    single_type_names,
    substring,
    swap_chars,
    top_forms,
    top_mapping,
    usable,
)
from kgrag.search.context_models import (
    ContextualKnowledge,
    EntityKeyword,
    Extraction,
    KeywordMapping,
    StorageForm,
)


def mapping(keyword: str, type_id: str | None, forms: list[str], confidence: float) -> KeywordMapping:
    return KeywordMapping(keyword=keyword, object_type_id=type_id, match_confidence=confidence,
                          storage_forms=[StorageForm(form=f, match_type="fuzzy", sample_instance_id=f"x:{f}",
                                                     sample_instance_name=f) for f in forms])


@pytest.mark.parametrize("seed", range(20))
def test_drop_and_swap_touch_only_inner_characters(seed: int) -> None:
    rng = random.Random(seed)
    name = "小儿过敏性紫癜肾炎"
    dropped = drop_char(name, rng)
    assert dropped is not None and len(dropped) == len(name) - 1
    assert dropped[0] == name[0] and dropped[-1] == name[-1]
    swapped = swap_chars(name, rng)
    assert swapped is not None and swapped != name and sorted(swapped) == sorted(name)
    assert swapped[0] == name[0] and swapped[-1] == name[-1]
    assert sum(a != b for a, b in zip(swapped, name, strict=True)) == 2


def test_short_names_and_repeated_characters_do_not_qualify() -> None:
    rng = random.Random(0)
    assert drop_char("足癣", rng) is None and drop_char("明癣病", rng) is None
    assert swap_chars("头痛", rng) is None and swap_chars("哈哈哈哈", rng) is None
    assert swap_chars("感冒发热", rng) == "感发冒热"  # 4 chars: the only inner pair


def test_no_punct() -> None:
    rng = random.Random(0)
    assert no_punct("上、下气道梗阻", rng) == "上下气道梗阻"
    assert no_punct("慢严舒柠 荆菊感冒片", rng) == "慢严舒柠荆菊感冒片"
    assert no_punct("人用狂犬病疫苗(Vero细胞)", rng) == "人用狂犬病疫苗Vero细胞"
    assert no_punct("腰痛-血尿综合征", rng) == "腰痛血尿综合征"
    assert no_punct("上气道梗阻", rng) is None


@pytest.mark.parametrize("seed", range(30))
def test_substring_is_a_long_enough_proper_substring(seed: int) -> None:
    name = "胆道运动功能障碍"
    part = substring(name, random.Random(seed))
    assert part is not None and part in name and part != name
    assert len(part) >= 3 and len(part) >= 0.6 * len(name)
    assert substring("足癣", random.Random(seed)) is None and substring("淋巴结", random.Random(seed)) is None


def test_mixed_script_forms() -> None:
    assert mixed_script_forms("维生素B1片") == {"case": "维生素b1片", "space": "维生素 B1 片"}
    assert mixed_script_forms("阿莫西林胶囊0.25g")["drop"] == "阿莫西林胶囊"
    assert mixed_script_forms("人用狂犬病疫苗(Vero细胞)")["drop"] == "人用狂犬病疫苗"
    assert mixed_script_forms("无法引出moro反应")["case"] == "无法引出MORO反应"
    assert mixed_script_forms("复方氨基酸胶囊(8-11)") == {"drop": "复方氨基酸胶囊"}
    assert mixed_script_forms("上气道梗阻") == {} and mixed_script_forms("Barrett") == {}
    assert mixed_script("上气道梗阻", random.Random(0)) is None
    assert mixed_script("维生素B1片", random.Random(0)) in {"维生素b1片", "维生素 B1 片"}


def test_usable() -> None:
    assert usable("上气道梗阻") is None
    assert usable("Èé·¿ÕÍÍ´") == "mojibake"
    assert usable("上半身消瘦，下...") == "truncated"


def test_make_cases_skips_variants_that_are_other_stored_names() -> None:
    names = ["胃炎啊", "糖尿病肾病", "高血压病"]
    stored = set(names) | {"糖尿肾病"}
    always_drop_second = lambda name, rng: name[:2] + name[3:] if len(name) >= 4 else None  # noqa: E731
    cases = make_cases(names, always_drop_second, 5, random.Random(0), stored)
    assert cases.pairs == [("高血压病", "高血病")]
    assert cases.qualified == 2 and cases.skipped == 1
    limited = make_cases(names, VARIANTS["exact"], 2, random.Random(0), stored)
    assert limited.pairs == [("胃炎啊", "胃炎啊"), ("糖尿病肾病", "糖尿病肾病")] and limited.skipped == 0


def test_top_forms_and_top_mapping() -> None:
    mappings = [mapping("上气道", "Symptom", ["上气道感染", "上气道出血"], 0.5),
                mapping("上气道梗阻", "Disease", ["上气道梗阻", "气道梗阻", "喉梗阻", "x"], 0.9),
                mapping("症状", None, [], 0.0)]
    assert top_forms(mappings) == ["上气道感染", "上气道出血", "上气道梗阻", "气道梗阻", "喉梗阻"]
    assert top_forms(mappings, 2) == ["上气道感染", "上气道出血"]
    assert top_mapping(mappings).keyword == "上气道梗阻"
    assert top_mapping([mapping("a", "Drug", [], 0.7), mapping("b", "Check", [], 0.7)]).keyword == "a"
    assert top_mapping([mapping("症状", None, [], 0.0)]) is None and top_mapping([]) is None


def test_recall_figures() -> None:
    cases = {t: make_cases(["甲乙丙丁"], VARIANTS["exact"], 1, random.Random(0), set()) for t in ("Disease", "Drug")}
    out = recall_figures({"Disease": [True, False, True], "Drug": [False]}, cases)
    assert out["all"] == {"rate": 0.5, "hits": 2, "n": 4, "qualified": 2, "skipped": 0}
    assert out["Disease"]["rate"] == 0.6667 and out["Drug"]["hits"] == 0


def test_questions_are_balanced_and_use_single_type_names() -> None:
    names = {"Disease": [f"病{i}" for i in range(20)] + ["共用"], "Drug": [f"药{i}" for i in range(20)],
             "Symptom": [f"症{i}" for i in range(20)] + ["共用"], "Check": [f"查{i}" for i in range(20)]}
    single = single_type_names(names)
    assert "共用" not in single["Disease"] and "共用" not in single["Symptom"] and len(single["Drug"]) == 20
    questions = make_questions(single, 40, seed=1)
    assert questions == make_questions(single, 40, seed=1)
    for type_id in TEMPLATES:
        mine = [q for q in questions if q.expected == type_id]
        assert len(mine) == 10 and len({q.name for q in mine}) == 10
        assert all(q.name in single[type_id] and q.text.startswith(q.name) for q in mine)
    assert {q.text[len(q.name):] for q in questions if q.expected == "Disease"} == {"有哪些症状", "应该做什么检查"}


def test_judge_and_mapping_figures() -> None:
    q1 = Question("上气道梗阻有哪些症状", "上气道梗阻", "Disease")
    q2 = Question("安乐片治疗什么病", "安乐片", "Drug")
    q3 = Question("音叉检查检查什么", "音叉检查", "Check")
    ck1 = ContextualKnowledge(keyword_mappings=[mapping("上气道梗阻", "Disease", ["上气道梗阻"], 0.9),
                                                mapping("症状", "Symptom", ["症状"], 0.4)],
                              extraction=Extraction(entities=[EntityKeyword(text="上气道梗阻", confidence=0.9)]))
    ck2 = ContextualKnowledge(keyword_mappings=[mapping("安乐", "Disease", ["安乐死"], 0.8)],
                              extraction=Extraction(entities=[EntityKeyword(text="安乐", confidence=0.6)]))
    v = [judge(q1, ck1), judge(q2, ck2), judge(q3, None)]
    assert v[0] == {"top_type": "Disease", "correct": True, "no_mapping": False, "entity_exact": True,
                    "name_keyword_type": "Disease", "source": "rules", "errors": False}
    assert v[1]["correct"] is False and v[1]["top_type"] == "Disease" and v[1]["entity_exact"] is False
    assert v[2]["no_mapping"] and not v[2]["correct"]
    out = mapping_figures([q1, q2, q3], v)
    assert out["all"]["precision"] == {"rate": 0.3333, "hits": 1, "n": 3}
    assert out["all"]["no_mapping"] == 1 and out["all"]["entity_exact"]["hits"] == 1
    assert out["all"]["extraction_source"] == {"rules": 2, "None": 1} and out["all"]["with_errors"] == 0
    assert out["Disease"]["precision"]["rate"] == 1.0 and out["Symptom"]["precision"]["n"] == 0
