"""How many hops separate each question's topic entities from its answers (undirected, batched)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import scipy.sparse as sp

UNREACHABLE = -1


def _binary(adjacency: sp.csr_matrix) -> sp.csr_matrix:
    a = adjacency.tocsr(copy=True)
    a.data = np.ones_like(a.data, dtype=np.float32)
    return a


def min_answer_hops(
    adjacency: sp.csr_matrix, topics: list[list[int]], answers: list[list[int]], batch: int = 1024
) -> np.ndarray:
    """Per question, the fewest hops (0–3, undirected) from any topic entity to any answer; ``UNREACHABLE``
    when none is within 3 hops or the question has no resolved topic/answer.

    Vectorised by topic batches: reach ≤ 1 and ≤ 2 from a batch of topics are two sparse × dense products;
    distance 3 is then "some neighbour of an answer is within 2 hops" (a gather, no third product, which is
    the densest one).
    """
    a = _binary(adjacency)
    n = a.shape[0]
    by_topic: dict[int, list[int]] = defaultdict(list)
    for q, ts in enumerate(topics):
        if answers[q]:
            for t in ts:
                by_topic[t].append(q)
    result = np.full(len(topics), UNREACHABLE, dtype=np.int8)
    sources = np.array(sorted(by_topic), dtype=np.int64)
    indptr, indices = a.indptr, a.indices
    for start in range(0, len(sources), batch):
        idx = sources[start : start + batch]
        cols = np.arange(len(idx))
        frontier = np.zeros((n, len(idx)), dtype=np.float32)
        frontier[idx, cols] = 1.0
        reach1 = (a @ frontier) > 0
        reach2 = ((a @ reach1.astype(np.float32)) > 0) | reach1
        for col, topic in enumerate(idx.tolist()):
            r1, r2 = reach1[:, col], reach2[:, col]  # strided views: only gathered at answer rows
            for q in by_topic[topic]:
                ans = np.asarray(answers[q])
                if (ans == topic).any():
                    d = 0
                elif r1[ans].any():
                    d = 1
                elif r2[ans].any():
                    d = 2
                else:
                    nbrs = np.concatenate([indices[indptr[x] : indptr[x + 1]] for x in ans])
                    d = 3 if r2[nbrs].any() else UNREACHABLE
                if d != UNREACHABLE and (result[q] == UNREACHABLE or d < result[q]):
                    result[q] = d
    return result
