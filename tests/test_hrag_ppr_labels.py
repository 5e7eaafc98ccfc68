"""kgrag.hrag: shortest-path labels on a hand-checked graph, PPR against networkx (same scores, same ranking)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from fixtures.hrag import small_graph

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.labels import shortest_path_labels
from kgrag.hrag.retrieval.ppr import PersonalizedPageRank

#: 0 -a-> 1 -b-> 3 ; 0 -c-> 2 -d-> 3 (two shortest 2-hop paths) ; 4 -e-> 0 (points at the topic) ; 3 -f-> 5
#: 1 -g-> 2 (a side edge on no shortest path) ; 6 isolated
EDGES = [(0, "a", 1), (1, "b", 3), (0, "c", 2), (2, "d", 3), (4, "e", 0), (3, "f", 5), (1, "g", 2)]


def triples_of(g: CSRGraph, idx: np.ndarray) -> set[tuple[int, str, int]]:
    return {(int(g.head[i]), g.relations[g.rel[i]], int(g.tail[i])) for i in idx}


def test_shortest_paths_hand_checked() -> None:
    g = small_graph(EDGES, 7)
    two_paths = shortest_path_labels(g, [0], [3])
    assert triples_of(g, two_paths.positive_triples) == {(0, "a", 1), (1, "b", 3), (0, "c", 2), (2, "d", 3)}
    assert two_paths.answer_hops == {3: 2}
    backwards = shortest_path_labels(g, [5], [4])  # 5 <-f- 3 <- … <- 0 <-e- 4: every edge walked against it
    assert not backwards.has_path and backwards.positive_triples.size == 0  # 4 hops > max_hops=3
    assert shortest_path_labels(g, [5], [4], max_hops=4).answer_hops == {4: 4}
    reverse = shortest_path_labels(g, [4], [3])
    assert reverse.answer_hops == {3: 3}
    assert triples_of(g, reverse.positive_triples) == {(4, "e", 0), (0, "a", 1), (1, "b", 3), (0, "c", 2),
                                                       (2, "d", 3)}
    several = shortest_path_labels(g, [0], [1, 5, 6])  # 6 unreachable: left out, the others kept
    assert several.answer_hops == {1: 1, 5: 3}
    assert (1, "g", 2) not in triples_of(g, several.positive_triples)
    assert shortest_path_labels(g, [0], [0]).answer_hops == {0: 0}  # the topic itself: no triple needed
    assert shortest_path_labels(g, [0], []).has_path is False


def _random_graph(seed: int, n: int, m: int) -> CSRGraph:
    rng = np.random.default_rng(seed)
    edges = {(int(rng.integers(n)), f"r{int(rng.integers(3))}", int(rng.integers(n))) for _ in range(m)}
    edges = {(h, r, t) for h, r, t in edges if h != t}
    return small_graph(sorted(edges), n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppr_matches_networkx(seed: int) -> None:
    g = _random_graph(seed, 60, 150)
    ppr = PersonalizedPageRank(g, restart=0.15, tol=1e-12, max_iter=500)
    weights = g.adjacency(undirected=True).tocoo()
    nxg = nx.Graph()
    nxg.add_nodes_from(range(g.num_entities))
    for u, v, w in zip(weights.row, weights.col, weights.data, strict=True):
        if u <= v:
            nxg.add_edge(int(u), int(v), weight=float(w) * (0.5 if u == v else 1.0))
    for seeds in ([0], [3, 7]):
        personal = {s: 1.0 / len(seeds) for s in seeds}
        expected = nx.pagerank(nxg, alpha=0.85, personalization=personal, dangling=personal, tol=1e-13, max_iter=1000)
        ours = ppr.scores([seeds])[0]
        theirs = np.array([expected[i] for i in range(g.num_entities)])
        assert np.allclose(ours, theirs, atol=1e-6)  # float32 iterations
        assert abs(ours.sum() - 1.0) < 1e-6
        top = np.argsort(-theirs, kind="stable")[:15]
        assert list(np.argsort(-ours, kind="stable")[:15]) == list(top)


def test_retrieval_subgraph_keeps_seeds_and_caps_triples() -> None:
    g = _random_graph(5, 200, 600)
    ppr = PersonalizedPageRank(g)
    sub = ppr.retrieval_subgraph([17], top_n=30, max_triples=25)
    assert sub.nodes[0] == 17 and len(sub.nodes) == 30
    assert np.all(np.diff(sub.node_scores[1:]) <= 1e-12)  # by score, best first (after the seed)
    kept = set(sub.nodes.tolist())
    assert len(sub.triples) <= 25 and all(int(g.head[i]) in kept and int(g.tail[i]) in kept for i in sub.triples)
    batch = ppr.retrieval_subgraphs([[17], [3, 4]], top_n=30, max_triples=25)
    assert np.array_equal(batch[0].nodes, sub.nodes) and np.array_equal(batch[0].triples, sub.triples)
    with pytest.raises(ValueError, match="no seed"):
        ppr.scores([[]])
