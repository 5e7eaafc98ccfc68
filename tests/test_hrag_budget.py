"""What bounds H-RAG training at any graph size: the budget's question caps, the question-aware walk that keeps
far answers in G_retrieval among distractors, the chain labels a coincidence does not enlarge, and entity names
encoded by the ONNX export."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures.hrag import small_graph

from kgrag.hrag.retrieval.chain_labels import QuestionChains
from kgrag.hrag.retrieval.chains import shared_chains
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.local_ppr import LocalPPR
from kgrag.hrag.retrieval.pipeline import budget_cap, seeded_sample
from kgrag.hrag.retrieval.questions import HragQuestion
from kgrag.hrag.retrieval.samples import build_samples, focus_weights


def _questions(n: int) -> list[HragQuestion]:
    return [HragQuestion(f"q{i}", f"question {i}", [i], [i + 1], 1, "train") for i in range(n)]


def test_each_split_gets_the_seeded_sample_its_budget_names() -> None:
    cfg = RetrieverConfig(max_train_questions=30, max_validation_questions=10)
    assert [budget_cap(s, cfg) for s in ("train", "validation", "test")] == [30, 10, 0]
    questions = _questions(100)
    picked = seeded_sample(questions, 10, seed=0)
    assert len(picked) == 10 and picked == seeded_sample(questions, 10, seed=0)  # the same questions every run
    assert [q.qid for q in picked] == sorted((q.qid for q in picked), key=lambda qid: int(qid[1:]))  # file order
    assert seeded_sample(questions, 0, 0) == questions and seeded_sample(questions, 500, 0) == questions
    # a budget field at its default leaves a run's name (fingerprint) as it was before the field existed
    assert RetrieverConfig().fingerprint() == RetrieverConfig(max_chain_questions=0).fingerprint()
    assert RetrieverConfig().fingerprint() != RetrieverConfig(max_validation_questions=5).fingerprint()


def _comb(distractors: int) -> tuple:
    """A 3-hop chain 0 -a-> 1 -b-> 2 -c-> 3, every chain node also holding ``distractors`` edges of relation
    ``d`` to leaves of its own."""
    edges = [(0, "a", 1), (1, "b", 2), (2, "c", 3)]
    leaf = 4
    for node in (0, 1, 2):
        for _ in range(distractors):
            edges.append((node, "d", leaf))
            leaf += 1
    graph = small_graph(edges, leaf)
    return graph, [graph.relations.index(r) for r in ("a", "b", "c")]


def test_the_focused_walk_carries_its_mass_along_the_questions_relations() -> None:
    graph, chain = _comb(40)
    ppr = LocalPPR(graph, epsilon=1e-6)
    even = dict(zip(*ppr.push([0])[:2], strict=True))
    focused = dict(zip(*ppr.push([0], focus_weights(graph.num_relations, chain, 0.1))[:2], strict=True))
    assert focused[3] > 20 * even[3]  # the answer three hops out
    ones = dict(zip(*ppr.push([0], np.ones(graph.num_relations))[:2], strict=True))
    assert ones.keys() == even.keys() and all(abs(ones[k] - even[k]) < 1e-12 for k in even)  # all ones: the even walk
    with pytest.raises(ValueError, match="positive weight per relation"):
        ppr.push([0], np.zeros(graph.num_relations))
    assert focus_weights(graph.num_relations, chain, 1.0) is None and focus_weights(graph.num_relations, [], 0.1) is None
    # G_retrieval at a budget the distractors fill: the even walk loses the answer, the focused one keeps it
    even_sub = ppr.retrieval_subgraph([0], top_n=30, max_triples=60)
    focused_sub = ppr.retrieval_subgraph([0], 30, 60, focus_weights(graph.num_relations, chain, 0.1))
    assert 3 not in even_sub.nodes and 3 in focused_sub.nodes


def test_questions_on_one_topic_with_other_focus_get_a_walk_each() -> None:
    graph, chain = _comb(5)
    questions = [HragQuestion("x", "x", [0], [3], 3), HragQuestion("y", "y", [0], [3], 3),
                 HragQuestion("z", "z", [0], [1], 1)]
    samples = build_samples(graph, questions, top_n=50, max_triples=200,
                            focus=[np.array(chain), np.array(chain), np.array(chain[:1])], floor=0.1)
    assert samples.group_of.tolist() == [0, 0, 1] and samples.meta["focus_floor"] == 0.1
    plain = build_samples(graph, questions, top_n=50, max_triples=200)
    assert plain.group_of.tolist() == [0, 0, 0] and plain.meta["focus_floor"] == 1.0


def test_a_tied_chain_its_wording_does_not_share_is_dropped() -> None:
    """Three questions of one wording (chain A in all, B in one: dropped), one of another wording with two tied
    chains that stay (a wording of one question keeps its labels)."""
    a, b, c, d = [0, 2, -1], [4, 6, -1], [8, -1, -1], [10, -1, -1]
    chains = np.array([a, b, a, a, c, d])
    labels = QuestionChains(np.array([0, 2, 3, 4, 6]), chains, np.ones(4, np.float32))
    kept = shared_chains(labels, ["who wrote", "who wrote", "who wrote", "which year"])
    assert [kept.of(i).tolist() for i in range(4)] == [[a], [a], [a], [c, d]]
    with pytest.raises(ValueError, match="one wording per question"):
        shared_chains(labels, ["x"])


def test_entity_names_through_the_onnx_export_match_the_torch_model() -> None:
    from kgrag.hrag.retrieval.text import encode_names
    from kgrag.rank.sentence_embedder import Embedder

    names = ["Tom Hanks", "Drakrur Bevera 588912", "The Godfather Part II", "", "Léon: The Professional"]
    torch_vectors = encode_names(Embedder(query_encoder="torch"), names).astype(np.float32)
    onnx = Embedder(query_encoder="onnx")
    assert onnx.batch_encoder() is not None and onnx.batch_encoder().threads >= 1
    onnx_vectors = encode_names(onnx, names).astype(np.float32)
    assert (onnx_vectors * torch_vectors).sum(1).min() > 0.999
