"""Text normalisation in one place (kgrag.text): each form on real names and questions — accents, full-width
characters, Chinese — the differences between the forms kept, and the answer-kind tables read as their users read
them."""

from __future__ import annotations

import pytest

from kgrag.agent.kg.zero_shot import asked_type
from kgrag.agent.kn.intent import normalize_text
from kgrag.agent.kn.zero_shot import CUES, answer_classes
from kgrag.hrag.gflownet.llm_answer import normalise_name
from kgrag.hrag.online.linker import normalise as linker_normalise
from kgrag.prep.resolve import normalise as resolve_normalise
from kgrag.query_graph.cues import read_cues
from kgrag.search.name_ngrams import fold
from kgrag.search.storage_forms import similarity
from kgrag.text import (
    CHAIN_KINDS,
    PLANNER_KINDS,
    PLANNER_KINDS_ZH,
    SCHEMA_CLASSES,
    answer_key,
    answer_kind,
    answer_kinds,
    fold_alias,
    fold_case,
    fold_keyword,
    fold_punct,
    fold_width,
    name_key,
    plain_text,
    stem_key,
    word_key,
    word_tokens,
    words_key,
)


def test_case_fold_strips_and_casefolds_only() -> None:
    assert fold_case("  Drug ") == "drug"
    assert fold_case("STRASSE") == fold_case("Straße") == "strasse"  # casefold, not lower
    assert fold_case(None) == "" and fold_case("   ") == ""
    assert fold_case(" 百日咳 ") == "百日咳"
    assert fold_case("ＤＲＵＧ") == "ｄｒｕｇ"  # no width folding: kn_search compares stored text as stored


def test_width_folds_full_width_characters() -> None:
    assert fold_width("ＡＢＣ１２３") == "abc123"
    assert fold_width("百日咳（ＰＥＲＴＵＳＳＩＳ）") == "百日咳(pertussis)"
    assert fold_width("Café") == "café"  # accents kept
    assert fold_width("  two  spaces ") == "  two  spaces "  # spaces kept: tokenisation splits them
    assert plain_text("  Ｗｈａｔ   ＩＳ\t百日咳？ ") == "what is 百日咳?"


def test_answer_key_drops_surrounding_quotes_and_punctuation() -> None:
    assert answer_key("  “Kill   Bill: Vol. 1”  ") == "kill bill: vol. 1"
    assert answer_key("'Ｓｅ７ｅｎ'!") == "se7en"
    assert answer_key("«Amélie»") == "amélie"  # accents kept: gold names are compared as written
    assert answer_key("...") == ""


def test_name_key_folds_accents_case_and_punctuation() -> None:
    assert name_key("Hitchhiker's  Guide!") == "hitchhiker s guide"
    assert name_key("Amélie Poulain") == name_key("AMELIE poulain") == "amelie poulain"
    assert name_key("São_Paulo") == "sao paulo"
    assert name_key("Ｔｏｋｙｏ!") == "tokyo"
    assert name_key("北京 大学") == "北京 大学"


def test_words_key_joins_apostrophes_and_dots_and_spells_letters() -> None:
    assert words_key("Ocean's Eleven") == "oceans eleven"
    assert words_key("L.A. Confidential") == "la confidential"
    assert words_key("Mr. & Mrs. Smith") == "mr and mrs smith"
    assert words_key("Spider-Man") == "spider man" and words_key("WALL·E") == "wall e"
    assert words_key("Søren Kierkegaard") == "soren kierkegaard" and words_key("Łódź") == "lodz"
    assert words_key("Ｓｅ７ｅｎ") == "se7en"
    assert word_key("½") == "12" and word_key("&") == "and" and word_key("Zoë") == "zoe"
    # decomposed accents (e + U+0301) stay in one word
    assert word_tokens("Ame\u0301lie is here") == [("amelie", 0, 7), ("is", 8, 10), ("here", 11, 15)]
    assert words_key("$") == ""


