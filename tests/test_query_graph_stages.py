"""The stages both query-graph planners share (kgrag.query_graph.stages), on questions read by read_cues: cues
a name holds dropped, the plan parts a cue becomes, the words a plan says, the unused-cue accounting."""

from __future__ import annotations

import pytest

from kgrag.query_graph.cues import read_cues
from kgrag.query_graph.stages import (
    COUNT_TEXT,
    comparison_constraint,
    count_aggregation,
    coverage,
    drop_cues,
    said,
    share_said,
    structure_parts,
    superlative_aggregation,
    unused_parts,
    within,
)


def test_structure_parts_in_order() -> None:
    cues = read_cues("how many books did Orwell write before 1950")
    assert structure_parts(cues, "books") == [COUNT_TEXT, "before 1950", "books"]
    assert structure_parts(cues) == ["how many", "before 1950"]
    assert structure_parts(read_cues("who wrote the oldest book")) == ["oldest"]
    assert structure_parts(read_cues("who wrote Dune")) == []
    assert structure_parts(read_cues("1900年以前出版的书有哪些"), "书") == ["1900年以前", "书"]


def test_coverage_and_unused_parts() -> None:
    wanted = ["how many", "before 1950", "books", "George Orwell"]
    unused = unused_parts(wanted, {"how many", "George Orwell"})
    assert unused == ["before 1950", "books"]
    assert coverage(len(unused), len(wanted)) == 0.5
    assert coverage(0, 0) == 1.0 and coverage(3, 2) == 0.0  # more left out than asked (a plan's unused names)


def test_a_cue_inside_a_name_is_dropped() -> None:
    cues = read_cues("who wrote The Last Cartographer")
    assert cues.superlative is not None and cues.superlative.text == "Last"
    name = (cues.question.index("The Last"), len(cues.question))
    assert within(cues.superlative.span, name) and not within(name, cues.superlative.span)
    dropped = drop_cues(cues, [cues.superlative], answer_words=[])
    assert dropped.superlative is None and dropped.answer_words == [] and dropped.spans == []
    assert dropped.masked() == "who wrote The Last Cartographer"
    assert drop_cues(cues, []) is cues


def test_the_plan_parts_a_cue_becomes() -> None:
    cues = read_cues("which novels by Orwell have more than 300 pages")
    assert cues.comparison is not None
    lc = comparison_constraint(cues.comparison, "pages", "page count", "out", "number")
    assert (lc.op, lc.value, lc.kind, lc.on, lc.text) == (">", 300.0, "number", "answer", "more than 300 pages")
    middle = comparison_constraint(read_cues("books published before 1900").comparison, "year", "year", "in",
                                   "year", on="middle")
    assert (middle.op, middle.direction, middle.on, middle.kind) == ("<", "in", "middle", "year")
    youngest = read_cues("who is the youngest author").superlative
    assert youngest is not None
    ag = superlative_aggregation(youngest, "birth_year", "birth year", kind="number")
    assert (ag.op, ag.relation, ag.counts, ag.text) == ("argmax", "birth_year", False, "youngest")
    most = read_cues("who won the most prizes").superlative
    assert most is not None and most.counts
    counted = superlative_aggregation(most, "won", "won", "in", "number", counts=True)
    assert (counted.op, counted.direction, counted.counts) == ("argmax", "in", True)
    assert superlative_aggregation(read_cues("the fewest books").superlative, "wrote", "wrote").op == "argmin"
    assert (count_aggregation().op, count_aggregation().text) == ("count", "how many")
    with pytest.raises(ValueError):  # a count over links needs the relation counted
        superlative_aggregation(most, "", "", counts=True)


def test_words_said() -> None:
    def first_five(a: str, b: str) -> bool:
        return a[:5] == b[:5]

    asked = ["born", "published", "published", "city"]
    named = ["publication", "year", "born"]
    assert said(asked, named, first_five) == 2  # distinct asked words: born, published (not city)
    assert share_said(asked, named, first_five) == 2 / 3
    assert share_said([], named, first_five) == 0.0
