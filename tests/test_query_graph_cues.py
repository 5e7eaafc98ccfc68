"""The question's structure words (kgrag.query_graph.cues) and the plan value (kgrag.query_graph.plan)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kgrag.query_graph.cues import read_cues
from kgrag.query_graph.plan import Aggregation, EntityConstraint, Hop, LiteralConstraint, QueryGraph, Topic


@pytest.mark.parametrize(("question", "op", "value", "value2", "kind"), [
    ("Which winners of the Nobel Prize were born before 1900?", "<", 1900, None, "year"),
    ("which films came out after 1999", ">", 1999, None, "year"),
    ("books published since 1950", ">=", 1950, None, "year"),
    ("who was born in 1921?", "=", 1921, None, "year"),
    ("which books were published in the 1940s", "between", 1940, 1949, "year"),
    ("albums released between 1970 and 1965", "between", 1965, 1970, "year"),
    ("books with more than 300 pages", ">", 300, None, "number"),
    ("rivers shorter than 2.5 thousand km", "<", 2500, None, "number"),
    ("cities with at least 1 million people", ">=", 1e6, None, "number"),
])
def test_comparisons(question: str, op: str, value: float, value2: float | None, kind: str) -> None:
    cues = read_cues(question)
    assert cues.comparison is not None
    assert (cues.comparison.op, cues.comparison.value, cues.comparison.value2, cues.comparison.kind) == (
        op, value, value2, kind)
    assert cues.comparison.text.lower() in question.lower()


def test_number_comparison_keeps_its_property_words() -> None:
    assert read_cues("books with more than 300 pages").comparison.words == ("pages",)
    assert "length" in read_cues("rivers longer than 100 km").comparison.words


@pytest.mark.parametrize(("question", "direction", "kind", "counts"), [
    ("who is the oldest scientist", "min", "date", False),
    ("who is the youngest author", "max", "date", False),
    ("which is the longest river in Brazil", "max", "number", False),
    ("which book by Orwell was published first", "min", "date", False),
    ("what is the most populous city of Japan", "max", "number", False),
    ("who won the most prizes", "max", "number", True),
    ("which author wrote the fewest books", "min", "number", True),
])
def test_superlatives(question: str, direction: str, kind: str, counts: bool) -> None:
    sup = read_cues(question).superlative
    assert sup is not None
    assert (sup.direction, sup.kind, sup.counts) == (direction, kind, counts)


def test_count_and_answer_type() -> None:
    cues = read_cues("How many prizes did Marie Curie win?")
    assert cues.is_count and cues.count_noun == "prizes"
    assert "how many" not in cues.masked().lower() and "Marie Curie" in cues.masked()
    assert read_cues("In which country was Albert Einstein born?").answer_words == ["country"]
    assert read_cues("what genres does Orwell write in").answer_words == ["genres"]
    assert read_cues("who is the oldest scientist").answer_words == ["scientist"]
    assert read_cues("who directed Carnival Lights?").answer_kind == "person"
    assert read_cues("where was Ada born").answer_kind == "place"
    assert read_cues("what year was Emma published").answer_kind == "year"
    assert read_cues("how tall is Mount Kenya").answer_kind == "number"
    assert read_cues("百日咳有多少种症状").is_count


def test_plain_lookup_has_no_structure() -> None:
    cues = read_cues("who directed Carnival Lights?")
    assert not cues.is_count and cues.comparison is None and cues.superlative is None
    assert cues.masked() == "who directed Carnival Lights?"
    assert read_cues("").comparison is None


def test_query_graph_is_validated_json_with_one_line() -> None:
    plan = QueryGraph(
        topics=[Topic(name="Nobel Prize", id="q1")], path=[Hop(relation="won", direction="in", label="won")],
        entity_constraint=EntityConstraint(topic=Topic(name="Paris", id="q2"), path=[Hop(relation="born_in")]),
        literal_constraint=LiteralConstraint(relation="birth_date", label="birth date", op="<", value=1900,
                                             kind="year", text="before 1900"),
        aggregation=Aggregation(op="count"), unused=[], confidence=0.8)
    line = plan.describe()
    assert line.startswith("Nobel Prize <-[won]- ?answer")
    assert "birth date(?answer) < 1900" in line and line.endswith("count") and "Paris" in line
    assert QueryGraph.model_validate_json(plan.model_dump_json()) == plan
    with pytest.raises(ValidationError):
        QueryGraph.model_validate({"topics": [], "path": [{"relation": "r"}]})
    with pytest.raises(ValidationError):
        QueryGraph.model_validate({"topics": [{"name": "a", "id": "a"}], "path": [{"relation": "r"}],
                                   "aggregation": {"op": "median"}})


# ---- Chinese: the same structure as the English questions above ----------------------------------------------
@pytest.mark.parametrize(("question", "english", "op", "value", "value2", "kind"), [
    ("1900年以前出生的获奖者有哪些", "Which winners were born before 1900?", "<", 1900, None, "year"),
    ("1999年之后上映的电影", "which films came out after 1999", ">", 1999, None, "year"),
    ("自1950年以来出版的书", "books published since 1950", ">=", 1950, None, "year"),
    ("谁在1921年出生", "who was born in 1921?", "=", 1921, None, "year"),
    ("1940年代出版的书有哪些", "which books were published in the 1940s", "between", 1940, 1949, "year"),
    ("1970年到1965年之间发行的专辑", "albums released between 1970 and 1965", "between", 1965, 1970, "year"),
    ("超过300页的书", "books with more than 300 pages", ">", 300, None, "number"),
    ("人口至少100万的城市", "cities with at least 1 million people", ">=", 1e6, None, "number"),
    ("少于5本书的作者", "authors with fewer than 5 books", "<", 5, None, "number"),
    ("页数300以上的书", "books with at least 300 pages", ">=", 300, None, "number"),
])
def test_chinese_comparisons_read_as_english(question: str, english: str, op: str, value: float,
                                             value2: float | None, kind: str) -> None:
    zh, en = read_cues(question).comparison, read_cues(english).comparison
    assert zh is not None and en is not None
    assert (zh.op, zh.value, zh.value2, zh.kind) == (en.op, en.value, en.value2, en.kind) == (op, value, value2, kind)
    assert zh.text in question and zh.text not in read_cues(question).masked()


def test_chinese_comparison_keeps_its_property_words() -> None:
    assert read_cues("超过300页的书").comparison.words == ("页",)
    assert "页数" in read_cues("页数300以上的书").comparison.words
    assert read_cues("超过300页的书").answer_words == ["书"]


@pytest.mark.parametrize(("question", "english", "direction", "kind", "counts"), [
    ("最年长的科学家是谁", "who is the oldest scientist", "min", "date", False),
    ("最年轻的作者是谁", "who is the youngest author", "max", "date", False),
    ("巴西最长的河流是哪条", "which is the longest river in Brazil", "max", "number", False),
    ("哪本书出版最早", "which book was published first", "min", "date", False),
    ("最新出版的书是哪本", "which is the newest book", "max", "date", False),
    ("谁获得的奖最多", "who won the most prizes", "max", "number", True),
    ("哪位作者写的书最少", "which author wrote the fewest books", "min", "number", True),
    ("写了最多书的作者是谁", "which author wrote the most books", "max", "number", True),
])
def test_chinese_superlatives_read_as_english(question: str, english: str, direction: str, kind: str,
                                              counts: bool) -> None:
    zh, en = read_cues(question).superlative, read_cues(english).superlative
    assert zh is not None and en is not None
    assert (zh.direction, zh.kind, zh.counts) == (en.direction, en.kind, en.counts) == (direction, kind, counts)


def test_chinese_count_of_things_and_the_noun_counted() -> None:
    for question, noun in (("百日咳有多少种症状", "症状"), ("奥威尔写了几本书", "书"), ("这个科室有几个", "")):
        cues = read_cues(question)
        assert cues.is_count and cues.count_noun == noun, question
    assert read_cues("奥威尔写了几本书").answer_words == ["书"]
    assert "几本" not in read_cues("奥威尔写了几本书").masked()


@pytest.mark.parametrize("question", [
    "眼外伤需要多少钱？",        # a bare 多少: a value ("how much"), not a count
    "新生儿黄疸正常值是多少",
    "宝宝这几天老是咳怎么办",    # 几天 / 几年 / 几次: durations, frequencies
    "肺癌通常能活几年",
    "CT检查一年最多做几次",      # 最多 + verb: "at most", no superlative
    "糖尿病好几年了怎么办",      # 好几: several
    "治疗哮喘的医院有哪几家",    # 哪几: which ones, a list
    "宫颈糜烂怎么治疗最好",      # 最好: no value ordered
    "最近有遗精现象怎么办",      # 最近: lately
])
def test_chinese_words_that_are_no_count_nor_superlative(question: str) -> None:
    cues = read_cues(question)
    assert not cues.is_count and cues.superlative is None and cues.comparison is None, question


def test_chinese_answer_types() -> None:
    assert read_cues("儿科有哪些疾病").answer_words == ["疾病"]
    assert read_cues("百日咳的症状有哪些").answer_words == ["症状"]
    assert read_cues("1990年以后出生的作者").answer_words == ["作者"]
    assert read_cues("最早的书是哪本").answer_words == ["书"]
    assert read_cues("哪本书出版最早").answer_words[0].startswith("书")
    assert read_cues("这部电影是谁导演的").answer_kind == "person"
    assert read_cues("艾达在哪里出生").answer_kind == "place"
    assert read_cues("爱玛是哪一年出版的").answer_kind == "year"
    assert read_cues("肯尼亚山有多高").answer_kind == "number"
    assert read_cues("眼外伤需要多少钱").answer_kind == "number"
    plain = read_cues("百日咳有什么症状")
    assert not plain.is_count and plain.comparison is None and plain.superlative is None
