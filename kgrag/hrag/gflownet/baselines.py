"""LLM-free answer baselines over G_agent, ranked like :func:`kgrag.hrag.gflownet.answers.rank_answers`.

    ranked = top_triple_answers(split)                          # the retriever alone: its best triple's answer end
    stop = choose_stop_score(val_split, val_gold)               # the walk's one knob, tuned for Hits@1
    ranked = greedy_walk_answers(split, stop, max_steps=4)      # a greedy walk from the topics along top edges

Both give, per question, ``[(global entity id, score), …]`` best first, for
:func:`~kgrag.hrag.gflownet.answers.answer_metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgrag.hrag.gflownet.answers import answer_metrics
from kgrag.hrag.retrieval.g_agent import GAgentSplit

__all__ = ["top_triple_answers", "greedy_walk_answers", "choose_stop_score"]

Ranked = list[tuple[int, float]]
STOP_QUANTILES = np.linspace(0.05, 0.95, 19)


def _arrays(sample: dict[str, Any]) -> tuple[np.ndarray, ...]:
    """Local heads, local tails, scores (edges by score desc), global node ids, topic mask over local nodes."""
    nodes = sample["node_ids"].numpy()
    is_topic = np.zeros(nodes.size, dtype=bool)
    is_topic[sample["topic_local"].numpy()] = True
    return (sample["edge_head_local"].numpy(), sample["edge_tail_local"].numpy(),
            sample["edge_scores"].numpy().astype(np.float64), nodes, is_topic)


def _top_triple(sample: dict[str, Any]) -> Ranked:
    head, tail, scores, nodes, is_topic = _arrays(sample)
    # an edge's answer end: its tail, or its head when only the tail is a topic; topic-topic edges have none
    answer_end = np.where(is_topic[tail], head, tail)
    usable = ~is_topic[answer_end]
    if not usable.any():
        return []
    first = int(np.argmax(usable))  # edges come by score desc: the top triple with an answer end
    top_entity, top_score = int(nodes[answer_end[first]]), float(scores[first])
    # every non-topic end of every edge: the best score of an edge it ends
    ends, end_scores = np.concatenate([head, tail]), np.concatenate([scores, scores])
    best = np.full(nodes.size, -np.inf)
    np.maximum.at(best, ends, end_scores)
    rest = np.flatnonzero(~is_topic & np.isfinite(best))
    rest = rest[nodes[rest] != top_entity]
    order = rest[np.lexsort((nodes[rest], -best[rest]))]  # score desc, then smaller id
    return [(top_entity, top_score)] + [(int(nodes[j]), float(best[j])) for j in order]


def top_triple_answers(split: GAgentSplit) -> list[Ranked]:
    """Per question: the retriever's top triple's answer end first (its tail, or its head when the tail is a topic
    and the head is not), then every other non-topic entity by the best score of a triple it ends (ties: smaller id).
    Triples joining two topics give no answer; a question without any other triple gets ``[]``."""
    return [_top_triple(split.sample(i)) for i in range(len(split))]


def _greedy_walk(sample: dict[str, Any], max_steps: int) -> Ranked:
    """The greedy walk run to ``max_steps`` (or until no edge is left): ``(global node reached, edge score)`` per step.

    Step 0 takes the best edge touching a topic (going to its non-topic end when it has one), each later step the
    best unused edge touching the current node, in either direction. Ties follow the stored edge order."""
    head, tail, scores, nodes, is_topic = _arrays(sample)
    used = np.zeros(head.size, dtype=bool)
    walk: Ranked = []
    current = -1
    for _ in range(max_steps):
        touching = is_topic[head] | is_topic[tail] if current < 0 else (head == current) | (tail == current)
        free = touching & ~used
        if not free.any():
            break
        e = int(np.argmax(free))  # edges come by score desc
        used[e] = True
        from_head = is_topic[head[e]] if current < 0 else head[e] == current
        current = int(tail[e] if from_head else head[e])
        walk.append((int(nodes[current]), float(scores[e])))
    return walk


def _stop(walk: Ranked, stop_score: float) -> Ranked:
    """The walk cut before its first edge (after the first) scoring below ``stop_score``: its end, one item."""
    if not walk:
        return []
    end = walk[0]
    for step in walk[1:]:
        if step[1] < stop_score:
            break
        end = step
    return [end]


def greedy_walk_answers(split: GAgentSplit, stop_score: float, max_steps: int = 4) -> list[Ranked]:
    """Per question: ``[(end node, last edge score)]`` of a greedy walk from the topics that always takes the
    best-scored unused edge at its current node, stopping when that edge scores below ``stop_score`` (never before
    the first step), after ``max_steps`` edges or when no edge is left; ``[]`` when no edge touches a topic."""
    return [_stop(_greedy_walk(split.sample(i), max_steps), stop_score) for i in range(len(split))]


def choose_stop_score(split: GAgentSplit, gold: Sequence[set[int]], grid: Sequence[float] | None = None,
                      max_steps: int = 4) -> float:
    """The ``stop_score`` in ``grid`` with the best mean Hits@1 of :func:`greedy_walk_answers` (ties: the larger).

    Default grid: the 0.05, 0.10, …, 0.95 quantiles of all the split's edge scores. Each walk is run once; a stop
    score only decides where it is cut."""
    if grid is None:
        scores = split.tensors["edge_scores"].double().numpy()
        grid = np.quantile(scores, STOP_QUANTILES).tolist() if scores.size else [0.0]
    walks = [_greedy_walk(split.sample(i), max_steps) for i in range(len(split))]

    def hits1(stop_score: float) -> float:
        ranked = [_stop(w, stop_score) for w in walks]
        return float(answer_metrics(ranked, gold, threshold=1.0)["hits@1"].mean()) if walks else 0.0

    return float(max(grid, key=lambda s: (hits1(s), s)))
