"""Weak supervision (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §3): the triples on the shortest topic → answer paths.

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

from kgrag.graph.csr import CSRGraph, in_sorted, sorted_lookup

__all__ = ["PathLabels", "UNREACHED", "Distances", "topic_distances", "shortest_path_labels"]

UNREACHED = -1


@dataclass
class PathLabels:
    positive_triples: np.ndarray  # int64 triple indices on a shortest topic -> answer path, ascending
    answer_hops: dict[int, int]  # answer entity -> its distance from the topic entities (reached answers only)

    @property
    def has_path(self) -> bool:
        return bool(self.answer_hops)


@dataclass
class Distances:
    """BFS distances of the nodes reached from the topics (``nodes`` sorted); every other node is ``UNREACHED``.
    Sparse: its size is the reached set, not the graph."""

    nodes: np.ndarray  # int64, sorted
    dist: np.ndarray  # int8, aligned with nodes

    def at(self, query: np.ndarray) -> np.ndarray:
        """Distances of ``query`` (int array), ``UNREACHED`` where not reached: int64, shaped like ``query``."""
        return sorted_lookup(self.nodes, self.dist, query, UNREACHED)


def topic_distances(graph: CSRGraph, topics: Sequence[int], max_hops: int = 3,
                    region: np.ndarray | None = None) -> Distances:
    """Undirected BFS distance from the nearest topic entity, up to ``max_hops``. With ``region`` (sorted node
    ids) only its nodes are expanded (their neighbours still get a distance): a BFS inside a walk's reach, whose
    work is that region's edges."""
    frontier = np.unique(np.asarray(topics, dtype=np.int64))
    nodes, dist = [frontier], [np.zeros(frontier.size, dtype=np.int8)]
    known = frontier
    for hop in range(1, max_hops + 1):
        expand = frontier if region is None else frontier[in_sorted(frontier, region)]
        if expand.size == 0:
            break
        reached = np.unique(graph.edges_of(expand)[2])
        frontier = reached[~in_sorted(reached, known)]
        if frontier.size == 0:
            break
        nodes.append(frontier)
        dist.append(np.full(frontier.size, hop, dtype=np.int8))
        known = np.union1d(known, frontier)
    all_nodes, all_dist = np.concatenate(nodes), np.concatenate(dist)
    order = np.argsort(all_nodes, kind="stable")
    return Distances(all_nodes[order], all_dist[order])


def shortest_path_labels(graph: CSRGraph, topics: Sequence[int], answers: Sequence[int],
                         max_hops: int = 3, distances: Distances | None = None) -> PathLabels:
    """Positive triples and answer distances for one question (see the module docstring); ``distances`` may pass
    :func:`topic_distances` of the same topics to ``max_hops - 1`` (or more) hops when the caller has them.

    The BFS from the topics stops one hop short: an answer it did not reach is at ``max_hops`` exactly when one of
    its own neighbours is at ``max_hops - 1`` (the last hop is taken from the answer's side). The labels are the
    same as a full BFS's, without expanding the last frontier — in a large graph, the hubs two hops out, whose
    neighbours are most of the graph."""
    if not len(topics) or not len(answers):
        return PathLabels(np.zeros(0, dtype=np.int64), {})
    dist = topic_distances(graph, topics, max_hops - 1) if distances is None else distances
    positives: list[np.ndarray] = []
    hops: dict[int, int] = {}
    for answer in np.unique(np.asarray(answers, dtype=np.int64)).tolist():
        length = int(dist.at(np.array([answer]))[0])
        if length == UNREACHED:
            _, _, neighbours = graph.edges_of(np.array([answer]))
            if not (dist.at(neighbours) == max_hops - 1).any():
                continue
            length = max_hops
        hops[answer] = length
        layer = np.array([answer], dtype=np.int64)
        for k in range(length, 0, -1):
            _, triples, other = graph.edges_of(layer)
            back = dist.at(other) == k - 1
            positives.append(triples[back])
            layer = np.unique(other[back])
    found = np.unique(np.concatenate(positives)) if positives else np.zeros(0, dtype=np.int64)
    return PathLabels(found, hops)
