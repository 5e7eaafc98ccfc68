"""Weak supervision (spec h-rag.md §3): the triples on the shortest topic → answer paths.

For one question: BFS distances ``d`` from the topic entities over the undirected graph, up to ``max_hops``; for each
answer ``a`` reached at ``L = d[a]``, walk the shortest-path DAG back from ``a``: layer ``L`` is ``{a}``, layer
``k - 1`` the nodes at distance ``k - 1`` adjacent to layer ``k``. Every triple joining a node of layer ``k - 1`` to
one of layer ``k`` (in either direction — the dataset's paths may run against an edge) lies on a shortest path and
is a positive. Triple-level only, as the spec fixes it: the canonical ``(h, r, t)`` edges, no lifting of
``u → v`` transitions to parallel edges. A question none of whose answers is within ``max_hops`` gets no positive
and ``has_path = False`` (it stays in every denominator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgrag.graph.csr import CSRGraph

__all__ = ["PathLabels", "UNREACHED", "topic_distances", "shortest_path_labels"]

UNREACHED = -1


@dataclass
class PathLabels:
    positive_triples: np.ndarray  # int64 triple indices on a shortest topic -> answer path, ascending
    answer_hops: dict[int, int]  # answer entity -> its distance from the topic entities (reached answers only)

    @property
    def has_path(self) -> bool:
        return bool(self.answer_hops)


def topic_distances(graph: CSRGraph, topics: Sequence[int], max_hops: int = 3) -> np.ndarray:
    """Undirected BFS distance of every entity from the nearest topic entity; ``UNREACHED`` beyond ``max_hops``."""
    adjacency = graph.undirected_adjacency
    dist = np.full(graph.num_entities, UNREACHED, dtype=np.int64)
    frontier = np.unique(np.asarray(topics, dtype=np.int64))
    dist[frontier] = 0
    for hop in range(1, max_hops + 1):
        if frontier.size == 0:
            break
        reached = np.unique(adjacency[frontier].indices)
        frontier = reached[dist[reached] == UNREACHED]
        dist[frontier] = hop
    return dist


def _incident(graph: CSRGraph, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triples touching ``nodes`` and, for each, its other end."""
    out_t = graph.out_incidence[nodes].indices
    in_t = graph.in_incidence[nodes].indices
    triples = np.concatenate([out_t, in_t]).astype(np.int64)
    other = np.concatenate([graph.tail[out_t], graph.head[in_t]]).astype(np.int64)
    return triples, other


def shortest_path_labels(graph: CSRGraph, topics: Sequence[int], answers: Sequence[int],
                         max_hops: int = 3, distances: np.ndarray | None = None) -> PathLabels:
    """Positive triples and answer distances for one question (see the module docstring); ``distances`` may pass
    :func:`topic_distances` of the same topics and ``max_hops`` when the caller already has them."""
    if not len(topics) or not len(answers):
        return PathLabels(np.zeros(0, dtype=np.int64), {})
    dist = topic_distances(graph, topics, max_hops) if distances is None else distances
    positives: list[np.ndarray] = []
    hops: dict[int, int] = {}
    for answer in np.unique(np.asarray(answers, dtype=np.int64)).tolist():
        length = int(dist[answer])
        if length == UNREACHED:
            continue
        hops[answer] = length
        layer = np.array([answer], dtype=np.int64)
        for k in range(length, 0, -1):
            triples, other = _incident(graph, layer)
            back = dist[other] == k - 1
            positives.append(triples[back])
            layer = np.unique(other[back])
    found = np.unique(np.concatenate(positives)) if positives else np.zeros(0, dtype=np.int64)
    return PathLabels(found, hops)
