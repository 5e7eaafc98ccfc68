"""kgrag.hrag.retrieval.g_agent: Top-K, triple dedup, oracle vs pruned, induced nodes, GT paths, the split file (hand-checked)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch

from kgrag.hrag.retrieval.g_agent import GAgentSplit, g_agent_path, materialize

Triple = tuple[int, int, int]


def run(triples: list[Triple], scores: list[float], labels: list[float] | None = None, *, topics: Sequence[int] = (),
        answers: Sequence[int] = (), answer_hops: dict[int, int] | None = None, top_k: int = 100,
        oracle: bool = False) -> dict[str, Any]:
    arr = np.array(triples, dtype=np.int64).reshape(-1, 3)
    labels = [0.0] * len(triples) if labels is None else labels
    return materialize(arr[:, 0], arr[:, 1], arr[:, 2], np.array(scores, dtype=np.float32),
                       np.array(labels, dtype=np.float32), list(topics), list(answers), answer_hops or {},
                       top_k=top_k, oracle=oracle)


def keys(out: dict[str, Any]) -> list[Triple]:
    return list(zip(out["edge_head"].tolist(), out["edge_relation"].tolist(), out["edge_tail"].tolist(), strict=True))


def gt_keys(out: dict[str, Any]) -> set[Triple]:
    return {keys(out)[i] for i in out["gt_path_edge_indices"].tolist()}


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key, value in a.items():
        if isinstance(value, torch.Tensor):
            assert value.dtype == b[key].dtype, key
            assert torch.equal(value, b[key]), key
        else:
            assert value == b[key], key


def test_top_k_order_and_tie_break() -> None:
    triples = [(10, 0, 11), (12, 0, 13), (14, 0, 15), (16, 0, 17), (10, 1, 12)]
    out = run(triples, [0.5, 0.9, 0.5, 0.1, 0.9], top_k=3)
    # 0.9 (pos 1), 0.9 (pos 4), 0.5 (pos 0) — pos 2 ties with pos 0 at 0.5 and loses on position
    assert keys(out) == [(10, 1, 12), (12, 0, 13), (10, 0, 11)]  # score desc, then key
    assert out["edge_scores"].tolist() == pytest.approx([0.9, 0.9, 0.5])
    assert out["top_edge_mask"].all()
    assert out["edge_scores"].dtype == torch.float32 and out["edge_labels"].dtype == torch.float32
    assert out["top_edge_mask"].dtype == torch.bool and out["edge_head"].dtype == torch.int64


def test_dedup_max_score_max_label_or_mask() -> None:
    triples = [(1, 0, 2), (2, 0, 3), (1, 0, 2), (3, 0, 4), (2, 0, 3)]
    out = run(triples, [0.9, 0.8, 0.1, 0.05, 0.7], [0.0, 0.0, 1.0, 0.0, 0.0], top_k=3, oracle=True)
    # (1,0,2): once in Top-K with label 0, once outside with label 1 -> one edge, score 0.9, label 1, in Top-K
    # (2,0,3): twice in Top-K -> score 0.8 ; (3,0,4): outside Top-K, label 0 -> dropped
    assert keys(out) == [(1, 0, 2), (2, 0, 3)]
    assert out["edge_scores"].tolist() == pytest.approx([0.9, 0.8])
    assert out["edge_labels"].tolist() == [1.0, 0.0]
    assert out["top_edge_mask"].tolist() == [True, True]


def test_dedup_keeps_outside_mask_false() -> None:
    out = run([(1, 0, 2), (5, 0, 6), (5, 0, 6)], [0.9, 0.2, 0.1], [0.0, 1.0, 1.0], top_k=1, oracle=True)
    assert keys(out) == [(1, 0, 2), (5, 0, 6)]
    assert out["edge_scores"].tolist() == pytest.approx([0.9, 0.2])
    assert out["top_edge_mask"].tolist() == [True, False]


#: 0 -r0-> 1 -r1-> 2 is the GT path (labels 1), (1, r1, 2) scores low; 0 -r2-> 5 -r3-> 6 distractors
OP_TRIPLES = [(0, 0, 1), (1, 1, 2), (0, 2, 5), (5, 3, 6)]
OP_SCORES = [0.9, 0.1, 0.5, 0.4]
OP_LABELS = [1.0, 1.0, 0.0, 0.0]


def test_oracle_vs_pruned_and_gt_broken_by_pruning() -> None:
    common = dict(topics=[0], answers=[2], answer_hops={2: 2}, top_k=2)
    oracle = run(OP_TRIPLES, OP_SCORES, OP_LABELS, oracle=True, **common)
    pruned = run(OP_TRIPLES, OP_SCORES, OP_LABELS, oracle=False, **common)

    assert keys(oracle) == [(0, 0, 1), (0, 2, 5), (1, 1, 2)]
    assert oracle["top_edge_mask"].tolist() == [True, True, False]
    assert oracle["node_ids"].tolist() == [0, 1, 2, 5]
    assert oracle["answer_local"].tolist() == [2]
    assert oracle["gt_path_exists"] is True
    assert oracle["gt_path_edge_indices"].tolist() == [0, 2]

    assert keys(pruned) == [(0, 0, 1), (0, 2, 5)]
    assert pruned["node_ids"].tolist() == [0, 1, 5]
    assert pruned["answer_local"].numel() == 0
    assert pruned["gt_path_exists"] is False
    assert pruned["gt_path_edge_indices"].dtype == torch.int64 and pruned["gt_path_edge_indices"].numel() == 0


def test_nodes_induced_and_local_indices() -> None:
    out = run([(7, 0, 3), (3, 1, 9), (20, 0, 21), (9, 2, 7)], [0.3, 0.8, 0.05, 0.6], topics=[7, 42],
              answers=[9, 21], top_k=3)
    assert out["node_ids"].tolist() == [3, 7, 9]  # 20 and 21 only on the dropped edge
    nodes = out["node_ids"]
    assert torch.equal(nodes[out["edge_head_local"]], out["edge_head"])
    assert torch.equal(nodes[out["edge_tail_local"]], out["edge_tail"])
    assert nodes[out["topic_local"]].tolist() == [7]  # 42 not among the nodes
    assert nodes[out["answer_local"]].tolist() == [9]


#: 0 -a-> 1 <-b- 3 (b walked against its direction) ; 0 -c-> 2 -d-> 3 ; 1 -g-> 2 side edge ; 3 -f-> 5
GT_TRIPLES = [(0, 0, 1), (3, 1, 1), (0, 2, 2), (2, 3, 3), (1, 6, 2), (3, 5, 5)]
GT_SCORES = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]


def test_gt_two_hop_paths_either_direction() -> None:
    out = run(GT_TRIPLES, GT_SCORES, topics=[0], answers=[3], answer_hops={3: 2}, top_k=10)
    assert keys(out) == GT_TRIPLES  # already by score desc
    assert out["gt_path_exists"] is True
    assert out["gt_path_edge_indices"].tolist() == [0, 1, 2, 3]
    three = run(GT_TRIPLES, GT_SCORES, topics=[0], answers=[3, 5], answer_hops={3: 2, 5: 3}, top_k=10)
    assert gt_keys(three) == set(GT_TRIPLES) - {(1, 6, 2)}


def test_gt_only_answers_with_full_length_paths() -> None:
    # answer 5 (3 hops) lost its last edge, answer 3 (2 hops) kept both paths: only 3's paths are GT
    out = run(GT_TRIPLES, GT_SCORES, topics=[0], answers=[3, 5], answer_hops={3: 2, 5: 3}, top_k=5)
    assert out["gt_path_exists"] is True
    assert gt_keys(out) == {(0, 0, 1), (3, 1, 1), (0, 2, 2), (2, 3, 3)}


def test_gt_longer_path_than_answer_hops_is_not_gt() -> None:
    # full graph: 0 -> 3 directly (1 hop); that edge is pruned, 0 -> 1 -> 3 remains (2 hops)
    out = run([(0, 9, 3), (0, 0, 1), (1, 1, 3)], [0.1, 0.9, 0.8], [1.0, 0.0, 0.0], topics=[0], answers=[3],
              answer_hops={3: 1}, top_k=2)
    assert out["answer_local"].numel() == 1
    assert out["gt_path_exists"] is False
    assert out["gt_path_edge_indices"].numel() == 0


@pytest.mark.parametrize("kwargs", [
    dict(topics=[0], answers=[], answer_hops={}),  # no answers
    dict(topics=[0], answers=[3], answer_hops={}),  # answer not reachable in the full graph
    dict(topics=[99], answers=[3], answer_hops={3: 2}),  # no topic among the kept nodes
    dict(topics=[0], answers=[77], answer_hops={77: 2}),  # answer not among the kept nodes
    dict(topics=[0], answers=[3], answer_hops={3: 2}, top_k=0),  # nothing kept
])
def test_gt_absent_is_silent(kwargs: dict[str, Any]) -> None:
    out = run(GT_TRIPLES, GT_SCORES, **kwargs)
    assert out["gt_path_exists"] is False
    assert out["gt_path_edge_indices"].dtype == torch.int64 and out["gt_path_edge_indices"].numel() == 0


def test_nothing_kept_gives_empty_graph() -> None:
    out = run(GT_TRIPLES, GT_SCORES, topics=[0], answers=[3], answer_hops={3: 2}, top_k=0)
    assert out["node_ids"].numel() == 0 and out["edge_head"].numel() == 0
    assert out["node_ids"].dtype == torch.int64 and out["top_edge_mask"].dtype == torch.bool


def records() -> list[dict[str, Any]]:
    return [
        run(OP_TRIPLES, OP_SCORES, OP_LABELS, topics=[0], answers=[2], answer_hops={2: 2}, top_k=2, oracle=True),
        run(GT_TRIPLES, GT_SCORES, topics=[0], answers=[3, 5], answer_hops={3: 2, 5: 3}, top_k=5),
        run(GT_TRIPLES, GT_SCORES, topics=[0], answers=[3], answer_hops={3: 2}, top_k=0),
        run(OP_TRIPLES, OP_SCORES, OP_LABELS, topics=[0], answers=[2], answer_hops={2: 2}, top_k=2),
    ]


def build() -> GAgentSplit:
    meta = {"split": "train", "mode": "oracle", "top_k": 2, "retriever": "ckpt-1", "alpha": 0.5, "flag": True}
    return GAgentSplit.build(records(), ["q0", "q1", "q2", "q3"], ["a?", "b?", "c?", "d?"], [2, 2, 3, 2], meta)


def test_split_sample_equals_record() -> None:
    split = build()
    assert len(split) == 4
    assert split.tensors["edge_ptr"].tolist() == [0, 3, 8, 8, 10]
    assert split.gt_path_exists.tolist() == [True, True, False, False]
    for i, record in enumerate(records()):
        sample = split.sample(i)
        assert_same(record, sample)
        assert (sample["qid"], sample["question"]) == (f"q{i}", "abcd"[i] + "?")
    assert split.sample(2)["hop"] == 3


def test_split_save_load_round_trip(tmp_path) -> None:
    split = build()
    path = split.save(g_agent_path(tmp_path / "g_agent", "train"))
    assert path == tmp_path / "g_agent" / "train_g_agent.pt"
    assert [p.name for p in path.parent.iterdir()] == ["train_g_agent.pt"]  # no temp file left behind
    raw = torch.load(path, weights_only=True)
    assert set(raw) >= {"edge_ptr", "node_ptr", "topic_ptr", "answer_ptr", "gt_ptr", "gt_path_exists", "qids",
                        "questions", "hops", "meta", "gt_path_edge_indices", "top_edge_mask"}
    loaded = GAgentSplit.load(path)
    assert set(loaded.tensors) == set(split.tensors)
    for key, value in split.tensors.items():
        assert value.dtype == loaded.tensors[key].dtype and torch.equal(value, loaded.tensors[key]), key
    assert torch.equal(loaded.gt_path_exists, split.gt_path_exists) and torch.equal(loaded.hops, split.hops)
    assert (loaded.qids, loaded.questions, loaded.meta) == (split.qids, split.questions, split.meta)
    for i in range(len(split)):
        assert_same(split.sample(i), loaded.sample(i))


def test_split_summary_and_empty() -> None:
    summary = build().summary()
    assert summary == {"questions": 4, "mean_edges": pytest.approx(10 / 4), "mean_nodes": pytest.approx(11 / 4),
                       "gt_path_share": 0.5, "answer_in_nodes_share": 0.5}
    empty = GAgentSplit.build([], [], [], [], {"split": "test", "mode": "pruned", "top_k": 5})
    assert len(empty) == 0 and empty.summary()["questions"] == 0
    assert empty.tensors["edge_ptr"].tolist() == [0]
