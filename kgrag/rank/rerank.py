"""Rerankers: order candidate texts (relation names, schema entries, chunks) by relevance to a query.

Every reranker returns ``(index into docs, score)`` pairs, score descending, ties by index ascending
(:func:`kgrag.rank.bm25.stable_top_k`), cut to ``top_k`` when given. :class:`HybridReranker` is the LLM-free
relation filter ("BM25 + embedding similarity"); :class:`EmbeddingReranker` is the default relation rerank.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from kgrag.rank.bm25 import BM25Index, Tokenizer, stable_top_k
from kgrag.rank.sentence_embedder import Embedder
from kgrag.rank.tokenize import tokenize

__all__ = ["BM25Reranker", "EmbeddingReranker", "HybridReranker", "Reranker", "minmax"]


@runtime_checkable
class Reranker(Protocol):
    """Anything that can order ``docs`` for ``query``."""

    def rerank(self, query: str, docs: Sequence[str], top_k: int | None = None) -> list[tuple[int, float]]:
        """``(index, score)`` pairs, best first, ties by index; at most ``top_k`` when given."""
        ...


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scale to ``[0, 1]`` by min-max; a constant array (no information) maps to all zeros."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr
    low, high = float(arr.min()), float(arr.max())
    if high - low <= 1e-12:
        return np.zeros_like(arr)
    return (arr - low) / (high - low)


class EmbeddingReranker:
    """Cosine similarity between the query's and each doc's embedding (scores in ``[-1, 1]``)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder if embedder is not None else Embedder.from_settings()

    def scores(self, query: str, docs: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedder.similarity(query, list(docs)), dtype=np.float64)

    def rerank(self, query: str, docs: Sequence[str], top_k: int | None = None) -> list[tuple[int, float]]:
        return stable_top_k(self.scores(query, docs), top_k)


class BM25Reranker:
    """BM25 over the candidate docs themselves (an index is built per call; scores ``>= 0``)."""

    def __init__(self, tokenizer: Tokenizer = tokenize, k1: float = 1.5, b: float = 0.75) -> None:
        self.tokenizer = tokenizer
        self.k1 = k1
        self.b = b

    def scores(self, query: str, docs: Sequence[str]) -> np.ndarray:
        return BM25Index(docs, tokenizer=self.tokenizer, k1=self.k1, b=self.b).scores(query)

    def rerank(self, query: str, docs: Sequence[str], top_k: int | None = None) -> list[tuple[int, float]]:
        return stable_top_k(self.scores(query, docs), top_k)


class HybridReranker:
    """``weight * minmax(cosine) + (1 - weight) * minmax(BM25)`` over the candidates (scores in ``[0, 1]``).

    Min-max puts both signals on one scale per candidate set; a signal that does not tell the candidates
    apart (all BM25 scores 0 because no doc shares a query word, or a single candidate) contributes 0, so the
    other signal alone decides. ``weight=1`` is pure embedding order, ``weight=0`` pure BM25 order (with
    ties, among equal BM25 scores, left to index order).
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        weight: float = 0.5,
        tokenizer: Tokenizer = tokenize,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be in [0, 1], got {weight}")
        self.weight = weight
        self.embedding = EmbeddingReranker(embedder)
        self.bm25 = BM25Reranker(tokenizer=tokenizer, k1=k1, b=b)

    def scores(self, query: str, docs: Sequence[str]) -> np.ndarray:
        docs = list(docs)
        if not docs:
            return np.zeros(0, dtype=np.float64)
        lexical = minmax(self.bm25.scores(query, docs))
        if self.weight == 0.0:
            return lexical
        semantic = minmax(self.embedding.scores(query, docs))
        return self.weight * semantic + (1.0 - self.weight) * lexical

    def rerank(self, query: str, docs: Sequence[str], top_k: int | None = None) -> list[tuple[int, float]]:
        return stable_top_k(self.scores(query, docs), top_k)
