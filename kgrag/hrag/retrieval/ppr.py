"""Global personalized PageRank over G_global and the retrieval subgraph it defines (spec h-rag.md, the H-RAG
specification of a triple retriever and a GFlowNet path reasoner, §3, level 2): the exact baseline of
:class:`kgrag.hrag.retrieval.local_ppr.LocalPPR` (what every stage uses), whose cost grows with the graph.

    ppr = PersonalizedPageRank(graph)                  # builds the transition matrix once
    scores = ppr.scores([[seed_a], [seed_b, seed_c]])  # (questions, entities), one column-block power iteration
    sub = ppr.retrieval_subgraph([seed_a], top_n=2000, max_triples=20000)

The walk is on the undirected graph (a KGQA path may use an edge either way), edge multiplicities as weights:
``P = D^-1 A`` row-stochastic, ``x ← (1-α) · x P + α · s`` with restart distribution ``s`` uniform over the seeds,
dangling nodes (no edges) sending their mass back to the seeds — the same fixed point as
``networkx.pagerank(G, alpha=1-α, personalization=s, dangling=s)`` on the undirected multigraph collapsed to weights.
Several questions are solved at once as the columns of one dense ``(entities, questions)`` matrix: one sparse ×
dense product per iteration (torch's CSR kernel, which uses every core torch is given), no per-node Python.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.labels import Distances, topic_distances

__all__ = ["PersonalizedPageRank", "RetrievalSubgraph"]


@dataclass
class RetrievalSubgraph:
    """G_retrieval for one question: the kept nodes (best PPR first) and the triples among them."""

    nodes: np.ndarray  # int32 entity indices, by PPR score desc
    node_scores: np.ndarray  # float32, aligned with nodes
    triples: np.ndarray  # int64 triple indices into the graph's head/rel/tail, ascending
    distances: Distances  # topic distances of (at least) its nodes, the triples' structure features


class PersonalizedPageRank:
    def __init__(self, graph: CSRGraph, restart: float = 0.15, tol: float = 1e-6, max_iter: int = 100) -> None:
        """``restart`` = α, the probability of jumping back to the seeds (networkx's ``alpha`` is 1-α)."""
        self.graph = graph
        self.restart = restart
        self.tol = tol
        self.max_iter = max_iter
        adjacency = graph.adjacency(undirected=True).astype(np.float64).tocsr()
        degree = np.asarray(adjacency.sum(axis=1)).ravel()
        self.dangling = degree == 0
        inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
        transition = (sp.diags(inv) @ adjacency).tocsr()  # row-stochastic where degree > 0
        pt = transition.T.tocsr().astype(np.float32)  # x P computed as P^T x^T
        with warnings.catch_warnings():  # "sparse CSR support is in beta": the product used here is stable
            warnings.simplefilter("ignore", UserWarning)
            self.transition_t = torch.sparse_csr_tensor(
                torch.from_numpy(pt.indptr.astype(np.int64)), torch.from_numpy(pt.indices.astype(np.int64)),
                torch.from_numpy(pt.data), size=pt.shape, check_invariants=False,
            )
        self._dangling_idx = torch.from_numpy(np.flatnonzero(self.dangling))

    def scores(self, seeds: Sequence[Sequence[int]]) -> np.ndarray:
        """PPR vectors, one row per seed list: float64 ``(len(seeds), entities)``, each row sums to 1.

        The questions are the columns of one ``(entities, questions)`` float32 matrix: an iteration is one
        sparse × dense product, stopping when no question's L1 change exceeds ``tol``."""
        n = self.graph.num_entities
        restart = torch.zeros((n, len(seeds)), dtype=torch.float32)
        for col, seed_list in enumerate(seeds):
            unique = np.unique(np.asarray(seed_list, dtype=np.int64))
            if unique.size == 0:
                raise ValueError(f"question {col}: no seed entity")
            restart[torch.from_numpy(unique), col] = 1.0 / unique.size
        x = restart.clone()
        keep = 1.0 - self.restart
        with torch.no_grad():
            for _ in range(self.max_iter):
                nxt = torch.sparse.mm(self.transition_t, x)
                nxt.mul_(keep)
                if self._dangling_idx.numel():  # dangling mass goes back to the seeds
                    nxt.add_(restart * (keep * x[self._dangling_idx].sum(dim=0, keepdim=True)))
                nxt.add_(restart, alpha=self.restart)
                delta = float((nxt - x).abs_().sum(dim=0).max())
                x = nxt
                if delta < self.tol:
                    break
        return x.T.numpy().astype(np.float64)

    def retrieval_subgraph(self, seeds: Sequence[int], top_n: int, max_triples: int) -> RetrievalSubgraph:
        """The ``top_n`` best nodes by PPR (seeds always kept) and the triples with both ends among them; when
        more than ``max_triples`` remain, those whose ends score highest (sum of the two) are kept."""
        return self.retrieval_subgraphs([seeds], top_n, max_triples)[0]

    def retrieval_subgraphs(self, seeds: Sequence[Sequence[int]], top_n: int,
                            max_triples: int) -> list[RetrievalSubgraph]:
        scores = self.scores(seeds)
        out = []
        g = self.graph
        for row, seed_list in enumerate(seeds):
            s = scores[row].copy()
            s[np.asarray(seed_list, dtype=np.int64)] = np.inf  # seeds first, whatever their score
            k = min(top_n, s.size)
            top = np.argpartition(-s, k - 1)[:k] if k < s.size else np.arange(s.size)
            top = top[np.lexsort((top, -s[top]))]
            keep = np.zeros(g.num_entities, dtype=bool)
            keep[top] = True
            triples = np.flatnonzero(keep[g.head] & keep[g.tail])
            if triples.size > max_triples:
                weight = scores[row][g.head[triples]] + scores[row][g.tail[triples]]
                best = np.argpartition(-weight, max_triples - 1)[:max_triples]
                triples = np.sort(triples[best])
            out.append(RetrievalSubgraph(top.astype(np.int32), scores[row][top].astype(np.float32), triples,
                                         topic_distances(g, seed_list, 3)))
        return out