def test_the_two_name_keys_differ_on_apostrophes() -> None:
    """Entity resolution breaks a word at an apostrophe, the linker joins it: two meanings, two functions."""
    assert name_key("Heidi's") == "heidi s"
    assert words_key("Heidi's") == "heidis"


def test_stem_key_removes_spaces_and_joiners() -> None:
    assert stem_key("Café-Society") == "cafesociety"
    assert stem_key("Hitchhiker's Guide") == "hitchhikersguide"
    assert stem_key("o’clock") == "oclock"
    assert stem_key("New York") == stem_key("new-york") == "newyork"


def test_punctuation_folds_keep_their_differences() -> None:
    name = "上、下气道梗阻"
    assert fold_punct(name) == fold_keyword(name) == fold_alias(name) == "上下气道梗阻"
    assert fold_punct("Hamman-Rich综合征") == "hammanrich综合征"
    # dashes, colons, semicolons: the one-edit index folds them, the stored-form comparison keeps them
    assert fold_keyword("Ⅱ型：糖尿病") == "ⅱ型糖尿病" and fold_punct("Ⅱ型：糖尿病") == "ⅱ型：糖尿病"
    assert fold_keyword("α—地中海贫血；") == "α地中海贫血"
    # title brackets and corner quotes: alias texts fold them, the one-edit index keeps them
    assert fold_alias("《红楼梦》") == "红楼梦" and fold_keyword("《红楼梦》") == "《红楼梦》"
    assert fold_alias("「脑溢血」") == "脑溢血"


@pytest.mark.parametrize(("question", "kind"), [
    ("In what year was she born?", "year"),
    ("When did Marie Curie die?", "year"),
    ("When did the war end?", "date"),
    ("Where is the Louvre?", "place"),
    ("WHO wrote Dune?", "person"),
    ("What is the capital of France?", ""),
])
def test_planner_kinds_english(question: str, kind: str) -> None:
    assert answer_kind(question, PLANNER_KINDS) == kind


@pytest.mark.parametrize(("question", "kind"), [
    ("这本书是哪一年出版的", "year"), ("他什么时候出生", "date"), ("百日咳在哪里治疗", "place"),
    ("红楼梦是谁写的", "person"), ("百日咳有哪些症状", ""),
])
def test_planner_kinds_chinese(question: str, kind: str) -> None:
    assert answer_kind(question, PLANNER_KINDS_ZH) == kind
    assert read_cues(question).answer_kind == kind or kind == ""


def test_the_three_readings_of_wh_words() -> None:
    """The same words at three granularities: the planner's year, the chain ranker's date, the schema ranker's
    time; "which country" is a place for the chain ranker only (the planner reads the noun instead)."""
    question = "what year was it released"
    assert answer_kind(question, PLANNER_KINDS) == "year"
    assert answer_kind(question, CHAIN_KINDS) == "date" == asked_type(question)
    assert answer_kinds(question, SCHEMA_CLASSES) == ["time"]
    assert asked_type("Which country is Nairobi in?") == "place"
    assert answer_kind("Which country is Nairobi in?", PLANNER_KINDS) == ""
    assert asked_type("how many moons") == "number" and asked_type("tell me") == "other"
    assert answer_kinds("哪些人容易得百日咳", SCHEMA_CLASSES) == ["person", "list"]
    assert answer_kinds("how is the number of cases counted", SCHEMA_CLASSES) == ["number", "manner"]
    assert answer_classes("how is the number of cases counted") == {"number": 1.0}  # a number is no manner


def test_old_names_are_the_shared_functions() -> None:
    """Every former normaliser now is a name of the one function (nothing reimplemented, no extra call)."""
    assert normalize_text is plain_text
    assert normalise_name is answer_key
    assert resolve_normalise is name_key
    assert linker_normalise is words_key
    assert fold is fold_keyword
    assert list(CUES) == [kind for kind, _ in SCHEMA_CLASSES]
    assert similarity("上下气道梗阻", "上、下气道梗阻") == 1.0
