"""kgrag.rank.bm25: relevance, deterministic ties, tiny corpora, empty inputs."""

from __future__ import annotations

import numpy as np

from kgrag.rank.bm25 import BM25Index, rank, stable_top_k

RELATIONS = [
    "people.person.nationality",
    "people.person.place_of_birth",
    "people.person.spouse_s",
    "film.film.directed_by",
    "film.director.film",
    "location.location.containedby",
]


def test_relevant_relation_ranks_first() -> None:
    index = BM25Index(RELATIONS)
    assert index.top_k("where is the place of birth", 1)[0][0] == 1
    assert index.top_k("the film was directed by whom", 1)[0][0] == 3
    assert rank("nationality of the person", RELATIONS, k=1) == ["people.person.nationality"]


def test_two_document_corpus_still_discriminates() -> None:
    # BM25Okapi's own idf is log(1.5/1.5) = 0 here for every distinguishing term: nothing would rank.
    index = BM25Index(["people.person.nationality", "people.person.place_of_birth"])
    scores = index.scores("place of birth")
    assert scores[1] > 0 and scores[0] == 0
    assert index.top_k("place of birth", 2)[0][0] == 1


def test_term_in_every_doc_keeps_positive_weight() -> None:
    index = BM25Index(["birth place", "birth date", "birth name"])
    assert np.all(index.scores("birth") > 0)
    assert index.top_k("birth date", 1)[0][0] == 1


def test_chinese_documents() -> None:
    docs = ["高血压的常用药物", "糖尿病的饮食建议", "上气道梗阻的常用药物"]
    assert BM25Index(docs).top_k("上气道梗阻用什么药物", 1)[0][0] == 2


def test_ties_are_ordered_by_index() -> None:
    docs = ["film director", "music album", "film director", "film director"]
    top = BM25Index(docs).top_k("film director", 4)
    assert [i for i, _ in top] == [0, 2, 3, 1]
    assert top[0][1] == top[1][1] == top[2][1] > top[3][1] == 0.0


def test_k_larger_than_corpus_and_non_positive() -> None:
    index = BM25Index(RELATIONS)
    assert len(index.top_k("film", 100)) == len(RELATIONS)
    assert index.top_k("film", 0) == []
    assert len(index.top_k("film")) == len(RELATIONS)


def test_empty_corpus() -> None:
    index = BM25Index([])
    assert len(index) == 0
    assert index.scores("film").shape == (0,)
    assert index.top_k("film", 5) == []
    assert rank("film", []) == []


def test_empty_query_scores_zero_in_corpus_order() -> None:
    index = BM25Index(RELATIONS)
    for query in ("", "the of what", "？"):
        assert not index.scores(query).any()
        assert index.top_k(query, 2) == [(0, 0.0), (1, 0.0)]


def test_documents_without_tokens() -> None:
    assert BM25Index(["", "..."]).top_k("film", 2) == [(0, 0.0), (1, 0.0)]
    index = BM25Index(["", "film director"])
    assert index.top_k("film", 1) == [(1, index.scores("film")[1])]


def test_stable_top_k_nan_last() -> None:
    assert [i for i, _ in stable_top_k([0.5, float("nan"), 0.5, 1.0])] == [3, 0, 2, 1]
