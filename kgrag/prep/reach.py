"""How many hops separate each question's topic entities from its answers (undirected, at most 3).

    hops = min_answer_hops(graph, [[topic]], [[answer_a, answer_b]])   # int8 per question, UNREACHABLE = -1

A bidirectional BFS per question over the CSR adjacency (:meth:`~kgrag.graph.csr.CSRGraph.edges_of`): each step
expands whichever side — from the topics or from the answers — has the smaller frontier degree, and stops at the
first layer that meets the other side. A hub on one side is never expanded when the other side is cheaper, so the
work is that of the smaller neighbourhoods, whatever the graph's size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgrag.graph.csr import CSRGraph, sorted_lookup

UNREACHABLE = -1


class _Side:
    """One side of the search: the nodes seen (sorted) with their depth, and the current frontier."""

    def __init__(self, start: np.ndarray) -> None:
        self.nodes = start
        self.depth = np.zeros(start.size, dtype=np.int64)
        self.frontier = start
        self.level = 0

    def depth_of(self, query: np.ndarray) -> np.ndarray:
        """Depth of each ``query`` node on this side, -1 where unseen."""
        return sorted_lookup(self.nodes, self.depth, query, -1)

    def expand(self, graph: CSRGraph) -> None:
        reached = np.unique(graph.edges_of(self.frontier)[2])
        self.level += 1
        new = reached[self.depth_of(reached) < 0]
        merged = np.concatenate([self.nodes, new])
        depth = np.concatenate([self.depth, np.full(new.size, self.level, dtype=np.int64)])
        order = np.argsort(merged, kind="stable")
        self.nodes, self.depth, self.frontier = merged[order], depth[order], new


def answer_distance(graph: CSRGraph, topics: Sequence[int], answers: Sequence[int], max_hops: int = 3) -> int:
    """Fewest undirected hops from any topic to any answer, ``UNREACHABLE`` beyond ``max_hops``."""
    forward = _Side(np.unique(np.asarray(topics, dtype=np.int64)))
    backward = _Side(np.unique(np.asarray(answers, dtype=np.int64)))
    if not forward.nodes.size or not backward.nodes.size:
        return UNREACHABLE
    if (backward.depth_of(forward.nodes) >= 0).any():
        return 0
    degree = graph.degree
    for _ in range(max_hops):
        side, other = ((forward, backward) if degree[forward.frontier].sum() <= degree[backward.frontier].sum()
                       else (backward, forward))
        if not side.frontier.size:
            return UNREACHABLE
        side.expand(graph)
        met = other.depth_of(side.frontier)
        if (met >= 0).any():
            best = side.level + int(met[met >= 0].min())
            return best if best <= max_hops else UNREACHABLE
    return UNREACHABLE


def min_answer_hops(graph: CSRGraph, topics: list[list[int]], answers: list[list[int]],
                    max_hops: int = 3) -> np.ndarray:
    """Per question, :func:`answer_distance` (int8; ``UNREACHABLE`` when it has no resolved topic or answer)."""
    result = np.full(len(topics), UNREACHABLE, dtype=np.int8)
    for q, (ts, ans) in enumerate(zip(topics, answers, strict=True)):
        if ts and ans:
            result[q] = answer_distance(graph, ts, ans, max_hops)
    return result
