"""The local (push) PPR against networkx and the global power iteration, its work bound, and G_retrieval on the demo."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from kgrag.data.demo import demo_kg
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.labels import topic_distances
from kgrag.hrag.retrieval.local_ppr import LocalPPR
from kgrag.hrag.retrieval.ppr import PersonalizedPageRank


def _random_graph(seed: int, n: int = 80, m: int = 200) -> CSRGraph:
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, size=(m, 2))
    rel = rng.integers(0, 3, size=m)
    keys = [f"e{i:03d}" for i in range(n)]
    return CSRGraph.from_arrays("r", "http://x/", keys, keys, keys, ["a", "b", "c"], edges[:, 0].astype(np.int32),
                                rel.astype(np.int32), edges[:, 1].astype(np.int32))


def _networkx(graph: CSRGraph, seeds: list[int]) -> np.ndarray:
    """``networkx.pagerank`` on the undirected multigraph collapsed to weights (a self-loop counts twice, as in
    the walk's degree), restart 0.15, personalised and dangling mass to the seeds."""
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_entities))
    for h, t in zip(graph.head.tolist(), graph.tail.tolist(), strict=True):
        w = 2.0 if h == t else 1.0
        g.add_edge(h, t, weight=g.get_edge_data(h, t, {"weight": 0.0})["weight"] + w)
    personal = {s: 1.0 / len(set(seeds)) for s in set(seeds)}
    scores = nx.pagerank(g, alpha=0.85, personalization=personal, dangling=personal, tol=1e-13, max_iter=1000)
    return np.array([scores[i] for i in range(graph.num_entities)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_push_scores_match_networkx_within_the_threshold(seed: int) -> None:
    graph = _random_graph(seed)
    seeds = [int(seed * 7 % 80), int(seed * 13 % 80 + 1)]
    expected = _networkx(graph, seeds)
    nodes, scores, _ = LocalPPR(graph, epsilon=1e-9).push(seeds)
    got = np.zeros(graph.num_entities)
    got[nodes] = scores
    # the push leaves less than epsilon * degree of residual per node: the error is of that order
    assert np.abs(got - expected).max() < 1e-6
    coarse_nodes, coarse, _ = LocalPPR(graph, epsilon=1e-3).push(seeds)
    rough = np.zeros(graph.num_entities)
    rough[coarse_nodes] = coarse
    assert np.abs(rough - expected).max() < 0.05 and rough.sum() <= 1.0 + 1e-9


def test_push_work_is_bounded_by_the_threshold_not_the_graph() -> None:
    # a star of 200,000 leaves around the seed's neighbour: the hub is never pushed at a coarse threshold
    n = 200_002
    head = np.concatenate([[0], np.full(n - 2, 1)]).astype(np.int32)
    tail = np.concatenate([[1], np.arange(2, n)]).astype(np.int32)
    keys = [f"n{i:06d}" for i in range(n)]
    graph = CSRGraph.from_arrays("star", "http://x/", keys, keys, keys, ["r"], head, np.zeros(n - 1, np.int32), tail)
    ppr = LocalPPR(graph, epsilon=1e-4)
    nodes, scores, pushed = ppr.push([0])
    assert ppr.last_work <= 2 and pushed.tolist() == [0] and set(nodes.tolist()) == {0, 1}
    exact = PersonalizedPageRank(graph, tol=1e-10).scores([[0]])[0]
    assert scores[nodes == 0][0] == pytest.approx(exact[0], abs=0.2)  # coarse, and cheap


def test_retrieval_subgraph_on_the_demo_equals_the_global_one() -> None:
    graph = CSRGraph.from_dataset(demo_kg())
    local, glob = LocalPPR(graph, epsilon=1e-10), PersonalizedPageRank(graph, tol=1e-12, max_iter=1000)
    for seed in range(0, graph.num_entities, 7):
        a = local.retrieval_subgraph([seed], top_n=12, max_triples=40)
        b = glob.retrieval_subgraph([seed], top_n=12, max_triples=40)
        assert a.nodes.tolist() == b.nodes.tolist()  # the same nodes in the same order (ties: by id)
        assert np.allclose(a.node_scores, b.node_scores, atol=1e-7)
        assert a.triples.tolist() == b.triples.tolist()
        # topic distances through the pushed region equal the full BFS on every kept node
        assert a.distances.at(a.nodes).tolist() == b.distances.at(a.nodes).tolist()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_walked_edges_give_the_region_bfs_and_the_induced_triples(seed: int) -> None:
    """G_retrieval's distances and triples are read off the edges the push walked: the same as a BFS through the
    pushed region over the graph, and as every triple with both ends kept (found from the walk or a scan)."""
    graph = _random_graph(seed, n=300, m=900)
    ppr = LocalPPR(graph, epsilon=1e-4)
    seeds = [seed * 11 % 300, seed * 17 % 300 + 1]
    sub = ppr.retrieval_subgraph(seeds, top_n=60, max_triples=10_000)
    _, _, pushed = ppr.push(seeds)
    region = topic_distances(graph, seeds, ppr.max_hops, region=pushed)
    assert sub.distances.nodes.tolist() == region.nodes.tolist()
    assert sub.distances.dist.tolist() == region.dist.tolist()
    kept = np.zeros(graph.num_entities, dtype=bool)
    kept[sub.nodes] = True
    both_ends = np.flatnonzero(kept[graph.head] & kept[graph.tail])  # no hub above SCAN_CAP in this graph
    assert sub.triples.tolist() == both_ends.tolist() and both_ends.size > 20


def test_off_focus_triples_are_capped_with_the_best_ends_kept() -> None:
    graph = _random_graph(5, n=200, m=1200)
    ppr = LocalPPR(graph, epsilon=1e-4)
    weight = np.array([1.0, 0.1, 0.1])  # relation "a" is the question's focus
    full = ppr.retrieval_subgraph([3], top_n=80, max_triples=10_000, relation_weight=weight)
    on = graph.rel[full.triples] == 0
    capped = ppr.retrieval_subgraph([3], top_n=80, max_triples=10_000, relation_weight=weight, max_off_focus=25)
    assert int((~on).sum()) > 25
    kept_on = capped.triples[graph.rel[capped.triples] == 0]
    kept_off = capped.triples[graph.rel[capped.triples] != 0]
    assert kept_on.tolist() == full.triples[on].tolist() and kept_off.size == 25  # every focus triple stays
    score = dict(zip(full.nodes.tolist(), full.node_scores.tolist(), strict=True))
    ends = {int(t): score[int(graph.head[t])] + score[int(graph.tail[t])] for t in full.triples[~on]}
    dropped = set(ends) - set(kept_off.tolist())
    assert min(ends[t] for t in kept_off.tolist()) >= max(ends[t] for t in dropped) - 1e-6
    unfocused = ppr.retrieval_subgraph([3], top_n=80, max_triples=10_000, max_off_focus=25)  # no focus: no cap
    assert unfocused.triples.size > capped.triples.size
