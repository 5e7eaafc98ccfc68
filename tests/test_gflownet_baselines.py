"""kgrag.hrag.gflownet.baselines on hand-built G_agent splits (scores are exact in float32)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgrag.hrag.gflownet.answers import answer_metrics
from kgrag.hrag.gflownet.baselines import choose_stop_score, greedy_walk_answers, top_triple_answers
from kgrag.hrag.retrieval.g_agent import GAgentSplit, materialize

Question = tuple[list[tuple[int, int, int]], list[float], list[int]]  # triples, scores, topics


def split_of(*questions: Question) -> GAgentSplit:
    records = []
    for triples, scores, topics in questions:
        arr = np.array(triples, dtype=np.int64).reshape(-1, 3)
        records.append(materialize(arr[:, 0], arr[:, 1], arr[:, 2], np.array(scores, dtype=np.float32),
                                   np.zeros(len(triples), dtype=np.float32), topics, [], {}, top_k=100,
                                   oracle=False))
    n = len(questions)
    return GAgentSplit.build(records, list(range(n)), ["?"] * n, [1] * n, {"split": "test"})


NO_EDGE: Question = ([], [], [0])


def test_top_triple_tail_or_head_and_full_ranking() -> None:
    split = split_of(
        ([(1, 0, 5), (5, 1, 6), (1, 2, 7)], [0.75, 0.5, 0.25], [1]),  # top tail 5, then 6 (via 5 -> 6), then 7
        ([(8, 0, 1), (1, 1, 9)], [0.75, 0.5], [1]),  # top triple points at the topic: its head 8
        ([(1, 0, 2), (2, 1, 6)], [0.75, 0.5], [1, 2]),  # topic-topic triple gives no answer
        NO_EDGE,
    )
    assert top_triple_answers(split) == [[(5, 0.75), (6, 0.5), (7, 0.25)], [(8, 0.75), (9, 0.5)], [(6, 0.5)], []]


def test_top_triple_answer_end_first_then_score_then_smaller_id() -> None:
    # 3 ties with 4 on the top triple and has the smaller id, yet the top triple's answer end (tail 4) comes first
    split = split_of(([(3, 0, 4), (1, 0, 3), (1, 1, 9), (1, 2, 8)], [0.75, 0.5, 0.25, 0.25], [1]))
    assert top_triple_answers(split) == [[(4, 0.75), (3, 0.75), (8, 0.25), (9, 0.25)]]


#: topic 0: 0 -> 1 (0.75) ; 1 <- 2 (0.625, against its direction) ; 1 -> 3 (0.25) ; 2 -> 4 (0.125) ; 0 -> 5 (0.5)
WALK: Question = ([(0, 0, 1), (2, 1, 1), (1, 2, 3), (2, 3, 4), (0, 4, 5)], [0.75, 0.625, 0.25, 0.125, 0.5], [0])


def test_greedy_walk_follows_best_edges_then_stops_at_threshold() -> None:
    split = split_of(WALK, NO_EDGE)
    assert greedy_walk_answers(split, stop_score=0.3) == [[(2, 0.625)], []]  # 0 -> 1 -> 2, then 0.125 < 0.3
    assert greedy_walk_answers(split, stop_score=0.1) == [[(4, 0.125)], []]  # ... -> 4, then no edge left
    assert greedy_walk_answers(split, stop_score=0.9) == [[(1, 0.75)], []]  # the first step is always taken


def test_greedy_walk_max_steps() -> None:
    split = split_of(WALK)
    assert greedy_walk_answers(split, stop_score=0.0, max_steps=1) == [[(1, 0.75)]]
    assert greedy_walk_answers(split, stop_score=0.0, max_steps=2) == [[(2, 0.625)]]


def test_greedy_walk_leaves_a_topic_from_the_tail() -> None:
    split = split_of(([(7, 0, 0), (7, 1, 8)], [0.75, 0.5], [0]))
    assert greedy_walk_answers(split, stop_score=0.6) == [[(7, 0.75)]]
    assert greedy_walk_answers(split, stop_score=0.5) == [[(8, 0.5)]]


def hits1(split: GAgentSplit, gold: Sequence[set[int]], stop_score: float) -> float:
    return float(answer_metrics(greedy_walk_answers(split, stop_score), gold, 1.0)["hits@1"].mean())


def test_choose_stop_score_picks_the_only_working_threshold() -> None:
    split, gold = split_of(WALK, NO_EDGE), [{2}, {0}]
    # answer 2 needs 0.125 < stop <= 0.625: too low walks on to 4, too high stops at 1
    assert choose_stop_score(split, gold, grid=[0.05, 0.5, 0.7]) == 0.5
    chosen = choose_stop_score(split, gold)  # default grid: quantiles of the edge scores
    assert 0.125 < chosen <= 0.625 and hits1(split, gold, chosen) == 0.5
