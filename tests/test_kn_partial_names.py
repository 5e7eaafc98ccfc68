"""Network topic linking as people write: a surname or one word of a longer English name links to the stored name
(kgrag.search.keywords.Lexicon.partial_spans, kgrag.agent.kn.linking.exact_matches)."""

from __future__ import annotations

from pathlib import Path

from kgrag.agent.kn.linking import exact_matches
from kgrag.network.loaders.declarative import load_declarative
from kgrag.search.keywords import Lexicon

LIBRARY = Path(__file__).resolve().parent.parent / "examples" / "library" / "library.yaml"


def _lexicon() -> Lexicon:
    network, instances, _ = load_declarative(LIBRARY)
    keys = {ot.id: ot.display_key for ot in network.object_types}
    return Lexicon.from_network(network, [(i.object_type_id, i.id, i.properties.get(keys[i.object_type_id], ""))
                                          for i in instances])


def _linked(question: str) -> list[str]:
    return [c.name for c in exact_matches(question, _lexicon())]


def test_a_surname_in_any_case_or_possessive_links_the_whole_name() -> None:
    assert _linked("what genres does Orwell write in") == ["George Orwell"]
    assert _linked("how many books did orwell write") == ["George Orwell"]
    assert _linked("which of Austen's books came first") == ["Jane Austen"]


def test_a_whole_name_wins_and_type_words_are_no_partial_names() -> None:
    assert _linked("who wrote Animal Farm") == ["Animal Farm"]
    assert "Ballantine Books" not in _linked("how many books are there")  # "books" names the type
    assert _linked("who wrote the book") == []
