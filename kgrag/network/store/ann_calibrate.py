"""The search expansion an ANN base needs: the smallest of :data:`EXPANSIONS` at which a search of the base finds
at least ``target`` of the exact :data:`NEIGHBOURS` nearest neighbours of a set of calibration queries.

    expansion, recalls = calibrate(index, queries, target=0.95)   # -> 512, {64: 0.87, …, 512: 0.957}

Contract: ``index`` is a usearch index (inner product over L2-normalised vectors, as
:func:`~kgrag.network.store.ann.build_base` makes it), ``queries`` float32 rows; the exact neighbours come from a
scan of the index's own vectors, :data:`EXACT_CHUNK` keys at a time (bounded memory); recall is strict (an exact
neighbour found, ties not counted). When no expansion reaches ``target`` the largest is taken. The index's
``expansion_search`` is left as it was.

The queries that calibrate a base are a sample of the network's own ``knn`` vectors of every object type
(:func:`~kgrag.network.store.ann_search.sample_vectors`): what a network's users search for is mostly its own
vocabulary, and a type is searched with every query, the other types' names included. On the 1M shop network
(bench/big_network.py) these queries' recall against the expansion stayed within 0.05 of the bench's own queries
(names, partial names and description words of every type) on each of the four big types — e.g. customers 0.938 /
0.953 at 512 / 1,024 against 0.956 / 0.969, orders 0.903 / 0.925 at 1,024 / 1,536 against 0.917 / 0.937 — where
a type's own vectors as queries (or their neighbours) reached 0.95 at 64 on orders and so chose far too little.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["EXACT_CHUNK", "EXPANSIONS", "NEIGHBOURS", "calibrate", "exact_neighbours"]

#: the expansions tried, smallest first
EXPANSIONS = (64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)
#: recall is measured at this many neighbours (the bench's recall@10)
NEIGHBOURS = 10
#: index keys compared with the queries per step of the exact scan
EXACT_CHUNK = 50_000


def exact_neighbours(index: object, queries: np.ndarray, k: int = NEIGHBOURS, chunk: int = EXACT_CHUNK) -> np.ndarray:
    """The keys of the ``k`` vectors of ``index`` with the largest inner product with each query, ``(queries, k)``
    (unordered within a row), by a scan of the index's vectors ``chunk`` keys at a time."""
    size = len(index)  # type: ignore[arg-type]
    k = min(k, size)
    best_sims = np.full((len(queries), k), -np.inf, np.float32)
    best_keys = np.zeros((len(queries), k), np.int64)
    for start in range(0, size, chunk):
        keys = np.arange(start, min(size, start + chunk), dtype=np.int64)
        vectors = np.asarray(index.get(keys), np.float32)  # type: ignore[attr-defined]
        sims = np.concatenate([best_sims, queries @ vectors.T], axis=1)
        candidates = np.concatenate([best_keys, np.broadcast_to(keys, (len(queries), len(keys)))], axis=1)
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        best_sims = np.take_along_axis(sims, top, axis=1)
        best_keys = np.take_along_axis(candidates, top, axis=1)
    return best_keys


def calibrate(index: object, queries: np.ndarray, target: float, expansions: tuple[int, ...] = EXPANSIONS,
              threads: int | None = None) -> tuple[int, dict[int, float]]:
    """``(expansion, {expansion tried: recall@NEIGHBOURS})``: the smallest of ``expansions`` whose search finds at
    least ``target`` of the queries' exact neighbours (the largest when none does); the smallest with no
    measurement when the index holds no more than :data:`NEIGHBOURS` keys or there are no queries."""
    size = len(index)  # type: ignore[arg-type]
    queries = np.ascontiguousarray(queries, np.float32)
    if size <= NEIGHBOURS or not len(queries):
        return expansions[0], {}
    exact = exact_neighbours(index, queries)
    before = index.expansion_search  # type: ignore[attr-defined]
    recalls: dict[int, float] = {}
    try:
        for expansion in expansions:
            index.expansion_search = expansion  # type: ignore[attr-defined]
            found = index.search(queries, NEIGHBOURS,  # type: ignore[attr-defined]
                                 threads=threads or len(os.sched_getaffinity(0))).keys
            hits = sum(len(set(row.tolist()) & set(want.tolist())) for row, want in zip(found, exact, strict=True))
            recalls[expansion] = round(hits / exact.size, 4)
            if recalls[expansion] >= target:
                return expansion, recalls
    finally:
        index.expansion_search = before  # type: ignore[attr-defined]
    return expansions[-1], recalls
