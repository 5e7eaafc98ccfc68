"""How many hops separate each question's topic entities from its answers (undirected, batched)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

UNREACHABLE = -1


def hop_distance_batches(
    adjacency: sp.csr_matrix, sources: np.ndarray, max_hops: int = 3, batch: int = 256
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(source batch, distances)`` with breadth-first distances ≤ ``max_hops`` from each source to every
    node (``UNREACHABLE`` beyond), as an int8 array (batch × N).

    Vectorised: a batch of sources is a dense frontier expanded by one sparse × dense product per hop.
    """
    n = adjacency.shape[0]
    binary = adjacency.tocsr(copy=True)
    binary.data = np.ones_like(binary.data, dtype=np.float32)
    transposed = binary.T.tocsr()
    for start in range(0, len(sources), batch):
        idx = sources[start : start + batch]
        rows = np.arange(len(idx))
        dist = np.full((len(idx), n), UNREACHABLE, dtype=np.int8)
        dist[rows, idx] = 0
        frontier = np.zeros((n, len(idx)), dtype=np.float32)  # column per source
        frontier[idx, rows] = 1.0
        visited = frontier > 0
        for hop in range(1, max_hops + 1):
            new = (transposed @ frontier > 0) & ~visited
            if not new.any():
                break
            dist[new.T] = hop
            visited |= new
            frontier = new.astype(np.float32)
        yield idx, dist


def min_answer_hops(
    adjacency: sp.csr_matrix, topics: list[list[int]], answers: list[list[int]], max_hops: int = 3
) -> np.ndarray:
    """Per question, the fewest hops (undirected) from any topic entity to any answer; ``UNREACHABLE`` when
    none is within ``max_hops`` or the question has no resolved topic/answer."""
    by_topic: dict[int, list[int]] = defaultdict(list)
    for q, ts in enumerate(topics):
        if answers[q]:
            for t in ts:
                by_topic[t].append(q)
    result = np.full(len(topics), UNREACHABLE, dtype=np.int8)
    sources = np.array(sorted(by_topic), dtype=np.int64)
    for idx, dist in hop_distance_batches(adjacency, sources, max_hops=max_hops):
        for row, topic in enumerate(idx.tolist()):
            for q in by_topic[topic]:
                d = dist[row, answers[q]]
                d = d[d >= 0]
                if d.size and (result[q] == UNREACHABLE or d.min() < result[q]):
                    result[q] = d.min()
    return result
