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
