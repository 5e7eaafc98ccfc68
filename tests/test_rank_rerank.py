"""kgrag.rank.rerank: embedding, BM25 and hybrid rerankers (the LLM-free relation filter)."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag.rank.rerank import BM25Reranker, EmbeddingReranker, HybridReranker, Reranker, minmax
from kgrag.rank.sentence_embedder import Embedder

RELATIONS = [
    "people.person.nationality",
    "people.person.place_of_birth",
    "film.film.directed_by",
    "film.film.starring",
    "location.location.containedby",
    "chemistry.chemical_element.atomic_number",
]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory) -> Embedder:
    return Embedder(cache_dir=tmp_path_factory.mktemp("rerank-cache"))


def test_all_rerankers_satisfy_the_protocol(embedder) -> None:
    for reranker in (EmbeddingReranker(embedder), BM25Reranker(), HybridReranker(embedder)):
        assert isinstance(reranker, Reranker)


def test_bm25_reranker(embedder) -> None:
    top = BM25Reranker().rerank("where was she born, place of birth", RELATIONS, top_k=2)
    assert top[0][0] == 1 and len(top) == 2


def test_embedding_reranker_finds_paraphrases_bm25_cannot(embedder) -> None:
    query = "who made the movie"  # shares no word with film.film.directed_by
    top = EmbeddingReranker(embedder).rerank(query, RELATIONS, top_k=3)
    assert 2 in [i for i, _ in top[:2]]
    assert all(-1.0 <= s <= 1.0 for _, s in top)
    assert BM25Reranker().rerank(query, RELATIONS)[0][1] == 0.0


def test_hybrid_combines_both_signals(embedder) -> None:
    hybrid = HybridReranker(embedder, weight=0.5)
    assert hybrid.rerank("place of birth", RELATIONS, top_k=1)[0][0] == 1
    assert hybrid.rerank("which country is he a citizen of", RELATIONS, top_k=1)[0][0] == 0
    scores = hybrid.scores("film actors", RELATIONS)
    assert scores.shape == (len(RELATIONS),) and scores.min() >= 0.0 and scores.max() <= 1.0


def test_hybrid_weight_extremes_match_single_signals(embedder) -> None:
    query = "movie director"
    pure_embedding = [i for i, _ in HybridReranker(embedder, weight=1.0).rerank(query, RELATIONS)]
    assert pure_embedding == [i for i, _ in EmbeddingReranker(embedder).rerank(query, RELATIONS)]
    pure_bm25 = [i for i, _ in HybridReranker(embedder, weight=0.0).rerank(query, RELATIONS)]
    assert pure_bm25 == [i for i, _ in BM25Reranker().rerank(query, RELATIONS)]
    with pytest.raises(ValueError):
        HybridReranker(embedder, weight=1.5)


def test_ties_are_deterministic_by_index(embedder) -> None:
    docs = ["film.film.directed_by", "people.person.nationality", "film.film.directed_by"]
    for reranker in (EmbeddingReranker(embedder), BM25Reranker(), HybridReranker(embedder)):
        order = [i for i, _ in reranker.rerank("directed by", docs)]
        assert order == [0, 2, 1], type(reranker).__name__


def test_empty_docs_and_top_k(embedder) -> None:
    for reranker in (EmbeddingReranker(embedder), BM25Reranker(), HybridReranker(embedder)):
        assert reranker.rerank("anything", []) == []
        assert reranker.rerank("film", RELATIONS, top_k=0) == []
        assert len(reranker.rerank("film", RELATIONS, top_k=100)) == len(RELATIONS)


def test_minmax() -> None:
    np.testing.assert_allclose(minmax(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    np.testing.assert_array_equal(minmax(np.array([0.7, 0.7])), [0.0, 0.0])
    assert minmax(np.array([])).shape == (0,)
