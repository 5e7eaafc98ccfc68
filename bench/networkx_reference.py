"""networkx's PageRank as the reference the H-RAG PPR benches compare against (same restart, seeds, dangling mass).

    scores = networkx_ppr(to_networkx(graph), seeds=[3, 7], n=graph.num_entities)
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from kgrag.graph.csr import CSRGraph

__all__ = ["networkx_ppr", "to_networkx"]


def to_networkx(graph: CSRGraph) -> nx.Graph:
    """The graph's undirected adjacency as a weighted ``nx.Graph`` (a self-loop counted once)."""
    coo = graph.adjacency(undirected=True).tocoo()
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_entities))
    g.add_weighted_edges_from(
        (int(u), int(v), float(w) * (0.5 if u == v else 1.0))
        for u, v, w in zip(coo.row, coo.col, coo.data, strict=True) if u <= v
    )
    return g


def networkx_ppr(nxg: nx.Graph, seeds: list[int], n: int) -> np.ndarray:
    """``networkx.pagerank`` with the same restart (alpha 0.85), seeds and dangling handling, converged tightly."""
    personal = {int(x): 1.0 / len(set(seeds)) for x in set(seeds)}
    r = nx.pagerank(nxg, alpha=0.85, personalization=personal, dangling=personal, tol=1e-10, max_iter=300)
    return np.array([r[i] for i in range(n)])
