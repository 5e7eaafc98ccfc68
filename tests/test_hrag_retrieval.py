"""kgrag.hrag retrieval stage: samples (G_retrieval + features + labels), metrics on hand-checked rankings,
question files, and the retriever learning a small synthetic task better than a random scorer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fixtures.hrag import small_graph

from kgrag.errors import KgragError
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.metrics import _BIG, question_ranks, recall_report
from kgrag.hrag.retrieval.questions import HragQuestion, masked_text, read_question_file
from kgrag.hrag.retrieval.retriever import TripleBatch, TripleScorer, score_samples
from kgrag.hrag.retrieval.samples import MAX_DIST, RetrievalSamples, build_samples
from kgrag.hrag.retrieval.signatures import BITS
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.hrag.retrieval.train import load_scorer, train_retriever
from kgrag.rank.sentence_embedder import Embedder

#: 0 -a-> 1 -b-> 2 ; 0 -c-> 3 ; 4 -a-> 1 ; 5 isolated
SMALL = [(0, "a", 1), (1, "b", 2), (0, "c", 3), (4, "a", 1)]


def test_samples_group_shared_topics_and_label_paths(tmp_path) -> None:
    g = small_graph(SMALL, 6)
    qs = [HragQuestion("q1", "what b of [e0]", [0], [2], 2), HragQuestion("q2", "what c of [e0]", [0], [3], 1),
          HragQuestion("q3", "what of [e4]", [4], [5], 1)]
    s = build_samples(g, qs, top_n=5, max_triples=10)
    assert s.group_of.tolist() == [0, 0, 1]  # one G_retrieval per topic set
    q1 = s.question(0)
    triples = {(int(g.head[t]), g.relations[g.rel[t]], int(g.tail[t])): lab for t, lab in zip(q1.triples, q1.labels, strict=True)}
    assert triples[(0, "a", 1)] and triples[(1, "b", 2)] and not triples[(0, "c", 3)] and not triples[(4, "a", 1)]
    dist = {int(g.head[t]): int(d) for t, d in zip(q1.triples, q1.head_dist, strict=True)}
    assert dist[0] == 0 and dist[1] == 1 and dist[4] == 2
    assert q1.answer_hops == {2: 2} and q1.has_path
    q3 = s.question(2)  # the answer is isolated: no path, still a sample
    assert not q3.has_path and q3.answer_hops == {} and set(q3.head_dist.tolist()) <= set(range(MAX_DIST + 1))
    path = s.save(tmp_path / "s.npz")
    back = RetrievalSamples.load(path)
    assert back.qids == s.qids and np.array_equal(back.triples, s.triples) and back.meta == s.meta
    sub = s.subset([1])
    assert sub.qids == ["q2"] and np.array_equal(sub.question(0).triples, s.question(1).triples)


def test_question_ranks_and_report_hand_checked() -> None:
    g = small_graph(SMALL, 6)
    triples = np.arange(g.num_triples)  # sorted keys: (0,a,1)=0, (0,c,3)=1, (1,b,2)=2, (4,a,1)=3
    scores = np.array([0.9, 0.1, 0.5, 0.5], dtype=np.float32)  # tie 2/3 broken by the lower triple id
    answer_rank, pos_rank = question_ranks(g, triples, scores, np.array([2, 3, 5]), np.array([0, 2]))
    assert answer_rank.tolist() == [1, 3, _BIG]  # e2 via triple 2 (rank 1), e3 via triple 1 (rank 3), e5 absent
    assert pos_rank.tolist() == [0, 1]
    qs = [HragQuestion("q1", "x [e0]", [0], [2], 2)]
    s = build_samples(g, qs, top_n=6, max_triples=10)
    n = s.question_triple_counts()[0]
    q = s.question(0)
    # score exactly the positives first
    sc = np.where(q.labels, 1.0, 0.0).astype(np.float32)
    rep = recall_report(g, s, np.array([0, n]), sc, ks=(1, 2))
    assert rep["all"]["n"] == 1 and rep["2-hop"]["path_triple_recall@1"] == 0.5
    assert rep["2-hop"]["path_triple_recall@2"] == 1.0 and rep["2-hop"]["path_ceiling@1"] == 0.5
    assert rep["2-hop"]["answer_recall@2"] == 1.0


def test_question_file_reading(tmp_path) -> None:
    g = small_graph(SMALL, 6)
    f = tmp_path / "2-hop" / "qa_test.txt"
    f.parent.mkdir()
    f.write_text("what b of [e0]\te2|nobody\nno tab here\nwhat of [unknown]\te1\n\nwhat [e4]\te2\n")
    read = read_question_file(f, g)
    assert [q.text for q in read.questions] == ["what b of [e0]", "what [e4]"]
    assert read.questions[0].hop == 2 and read.questions[0].answers == [2] and read.unresolved_answers == 1
    assert read.malformed_lines == [2] and len(read.unresolved_topic) == 1
    assert read_question_file(f, g, hop=3).questions[0].hop == 3
    bad = tmp_path / "bad.txt"
    bad.write_text("nothing usable\n")
    with pytest.raises(KgragError, match="no usable question"):
        read_question_file(bad, g)
    assert masked_text("what movies did [Tom Hanks] act in") == "what movies did X act in"


def synthetic_task(seed: int = 0, n_entities: int = 240, n_questions: int = 120):
    """Each question asks for the topic's neighbours through one relation; the template names the relation."""
    rng = np.random.default_rng(seed)
    relations = ["directed_by", "written_by", "starred_actors", "release_year"]
    edges = {(int(rng.integers(n_entities)), relations[int(rng.integers(4))], int(rng.integers(n_entities)))
             for _ in range(900)}
    g = small_graph(sorted(e for e in edges if e[0] != e[2]), n_entities)
    templates = {"directed_by": "who directed [{}]", "written_by": "who wrote [{}]",
                 "starred_actors": "who acted in [{}]", "release_year": "when was [{}] released"}
    qs = []
    while len(qs) < n_questions:
        r = relations[int(rng.integers(4))]
        ri = g.relations.index(r)
        heads = g.head[g.rel == ri]
        topic = int(heads[rng.integers(heads.size)])
        answers = sorted(set(g.tail[(g.head == topic) & (g.rel == ri)].tolist()))
        qs.append(HragQuestion(f"q{len(qs)}", templates[r].format(f"entity {topic}"), [topic], answers, 1))
    return g, qs


