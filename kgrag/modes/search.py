"""Stage 2 of the query modes: which stores each mode searches, and the four searches (spec 阶段2).

    hits = run_search(index, "hybrid", keywords, query_vector, param)   # entities, edges, chunks + flags

| mode   | entities (vector) | related edges | chunks via entities | chunks by vector |
|--------|-------------------|---------------|---------------------|------------------|
| local  | ll keywords       | –             | yes                 | –                |
| global | hl + ll keywords  | yes           | –                   | –                |
| hybrid | ll + hl keywords  | yes           | yes                 | –                |
| naive  | –                 | –             | –                   | the query        |
| mix    | ll + hl keywords  | yes           | yes                 | the query        |
| bypass | –                 | –             | –                   | –                |

* ``search_entities``: each keyword is embedded on its own; an entity's similarity is its best cosine to any
  keyword; the ``top_k`` most similar are then ordered by degree (spec: more important entities first) within
  similarity bands of 0.1 — a pure degree order put hubs (a symptom of 2,000 diseases) before the entity the
  question names, whose rows the entity budget then cut. Global mode searches with every keyword because its edges hang off entities: high-level words
  alone (症状) name no entity.
* ``related_edges``: every edge at those entities, each once, ordered by weight, then entity order, then degree
  (the sum of both ends' degrees). An edge's weight is its stored weight times how well its relation matches the
  high-level keywords (1 when none is given), so 症状 puts ``has_symptom`` edges first.
* ``entity_chunks``: the chunks whose ``source_id`` is one of the entities, in entity order, each entity's
  chunks closest to the query vector first (LightRAG's vector pick within an entity); the first ``chunk_top_k``.
* ``vector_chunks``: the ``chunk_top_k`` chunks closest to the query vector.
Every step is numpy over the :class:`~kgrag.modes.index.ModeIndex` arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kgrag.modes.index import ModeIndex
from kgrag.modes.keywords import ModeKeywords
from kgrag.modes.params import QueryParam

__all__ = ["SOURCES", "SearchHits", "sources", "run_search", "search_entities", "related_edges", "entity_chunks",
           "vector_chunks"]

#: mode -> (entities, relations, chunks via entities, chunks by vector)
SOURCES: dict[str, tuple[bool, bool, bool, bool]] = {
    "local": (True, False, True, False),
    "global": (True, True, False, False),
    "hybrid": (True, True, True, False),
    "naive": (False, False, False, True),
    "mix": (True, True, True, True),
    "bypass": (False, False, False, False),
}


SOURCE_NAMES = ("entities", "relations", "chunks_via_entities", "chunks_by_vector")


def sources(mode: str) -> dict[str, bool]:
    """What ``mode`` searches, by name (``raw_data["searched"]``)."""
    return dict(zip(SOURCE_NAMES, SOURCES[mode], strict=True))


@dataclass
class SearchHits:
    entities: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    entity_scores: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    edges: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    entity_chunks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vector_chunks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first (ties by index)."""
    if k >= len(scores):
        return np.lexsort((np.arange(len(scores)), -scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((part, -scores[part]))]


#: similarity bands of this width rank entities first by relevance, then (within a band) by degree
SIMILARITY_BAND = 0.1


def search_entities(index: ModeIndex, keyword_vectors: np.ndarray, top_k: int,
                    keywords: list[str] | tuple[str, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """``(entity rows, similarities)``: the ``top_k`` most similar, ordered by similarity band
    (:data:`SIMILARITY_BAND`), within a band by degree (the spec's "more important first"), then similarity.
    An entity that records one of ``keywords`` as another name (心梗 for 心肌梗死) has similarity 1."""
    if not len(keyword_vectors) or not index.has_vector.any():
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    sims = (index.entity_vectors @ keyword_vectors.T).max(axis=1)
    sims[~index.has_vector] = -np.inf
    for keyword in keywords:
        rows = index.alias_rows.get(keyword)
        if rows:
            sims[rows] = 1.0
    top = _top(sims, min(top_k, int(index.has_vector.sum())))
    band = np.floor(sims[top] / SIMILARITY_BAND + 1e-6)
    order = np.lexsort((-sims[top], -index.degree[top], -band))
    return top[order].astype(np.int64), sims[top[order]].astype(np.float32)


def relation_relevance(index: ModeIndex, high_level: list[str]) -> np.ndarray:
    """Per relation type, in [0, 1]: 1 when a high-level keyword is in its name or comment (or vice versa), else
    the best cosine of a keyword to the relation's name + comment; all 1 without high-level keywords."""
    n = len(index.relation_ids)
    if not high_level or not n:
        return np.ones(n, dtype=np.float32)
    key = ("relevance", hash(tuple(high_level)))
    known = index.memo.get(key)
    if known is None:
        known = index.memo[key] = _relevance(index, high_level)
    return known  # type: ignore[return-value]


def _relevance(index: ModeIndex, high_level: list[str]) -> np.ndarray:
    n = len(index.relation_ids)
    texts = [f"{name} {comment}" for name, comment in zip(index.relation_names, index.relation_comments,
                                                          strict=True)]
    rel = np.zeros(n, dtype=np.float32)
    for i, text in enumerate(texts):
        if any(k in text or (len(text) > 1 and index.relation_names[i] in k) for k in high_level):
            rel[i] = 1.0
    if (rel < 1).any():
        vectors = index.embedder.encode(texts)
        words = index.embedder.encode(high_level)
        rel = np.maximum(rel, np.clip((vectors @ words.T).max(axis=1), 0.0, 1.0))
    return rel


def related_edges(index: ModeIndex, entities: np.ndarray, relevance: np.ndarray) -> np.ndarray:
    """Distinct edges at ``entities``, ordered by weight (stored × relevance), then by the rank of their
    best-ranked endpoint among ``entities`` (so a retrieved entity's edges stay together, in entity order), then
    degree, then id."""
    edges = index.edges_of(entities)
    if not len(edges):
        return edges
    rank = np.full(len(index.entity_ids), len(entities), dtype=np.int64)
    rank[entities] = np.arange(len(entities))
    weight = index.edge_weight[edges] * relevance[index.edge_rel[edges]]
    degree = index.degree[index.edge_src[edges]] + index.degree[index.edge_tgt[edges]]
    endpoint = np.minimum(rank[index.edge_src[edges]], rank[index.edge_tgt[edges]])
    return edges[np.lexsort((edges, -degree, endpoint, -weight))]


def entity_chunks(index: ModeIndex, entities: np.ndarray, query_vector: np.ndarray | None, k: int) -> np.ndarray:
    """The first ``k`` chunks of ``entities``: in entity order, an entity's chunks closest to the query first."""
    chunks = index.chunks_of(entities)
    if not len(chunks):
        return chunks
    first = np.sort(np.unique(chunks, return_index=True)[1])
    chunks = chunks[first]  # first occurrence order = entity order
    owner = np.repeat(np.arange(len(entities)), [index.source_offsets[e + 1] - index.source_offsets[e]
                                                  for e in entities])[first]
    if query_vector is None:
        return chunks[:k]
    sims = np.where(index.chunk_has_vector[chunks], index.chunk_vectors[chunks] @ query_vector, -np.inf)
    return chunks[np.lexsort((-sims, owner))][:k]


def vector_chunks(index: ModeIndex, query_vector: np.ndarray | None, k: int) -> np.ndarray:
    """The ``k`` chunks closest to the query vector (none when the query has no vector)."""
    if query_vector is None or not index.chunk_has_vector.any():
        return np.zeros(0, np.int64)
    sims = index.chunk_vectors @ query_vector
    sims[~index.chunk_has_vector] = -np.inf
    return _top(sims, min(k, int(index.chunk_has_vector.sum()))).astype(np.int64)


def _encode(index: ModeIndex, texts: list[str]) -> np.ndarray:
    texts = [t for t in dict.fromkeys(texts) if t.strip()]
    if not texts:
        return np.zeros((0, index.entity_vectors.shape[1]), np.float32)
    vectors = np.stack([index.embedder.encode_query(t) for t in texts]).astype(np.float32)
    return vectors[np.linalg.norm(vectors, axis=1) > 0]


def run_search(index: ModeIndex, mode: str, keywords: ModeKeywords, query: str, param: QueryParam) -> SearchHits:
    """Search the stores ``mode`` names (see the module table)."""
    use_entities, use_edges, use_entity_chunks, use_vector_chunks = SOURCES[mode]
    hits = SearchHits()
    if mode == "bypass":
        return hits
    query_vector = None
    if use_entity_chunks or use_vector_chunks:
        q = _encode(index, [query])
        query_vector = q[0] if len(q) else None
    if use_entities:
        words = keywords.low_level if mode == "local" else [*keywords.low_level, *keywords.high_level]
        hits.entities, hits.entity_scores = search_entities(index, _encode(index, words or [query]), param.top_k,
                                                            words)
    if use_edges:
        hits.edges = related_edges(index, hits.entities, relation_relevance(index, keywords.high_level))
    if use_entity_chunks:
        hits.entity_chunks = entity_chunks(index, hits.entities, query_vector, param.chunk_top_k)
    if use_vector_chunks:
        hits.vector_chunks = vector_chunks(index, query_vector, param.chunk_top_k)
    return hits
