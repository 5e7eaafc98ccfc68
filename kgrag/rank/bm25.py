"""BM25 ranking over short texts (relation names, entity names, chunks) with rank-bm25.

IDF choice: rank-bm25's ``BM25Okapi`` uses ``log((N - n + 0.5) / (n + 0.5))``, which is zero or negative for a
term found in half or more of the documents and is floored with ``epsilon * mean idf`` — a mean that is itself
zero or negative on tiny corpora (two documents: every term that tells them apart gets idf 0, so nothing
ranks). :class:`BM25Index` keeps ``BM25Okapi``'s term-frequency scoring but uses Lucene's idf,
``log(1 + (N - n + 0.5) / (n + 0.5))``, which is positive for every term and decreasing in ``n``, whatever
the corpus size. Scores are therefore always ``>= 0``; a document shares no query term iff its score is 0.

Degenerate inputs: an empty corpus scores to an empty array; a query with no tokens (empty, or only stop
words) scores every document 0, so :meth:`BM25Index.top_k` returns the first ``k`` documents in corpus order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from kgrag.rank.tokenize import tokenize

__all__ = ["BM25Index", "rank", "stable_top_k"]

Tokenizer = Callable[[str], list[str]]


def stable_top_k(scores: np.ndarray | Sequence[float], k: int | None = None) -> list[tuple[int, float]]:
    """``(index, score)`` pairs by score descending, ties by index ascending; ``k=None`` keeps all.

    NaN scores sort last. Used by every ranker in :mod:`kgrag.rank` so tie order is the same everywhere.
    """
    arr = np.asarray(scores, dtype=np.float64).reshape(-1)
    if arr.size == 0 or (k is not None and k <= 0):
        return []
    keyed = np.where(np.isnan(arr), -np.inf, arr)
    order = np.argsort(-keyed, kind="stable")  # stable: equal scores keep index order
    if k is not None:
        order = order[:k]
    return [(int(i), float(arr[i])) for i in order]


class _LuceneIdfBM25(BM25Okapi):
    """``BM25Okapi`` with the always-positive Lucene idf (see the module docstring)."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        n_docs = self.corpus_size
        self.idf = {word: math.log(1.0 + (n_docs - freq + 0.5) / (freq + 0.5)) for word, freq in nd.items()}
        self.average_idf = sum(self.idf.values()) / len(self.idf) if self.idf else 0.0


class BM25Index:
    """A BM25 index over ``docs`` (tokenised once, at construction).

    ``tokenizer`` must be the one queries go through too (default :func:`kgrag.rank.tokenize.tokenize`).
    """

    def __init__(
        self,
        docs: Sequence[str],
        tokenizer: Tokenizer = tokenize,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> None:
        self.docs: list[str] = list(docs)
        self.tokenizer = tokenizer
        self.k1 = k1
        self.b = b
        self.tokenized: list[list[str]] = [tokenizer(doc) for doc in self.docs]
        # rank-bm25 divides by the corpus size and the mean document length: skip it when either is 0.
        self._bm25: BM25Okapi | None = None
        if any(self.tokenized):
            self._bm25 = _LuceneIdfBM25(self.tokenized, k1=k1, b=b)

    def __len__(self) -> int:
        return len(self.docs)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float64, shape ``(len(docs),)``, all ``>= 0``)."""
        terms = self.tokenizer(query)
        if self._bm25 is None or not terms:
            return np.zeros(len(self.docs), dtype=np.float64)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float64)

    def top_k(self, query: str, k: int | None = None) -> list[tuple[int, float]]:
        """The best ``k`` documents as ``(index, score)``: score descending, then index ascending.

        Documents scoring 0 are included (a caller that wants only matches filters ``score > 0``).
        """
        return stable_top_k(self.scores(query), k)


def rank(query: str, docs: Sequence[str], k: int | None = None, tokenizer: Tokenizer = tokenize) -> list[str]:
    """``docs`` reordered by BM25 relevance to ``query`` (stable for ties), cut to ``k`` when given."""
    index = BM25Index(docs, tokenizer=tokenizer)
    return [index.docs[i] for i, _ in index.top_k(query, k)]