def test_retriever_learns_synthetic_task_better_than_random(tmp_path) -> None:
    g, qs = synthetic_task()
    cfg = RetrieverConfig(top_n=80, max_triples=400, epochs=12, batch_questions=8, negatives=64, patience=4,
                          early_stop_questions=40, early_stop_k=5, lr=5e-3, hidden=64, proj=32, entity_proj=8)
    train = build_samples(g, qs[:80], cfg.top_n, cfg.max_triples)
    validation = build_samples(g, qs[80:], cfg.top_n, cfg.max_triples)
    text = TextEmbeddings.for_graph(g, tmp_path / "text", Embedder(cache_dir=tmp_path / "cache"))
    result = train_retriever(g, text, train, validation, cfg, tmp_path / "ckpt", log=lambda _: None)
    model, state = load_scorer(result.checkpoint)
    ptr, scores = score_samples(model, g, text, validation)
    learned = recall_report(g, validation, ptr, scores, ks=(5,))["all"]["path_triple_recall@5"]
    random_scores = np.random.default_rng(1).random(scores.size).astype(np.float32)
    baseline = recall_report(g, validation, ptr, random_scores, ks=(5,))["all"]["path_triple_recall@5"]
    assert learned > baseline + 0.3, (learned, baseline)
    assert learned > 0.8
    # finished run: a second call resumes from last.pt and returns at once with the same best checkpoint
    again = train_retriever(g, text, train, validation, cfg, tmp_path / "ckpt", log=lambda _: None)
    assert again.checkpoint == result.checkpoint and again.history == result.history
    assert again.resumed_from == len(result.history)


def test_path_signatures_hand_checked() -> None:
    from kgrag.hrag.retrieval.signatures import path_signatures

    # topic 0; 0 -a-> 1 -b-> 2 ; 3 -c-> 0 and 3 -d-> 2 (2 reached two ways) ; 2 -e-> 5 ; 6 -a-> 7 far away
    g = small_graph([(0, "a", 1), (1, "b", 2), (3, "c", 0), (3, "d", 2), (2, "e", 5), (6, "a", 7)], 8)
    s = build_samples(g, [HragQuestion("q", "x [e0]", [0], [5], 3)], top_n=8, max_triples=20)
    q = s.question(0)
    first, last = path_signatures(g, q.triples, q.head_dist, q.tail_dist)
    rel = {r: i for i, r in enumerate(g.relations)}

    def fwd(r: str) -> int:
        return 1 << (2 * rel[r])

    def bwd(r: str) -> int:
        return 1 << (2 * rel[r] + 1)

    by_key = {(int(g.head[t]), g.relations[g.rel[t]], int(g.tail[t])): (int(f), int(la))
              for t, f, la in zip(q.triples, first, last, strict=True)}
    assert by_key[(0, "a", 1)] == (0, 0)  # near end is the topic: no path yet
    assert by_key[(1, "b", 2)] == (fwd("a"), fwd("a"))  # near end 1, reached by a walked forward
    assert by_key[(3, "d", 2)] == (bwd("c"), bwd("c"))  # near end 3, reached by c walked backwards
    assert by_key[(2, "e", 5)] == (fwd("a") | bwd("c"), fwd("b") | fwd("d"))  # both routes into 2
    assert (6, "a", 7) not in by_key  # disconnected from the topic: the local PPR never touches it


def test_scorer_by_parts_equals_the_concatenated_layer() -> None:
    """The first layer computed by parts (per pair, per distance code, per entity, per triple) is the written-out
    concatenation: same logits, same gradients, with several questions sharing relations and distance codes."""
    torch.manual_seed(0)
    model = TripleScorer(text_dim=16, num_relations=9, hidden=24, proj=8, entity_proj=4)
    n, b, u = 200, 5, 30
    g = torch.Generator().manual_seed(1)
    batch = TripleBatch(
        question_vec=torch.randn(b, 16, generator=g), question_of=torch.randint(0, b, (n,), generator=g),
        relation=torch.randint(0, 9, (n,), generator=g), entity_vec=torch.randn(u, 16, generator=g),
        head=torch.randint(0, u, (n,), generator=g), tail=torch.randint(0, u, (n,), generator=g),
        dist_code=torch.randint(0, (MAX_DIST + 1) ** 2, (n,), generator=g),
        path_bits=(torch.rand(n, 2 * BITS, generator=g) < 0.2).float())
    relation_vec = torch.randn(9, 16, generator=g)
    by_parts = model(batch, relation_vec)
    written_out = model.mlp(model.concat_features(batch, relation_vec)).squeeze(-1)
    assert by_parts.shape == (n,)
    assert torch.allclose(by_parts, written_out, atol=1e-5)
    grads = []
    for logits in (by_parts, written_out):
        model.zero_grad()
        (logits ** 2).sum().backward(retain_graph=True)
        grads.append({k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) == len(list(model.parameters()))
    for k in grads[0]:
        assert torch.allclose(grads[0][k], grads[1][k], atol=1e-4), k
