"""Ranking building blocks: tokenisation (jieba for Chinese), BM25, embeddings with a disk cache, rerankers.

Importing this package is cheap: jieba loads on the first Chinese text, torch and sentence-transformers on
the first text that is not in the embedding cache.
"""

from kgrag.rank.bm25 import BM25Index, rank, stable_top_k
from kgrag.rank.rerank import BM25Reranker, EmbeddingReranker, HybridReranker, Reranker, minmax
from kgrag.rank.sentence_embedder import DEFAULT_MODEL, Embedder, EmbedderStats, load_model, resolve_model
from kgrag.rank.tokenize import add_words, tokenize

__all__ = [
    "DEFAULT_MODEL",
    "BM25Index",
    "BM25Reranker",
    "Embedder",
    "EmbedderStats",
    "EmbeddingReranker",
    "HybridReranker",
    "Reranker",
    "add_words",
    "load_model",
    "minmax",
    "rank",
    "resolve_model",
    "stable_top_k",
    "tokenize",
]
