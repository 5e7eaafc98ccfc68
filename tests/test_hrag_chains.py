"""The retriever's relation-chain prior: chain walks, the path cover, the prior's training, and g_agent holding a
3-hop chain that the scorer alone would cut for a closer distractor."""

from __future__ import annotations

import numpy as np

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.chain_labels import QuestionChains, best_chains
from kgrag.hrag.retrieval.chains import (
    ChainPrior,
    ChainWalker,
    chain_candidates,
    chain_text,
    train_chain_prior,
)
from kgrag.hrag.retrieval.pipeline import build_g_agent
from kgrag.hrag.retrieval.ppr import PersonalizedPageRank
from kgrag.hrag.retrieval.questions import HragQuestion
from kgrag.hrag.retrieval.samples import build_samples

DIRECTED, STARRED = 0, 1
# films 0 (the topic), 1, 2; director 3 directed 0 and 1; actors: 4 in film 0 (the close distractor), 5 and 6 in
# film 1; film 2 (director 7) stars 4 too
TRIPLES = [(0, DIRECTED, 3), (1, DIRECTED, 3), (0, STARRED, 4), (1, STARRED, 5), (1, STARRED, 6), (2, DIRECTED, 7),
           (2, STARRED, 4)]
# "who acted in the films directed by the director of [film 0]": directed_by>, <directed_by, starred_actors>
CHAIN = [2 * DIRECTED, 2 * DIRECTED + 1, 2 * STARRED]


def _graph(triples: list[tuple[int, int, int]] = TRIPLES, relations: int = 2) -> CSRGraph:
    t = np.array(triples, dtype=np.int64)
    n = int(t[:, [0, 2]].max()) + 1
    names = [f"e{i}" for i in range(n)]
    return CSRGraph("toy", "http://x/", names, names, names, ["directed_by", "starred_actors"][:relations],
                    t[:, 0], t[:, 1], t[:, 2])


def _ids(graph: CSRGraph, triples: list[tuple[int, int, int]]) -> set[int]:
    key = {(int(h), int(r), int(t)): i for i, (h, r, t) in enumerate(zip(graph.head, graph.rel, graph.tail,
                                                                         strict=True))}
    return {key[t] for t in triples}


def test_walk_keeps_only_complete_walks_and_never_returns_to_the_topic() -> None:
    g = _graph()
    walker = ChainWalker(g)
    assert walker.answers([0], CHAIN).tolist() == [5, 6]  # film 0's own actor 4 is not reached: film 0 is the topic
    assert set(walker.triples([0], CHAIN).tolist()) == _ids(g, [(0, 0, 3), (1, 0, 3), (1, 1, 5), (1, 1, 6)])
    assert walker.triples([2], CHAIN).size == 0  # director 7 directed nothing else: no walk completes
    assert chain_text(CHAIN, g.relations) == "directed_by> <directed_by starred_actors>"


def test_cover_keeps_a_whole_walk_for_every_answer_it_keeps() -> None:
    # topic 0 -r0-> hubs 1..3, each hub -r0-> two of its own ends: 9 walk triples, a budget of 5
    triples = [(0, 0, h) for h in (1, 2, 3)] + [(h, 0, 10 + 2 * h + k) for h in (1, 2, 3) for k in (0, 1)]
    g = _graph(triples, relations=1)
    walker = ChainWalker(g)
    kept = walker.triples([0], [0, 0], budget=5)
    assert kept.size <= 5
    heads, tails = g.head[kept], g.tail[kept]
    ends = set(tails[heads != 0].tolist())
    assert len(ends) >= 3  # shared hops are reused: 2 ends per hub for 3 triples
    for end in ends:  # each kept end has its hub's first hop kept too
        hub = int(heads[tails == end][0])
        assert hub in set(tails[heads == 0].tolist())


def _prior_data() -> tuple[list[str], np.ndarray, QuestionChains]:
    texts = ["who acted in the films directed by the director of [A]", "who acted in the films directed by the "
             "director of [B]", "which films did [C] direct", "which films did [D] direct",
             "the films written by the director of [E] starred who", "the films directed by the writer of [F] "
             "starred who"]
    chains = [[0, 1, 2], [0, 1, 2], [1, -1, -1], [1, -1, -1], [0, 5, 2], [4, 1, 2]]
    labels = QuestionChains(np.arange(7, dtype=np.int64), np.array(chains, dtype=np.int64), np.ones(6, np.float32))
    return texts, np.zeros((6, 4), np.float32), labels


def test_prior_learns_the_chain_from_the_wording_word_order_included() -> None:
    texts, vectors, labels = _prior_data()
    prior = train_chain_prior(texts, vectors, labels, steps=200)
    probe = ["who acted in the films directed by the director of [Z]", "which films did [Y] direct",
             "the films directed by the writer of [W] starred who", "the films written by the director of [V] "
                                                                   "starred who"]
    top = [prior.chains[chosen[0][0]] for chosen in prior.top(probe, np.zeros((4, 4), np.float32))]
    assert [c[c >= 0].tolist() for c in top] == [[0, 1, 2], [1], [4, 1, 2], [0, 5, 2]]


def test_prior_round_trips(tmp_path) -> None:
    texts, vectors, labels = _prior_data()
    prior = train_chain_prior(texts, vectors, labels, steps=20)
    prior.save(tmp_path / "p.npz")
    again = ChainPrior.load(tmp_path / "p.npz")
    assert np.array_equal(again.chains, prior.chains) and again.vocabulary == prior.vocabulary
    assert np.allclose(again.probabilities(texts, vectors), prior.probabilities(texts, vectors))


def test_g_agent_holds_the_third_hop_over_a_closer_distractor() -> None:
    g = _graph()
    question = HragQuestion("q", "who acted in the films directed by the director of [e0]", [0], [5, 6], 3)
    samples = build_samples(g, [question], top_n=50, max_triples=100, ppr=PersonalizedPageRank(g))
    triples = samples.question(0).triples
    # a scorer that prefers triples near the topic: film 0's own actor (1 hop) over the chain's third hop
    near = {int(t): 5.0 - 2.0 * i for i, t in enumerate(sorted(triples.tolist(),
                                                                key=lambda t: (g.head[t] != 0, t)))}
    scores = np.array([near[int(t)] for t in triples], dtype=np.float32)
    ptr = np.array([0, triples.size])
    meta = {"split": "test"}
    plain = build_g_agent(g, samples, ptr, scores, top_k=3, oracle=False, meta=meta)
    labels = best_chains(g, [[0]], [[5, 6]], [3], max_steps=3)
    prior = train_chain_prior([question.text], np.zeros((1, 4), np.float32), labels, steps=50)
    candidates = chain_candidates(ChainWalker(g), prior, [question.text], np.zeros((1, 4), np.float32), [[0]],
                                  budget=4)
    guided = build_g_agent(g, samples, ptr, scores, top_k=4, oracle=False, meta=meta, candidates=candidates,
                           chain_weight=100.0)

    def kept(split) -> set[tuple[int, int, int]]:
        s = split.sample(0)
        return set(zip(s["edge_head"].tolist(), s["edge_relation"].tolist(), s["edge_tail"].tolist(), strict=True))

    assert (0, STARRED, 4) in kept(plain) and (1, STARRED, 5) not in kept(plain)
    assert kept(guided) == {(0, 0, 3), (1, 0, 3), (1, 1, 5), (1, 1, 6)}
