"""Entity linking over plain text (kgrag.hrag.online.linker) on a small hand-built graph."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.online.linker import FUZZY_SIMILARITY, EntityLinker, normalise

NAMES = [
    "Ocean's Eleven",  # 0
    "Lock, Stock and Two Smoking Barrels",  # 1
    "Mr. & Mrs. Smith",  # 2
    "Se7en",  # 3
    "2001: A Space Odyssey",  # 4
    "WALL·E",  # 5
    "Amélie",  # 6
    "Alien",  # 7
    "Aliens",  # 8
    "Alien Nation",  # 9
    "Movies",  # 10: a film named like a template word
    "Temuera Morrison",  # 11
    "Ridley Scott",  # 12
    "Robert Downey Jr.",  # 13: the actor
    "robert downey jr",  # 14: the tag, same normalised name
    "In Darkness",  # 15
    "Darkness",  # 16
    "",  # 17: unnamed node
    "$",  # 18: no letter or digit
    "director",  # 19: a tag that is also a template word
    "Drama",  # 20: the genre
    "drama",  # 21: the tag
    "Once Were Warriors",  # 22
]
TRIPLES = [  # (head, relation, tail): gives the rows degrees
    (7, 0, 12), (8, 0, 12), (22, 1, 11), (4, 2, 20), (0, 2, 20), (15, 2, 21), (16, 1, 13), (17, 1, 13),
    (9, 3, 19),
]
TEMPLATES = [  # masked training questions (each word at least twice, so all are template words)
    "what movies did X act in", "what movies did X act in", "what films did X act in",
    "who directed X", "who directed X", "who acted in X", "who acted in X",
    "which movies can be described by X", "which movies can be described by X",
    "who is the director of X", "who is the director of X", "the director of X also directed which movies",
    "what are the genres of the movies whose actors also appear in X",
    "what are the genres of the films whose actors also appear in X",
    "what is the genre of X", "what is the genre of X",
]


@pytest.fixture(scope="module")
def linker() -> EntityLinker:
    t = np.array(TRIPLES, dtype=np.int32)
    keys = [f"k{i}" for i in range(len(NAMES))]
    relations = ["directed_by", "starred_actors", "has_genre", "has_tags"]
    graph = CSRGraph("t", "http://t/", keys, keys, NAMES, relations, t[:, 0], t[:, 1], t[:, 2])
    return EntityLinker.from_graph(graph, TEMPLATES)


def _top(linker: EntityLinker, text: str):
    links = linker.link(text)
    assert links, text
    return links[0]


@pytest.mark.parametrize(("a", "b"), [
    ("Ocean's Eleven", "oceans eleven"),
    ("Ocean’s Eleven", "Ocean's Eleven"),
    ("Lock, Stock and Two Smoking Barrels", "lock stock and two smoking barrels"),
    ("Mr. & Mrs. Smith", "Mr and Mrs Smith"),
    ("2001: A Space Odyssey", "2001 a space odyssey"),
    ("WALL·E", "Wall-E"),
    ("Amélie", "AMELIE"),
    ("Ame\u0301lie", "Amélie"),  # decomposed accent
    ("L.A. Confidential", "LA Confidential"),
    ("Spider-Man", "spider man"),
])
def test_normalise_makes_spellings_of_one_name_equal(a: str, b: str) -> None:
    assert normalise(a) == normalise(b) != ""


def test_normalise_keeps_what_identifies_a_name() -> None:
    assert normalise("Se7en") == "se7en" != normalise("Seven")
    assert normalise("Mr. & Mrs. Smith") == "mr and mrs smith"
    assert normalise("  ,;!  ") == ""


def test_names_with_punctuation_link_from_plain_spellings(linker: EntityLinker) -> None:
    link = _top(linker, "who acted in oceans eleven")
    assert (link.entity, link.name, link.match_type) == (0, "Ocean's Eleven", "normalised")
    assert link.similarity == 1.0
    assert "who acted in oceans eleven"[link.start : link.end] == "oceans eleven"
    assert _top(linker, "who directed lock stock and two smoking barrels").entity == 1
    assert _top(linker, "who acted in Mr and Mrs Smith").entity == 2
    assert _top(linker, "who directed Se7en").entity == 3
    assert _top(linker, "what is the genre of 2001 a space odyssey").entity == 4
    assert _top(linker, "who directed Wall-E").entity == 5
    possessive = _top(linker, "who is the director of Aliens's sequel")
    assert possessive.entity == 8 and possessive.end - possessive.start == len("Aliens")
    amelie = _top(linker, "who directed Amelie")
    assert (amelie.entity, amelie.name) == (6, "Amélie")
    exact = _top(linker, "who acted in Lock, Stock and Two Smoking Barrels")
    assert (exact.entity, exact.match_type) == (1, "exact")


def test_rows_sharing_a_normalised_name_prefer_the_exact_spelling(linker: EntityLinker) -> None:
    assert _top(linker, "what is the genre of Drama").entity == 20
    assert _top(linker, "which movies can be described by drama").entity == 21
    text = "what movies did Robert Downey Jr. act in"
    actor = _top(linker, text)
    assert (actor.entity, actor.match_type) == (13, "exact")
    assert text[actor.start : actor.end] == "Robert Downey Jr."  # the span grows over the name's own period
    assert _top(linker, "which movies can be described by robert downey jr").entity == 14
    both = linker.link(text, top=2)
    assert [lk.entity for lk in both] == [13, 14]


def test_a_longer_name_beats_the_shorter_one_inside_it(linker: EntityLinker) -> None:
    assert _top(linker, "who directed Alien Nation").entity == 9
    assert _top(linker, "who directed Aliens").entity == 8
    assert _top(linker, "who directed Alien").entity == 7
    ranked = [lk.entity for lk in linker.link("who directed Alien Nation", top=3)]
    assert ranked[:2] == [9, 7]  # the shorter overlapping span only as the runner-up


def test_template_words_that_are_entity_names_do_not_win(linker: EntityLinker) -> None:
    assert [lk.entity for lk in linker.link("what movies did Temuera Morrison act in", top=2)] == [11, 10]
    assert _top(linker, "who directed Movies").entity == 10  # the rest of the text is a known template
    assert _top(linker, "who is the director of Alien").entity == 7
    assert linker.template_words >= {"movies", "director", "who", "the", "in"}
    assert "x" not in linker.template_words


def test_template_fit_chooses_between_names_that_differ_by_a_template_word(linker: EntityLinker) -> None:
    # "In Darkness" and "Darkness" both exist: the templates say which one the question is about
    assert _top(linker, "what are the genres of the movies whose actors also appear in Darkness").entity == 16
    assert _top(linker, "who directed In Darkness").entity == 15
    # a phrasing no template has: the bigram fit of the masked text still keeps "in" outside the span
    assert _top(linker, "which genres do the movies whose actors appear in Darkness have").entity == 16


def test_near_miss_spellings_link_fuzzily(linker: EntityLinker) -> None:
    text = "what movies did Temuera Morison act in"
    link = _top(linker, text)
    assert (link.entity, link.match_type) == (11, "fuzzy")
    assert FUZZY_SIMILARITY <= link.similarity < 1.0
    assert text[link.start : link.end] == "Temuera Morison"
    walle = _top(linker, "who directed WALLE")
    assert (walle.entity, walle.match_type) == (5, "fuzzy")
    assert _top(linker, "who directed Ridly Scot").entity == 12
    assert linker.link("who directed Temuera Mxyzptlk") == []  # too far from any name


def test_no_match_gives_nothing(linker: EntityLinker) -> None:
    text = "what is the weather like tomorrow"
    assert linker.link(text) == []
    assert linker.topics(text) == ([], text)


def test_topics_brackets_the_chosen_span(linker: EntityLinker) -> None:
    assert linker.topics("who directed alien nation") == ([9], "who directed [alien nation]")
    assert linker.topics("what movies did Robert Downey Jr. act in") == (
        [13], "what movies did [Robert Downey Jr.] act in")


def test_bracketed_text_resolves_only_the_brackets(linker: EntityLinker) -> None:
    exact = linker.link("what is the genre of [Drama]")
    assert (exact[0].entity, exact[0].match_type) == (20, "bracket")
    normalised = _top(linker, "what movies did [temuera morrison] act in")
    assert (normalised.entity, normalised.match_type) == (11, "normalised")
    fuzzy = _top(linker, "what movies did [Temuera Morison] act in")
    assert (fuzzy.entity, fuzzy.match_type) == (11, "fuzzy")
    # the rest of the text is not searched, even where it names an entity
    assert [lk.entity for lk in linker.link("who directed [Alien] and Alien Nation", top=5)] == [7]
    assert linker.link("who directed [Nothing Like It] Alien Nation") == []
    assert linker.topics("compare [Alien] with [Aliens]") == ([7, 8], "compare [Alien] with [Aliens]")
    assert linker.topics("who directed [$]") == ([18], "who directed [$]")
    assert linker.link("who directed $") == []


@pytest.mark.parametrize("text", [
    "", "   \t\n", "\x00\x01\x7f\x1b[31m", "SELECT ?x WHERE { ?x <http://t/p> [] . ?x ?p \"a\"@en } LIMIT 10",
    "[" * 200, "]][[ ] [ ]", "🎬" * 2000, "a" * 10_000, "Alien " * 2000, "\u0301" * 100,
    "'s 's ’s", "&&& ... ---",
])
def test_hostile_text_never_raises(linker: EntityLinker, text: str) -> None:
    links = linker.link(text, top=3)
    assert isinstance(links, list) and len(links) <= 3
    rows, bracketed = linker.topics(text)
    assert isinstance(rows, list)
    assert bracketed.replace("[", "").replace("]", "") == text.replace("[", "").replace("]", "")


def test_long_text_still_finds_a_name_at_its_end(linker: EntityLinker) -> None:
    text = "lorem ipsum " * 800 + "who directed Alien Nation"
    link = _top(linker, text)
    assert link.entity == 9 and text[link.start : link.end] == "Alien Nation"


def test_without_template_texts_a_fallback_list_is_used() -> None:
    one = np.array([0], dtype=np.int32)
    graph = CSRGraph("t", "http://t/", ["a", "b"], ["a", "b"], ["Movies", "Heat"], ["r"], one, one, one + 1)
    plain = EntityLinker.from_graph(graph)
    assert "movies" in plain.template_words
    assert plain.topics("which movies star Heat") == ([1], "which movies star [Heat]")
