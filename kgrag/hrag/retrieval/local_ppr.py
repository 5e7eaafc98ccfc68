"""Local (push) personalised PageRank and the retrieval subgraph it defines (spec h-rag.md, the H-RAG
specification of a triple retriever and a GFlowNet path reasoner, §3, level 2), at a cost bounded by its
residual threshold instead of the graph's size.

    ppr = LocalPPR(graph, epsilon=1e-5)
    sub = ppr.retrieval_subgraph([seed], top_n=500, max_triples=3000)   # nodes, scores, triples, distances

The same walk as :class:`kgrag.hrag.retrieval.ppr.PersonalizedPageRank` — the undirected graph with edge multiplicities as
weights, restart ``α`` to the seeds (uniform), dangling mass back to the seeds — solved by Andersen–Chung–Lang
pushes: a node whose residual ``r(u) ≥ ε · deg(u)`` keeps ``α · r(u)`` and spreads ``(1-α) · r(u)`` over its edges.
Every node above the threshold is pushed at once per round (vectorised gathers over the mapped CSR, one
``np.unique`` + ``bincount`` to sum what each neighbour receives), so the work is ``O(1 / (ε α))`` edge visits
whatever the graph's size. A node's score is ``p(u) + α · r(u)`` (what it holds plus the restart share of what it
still has to push: a lower bound of its PPR, exact as ``ε → 0``). The dense per-entity scratch is allocated once
per object (zero pages cost nothing) and only the touched entries are reset after a question.

The topic distances G_retrieval's triples carry as features are BFS distances through the pushed region (the
nodes whose residual crossed the threshold — the walk's own reach), so they too cost what the push cost.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from kgrag.graph.csr import CSRGraph, in_sorted
from kgrag.hrag.retrieval.labels import Distances
from kgrag.hrag.retrieval.ppr import RetrievalSubgraph

__all__ = ["LocalPPR", "DEFAULT_EPSILON"]

#: residual threshold per unit of degree (the retriever config's default): on MetaQA validation it gives the global
#: power iteration's answers at ~40k edge visits a question (bench/ppr.py reports answers, overlap and timings)
DEFAULT_EPSILON = 1e-5

#: a kept node the push did not walk has its edges scanned for G_retrieval's triples when it has at most this many
SCAN_CAP = 2_000


class _Walked(NamedTuple):
    """The edges a push gathered: triple id, the pushed end, the other end (an edge twice when both were pushed)."""

    ids: np.ndarray
    near: np.ndarray
    far: np.ndarray


def _seed_set(seeds: Sequence[int]) -> np.ndarray:
    seeds_arr = np.unique(np.asarray(seeds, dtype=np.int64))
    if seeds_arr.size == 0:
        raise ValueError("no seed entity")
    return seeds_arr


def _weights(graph: CSRGraph, relation_weight: np.ndarray | None) -> np.ndarray | None:
    """Checked per-relation weights (None: the even walk)."""
    if relation_weight is None:
        return None
    weight = np.asarray(relation_weight, dtype=np.float64)
    if weight.shape != (graph.num_relations,) or not (weight > 0).all():
        raise ValueError(f"relation_weight needs one positive weight per relation ({graph.num_relations})")
    return weight


class LocalPPR:
    """Push PPR over a (mapped) :class:`CSRGraph`; see the module docstring. Thread-safe (one question at a time
    per object: the scratch is shared)."""

    def __init__(self, graph: CSRGraph, restart: float = 0.15, epsilon: float = DEFAULT_EPSILON,
                 max_hops: int = 3) -> None:
        if not 0 < restart < 1:
            raise ValueError(f"restart must be in (0, 1), got {restart}")
        if epsilon <= 0:
            raise ValueError(f"epsilon must be positive, got {epsilon}")
        self.graph = graph
        self.restart = restart
        self.epsilon = epsilon
        self.max_hops = max_hops
        self._degree = graph.degree
        n = graph.num_entities
        self._p = np.zeros(n, dtype=np.float64)
        self._r = np.zeros(n, dtype=np.float64)
        self._mark = np.zeros(n, dtype=bool)
        self._known = np.zeros(n, dtype=bool)
        self._stamp = np.zeros(n, dtype=np.int64)
        self._lock = threading.Lock()
        self.last_work = 0  # edges visited by the last push (what bench/ppr.py reports)

    # ------------------------------------------------------------------ the push
    def push(self, seeds: Sequence[int], relation_weight: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(nodes, scores, pushed)`` of one seed set: every touched node with its score (unsorted) and the
        nodes pushed at least once. ``relation_weight`` (one positive weight per relation): a pushed node
        spreads its mass over its edges in proportion to their relations' weights instead of evenly."""
        with self._lock:
            return self._push(_seed_set(seeds), _weights(self.graph, relation_weight))[:3]

    def _distinct(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(distinct values, for each value the index of its distinct slot)`` without sorting: every value
        writes its position into a per-entity stamp, the last writer of a value is its representative."""
        position = np.arange(values.size, dtype=np.int64)
        stamp = self._stamp
        stamp[values] = position
        rep = stamp[values]
        first = rep == position
        slot = np.cumsum(first) - 1
        return values[first], slot[rep]

    def _push(self, seeds: np.ndarray, weight: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Walked]:
        """``(nodes, scores, pushed, walked)``: see :meth:`push`; ``walked`` the edges the pushes gathered, with
        both ends (every edge of every pushed node: what G_retrieval's triples and distances are read from)."""
        p, r, deg, alpha, eps = self._p, self._r, self._degree, self.restart, self.epsilon
        share = 1.0 / seeds.size
        r[seeds] = share
        touched = [seeds]
        pushed, visited, near, far = [], [], [], []
        active = seeds
        work = 0
        try:
            while active.size:
                mass = r[active]
                r[active] = 0.0
                p[active] += alpha * mass
                pushed.append(active)
                d = deg[active]
                stuck = d == 0
                if stuck.any():  # dangling: its walk mass restarts at the seeds
                    r[seeds] += (1 - alpha) * float(mass[stuck].sum()) * share
                owner, ids, other = self.graph.edges_of(active[~stuck])
                visited.append(ids)
                near.append(active[~stuck][owner])
                far.append(other)
                work += other.size
                if other.size:
                    if weight is None:
                        spread = ((1 - alpha) * mass[~stuck] / d[~stuck])[owner]
                    else:  # by relation weight: w(e) / Σ w over the node's edges
                        w = weight[self.graph.rel[ids]]
                        total = np.bincount(owner, weights=w, minlength=int((~stuck).sum()))
                        spread = ((1 - alpha) * mass[~stuck] / total)[owner] * w
                    nodes, slot = self._distinct(other)
                    r[nodes] += np.bincount(slot, weights=spread, minlength=nodes.size)
                    touched.append(nodes)
                else:
                    nodes = np.zeros(0, dtype=np.int64)
                candidates = np.union1d(nodes, seeds) if stuck.any() else nodes
                active = candidates[r[candidates] >= eps * np.maximum(deg[candidates], 1)]
            nodes = self._distinct(np.concatenate(touched))[0]
            scores = p[nodes] + alpha * r[nodes]
            walked = _Walked(*(np.concatenate(part) if part else np.zeros(0, dtype=np.int64)
                               for part in (visited, near, far)))
            return nodes, scores, np.sort(self._distinct(np.concatenate(pushed))[0]), walked
        finally:
            for part in touched:
                p[part] = 0.0
                r[part] = 0.0
            self.last_work = work

    # ------------------------------------------------------------------ G_retrieval
    def retrieval_subgraph(self, seeds: Sequence[int], top_n: int, max_triples: int,
                           relation_weight: np.ndarray | None = None,
                           max_off_focus: int | None = None) -> RetrievalSubgraph:
        """The ``top_n`` best nodes (seeds always kept) and the triples with both ends among them; past
        ``max_triples`` those whose ends score highest (sum of the two) are kept. Carries the topic distances of
        its nodes through the pushed region. ``relation_weight``: see :meth:`push`; with it, ``max_off_focus``
        caps the triples whose relation weighs less than the heaviest (off the question's focus) first, best
        ends kept: around a hub of distractor edges they would otherwise fill the budget (10M haystack: ~2,600 of
        ~2,700 triples)."""
        seeds_arr = _seed_set(seeds)
        weight = _weights(self.graph, relation_weight)
        with self._lock:
            nodes, scores, pushed, walked = self._push(seeds_arr, weight)
        rank = scores.copy()
        rank[np.isin(nodes, seeds_arr)] = np.inf
        k = min(top_n, nodes.size)
        pick = np.argpartition(-rank, k - 1)[:k] if k < nodes.size else np.arange(nodes.size)
        pick = pick[np.lexsort((nodes[pick], -rank[pick]))]
        top, top_scores = nodes[pick], scores[pick]
        triples = self._induced(top, pushed, walked)
        if weight is not None and max_off_focus is not None:
            off = weight[self.graph.rel[triples]] < weight.max()
            if int(off.sum()) > max_off_focus:
                kept = self._best(triples[off], top, top_scores, max_off_focus)
                triples = np.sort(np.concatenate([triples[~off], kept]))
        if triples.size > max_triples:
            triples = np.sort(self._best(triples, top, top_scores, max_triples))
        distances = self._distances(seeds_arr, pushed, walked)
        return RetrievalSubgraph(top.astype(np.int32), top_scores.astype(np.float32), triples.astype(np.int64),
                                 distances)

    def _best(self, triples: np.ndarray, top: np.ndarray, top_scores: np.ndarray, k: int) -> np.ndarray:
        """The ``k`` of ``triples`` whose two ends (all in ``top``) score highest together."""
        if k <= 0:
            return triples[:0]
        if triples.size <= k:
            return triples
        g = self.graph
        ends = np.concatenate([g.head[triples], g.tail[triples]]).astype(np.int64)
        by_node = np.argsort(top)
        lookup = top_scores[by_node[np.searchsorted(top[by_node], ends)]]
        ranked = lookup[: triples.size] + lookup[triples.size :]
        return triples[np.argpartition(-ranked, k - 1)[:k]]

    def _induced(self, top: np.ndarray, pushed: np.ndarray, walked: _Walked) -> np.ndarray:
        """Sorted ids of the triples with both ends in ``top``: among the edges the push walked (every edge of a
        pushed node, its ends known from the walk) and the edges of the kept nodes it did not push that have at
        most :data:`SCAN_CAP` edges. Only an edge between two unpushed nodes that both exceed the cap (two hubs:
        PPR mass pools in hubs, which are never pushed) is not looked for; so the work is the push's, not the kept
        hubs' neighbourhoods."""
        g = self.graph
        unpushed = top[~np.isin(top, pushed, assume_unique=True)]
        scan = unpushed[g.degree[unpushed] <= SCAN_CAP]
        owner, scanned, other = g.edges_of(scan)
        with self._lock:
            mark = self._mark
            mark[top] = True
            try:
                walked_in = walked.ids[mark[walked.near] & mark[walked.far]]
                scanned_in = scanned[mark[other]]  # the scanned node itself is in top
            finally:
                mark[top] = False
        return np.unique(np.concatenate([walked_in, scanned_in]))

    def _distances(self, seeds: np.ndarray, pushed: np.ndarray, walked: _Walked) -> Distances:
        """:func:`~kgrag.hrag.retrieval.labels.topic_distances` of ``seeds`` through the pushed region (only pushed
        nodes expanded, their neighbours reached), read off the walked edges instead of the graph: a pushed node's
        walked edges are all its edges, so the result is the same."""
        nodes, dist = [seeds], [np.zeros(seeds.size, dtype=np.int8)]
        with self._lock:
            known, expanding = self._known, self._mark
            known[seeds] = True
            frontier = seeds
            try:
                for hop in range(1, self.max_hops + 1):
                    expand = frontier[in_sorted(frontier, pushed)]
                    if expand.size == 0:
                        break
                    expanding[expand] = True
                    reached = walked.far[expanding[walked.near]]
                    expanding[expand] = False
                    reached = reached[~known[reached]]
                    if reached.size == 0:
                        break
                    frontier = self._distinct(reached)[0]
                    known[frontier] = True
                    nodes.append(frontier)
                    dist.append(np.full(frontier.size, hop, dtype=np.int8))
            finally:
                for part in nodes:
                    known[part] = False
        all_nodes, all_dist = np.concatenate(nodes), np.concatenate(dist)
        order = np.argsort(all_nodes, kind="stable")
        return Distances(all_nodes[order], all_dist[order])

    def retrieval_subgraphs(self, seeds: Sequence[Sequence[int]], top_n: int, max_triples: int,
                            relation_weights: Sequence[np.ndarray | None] | None = None,
                            max_off_focus: int | None = None) -> list[RetrievalSubgraph]:
        weights = relation_weights if relation_weights is not None else [None] * len(seeds)
        return [self.retrieval_subgraph(s, top_n, max_triples, w, max_off_focus)
                for s, w in zip(seeds, weights, strict=True)]

