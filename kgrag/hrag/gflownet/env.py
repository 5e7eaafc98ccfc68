"""The path-building environment (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet
path reasoner, §4.2.1, §4.3.1), batched over questions.

A question's candidate pool is its g_agent edges, each offered in both orientations (a KGQA path may walk an edge
against its direction: "what movies did [X] act in" reaches the movie through ``(movie, starred_actors, X)``):
candidate ``2e`` is edge ``e`` as stored, ``2e + 1`` reversed. The state is the path built so far,
``S_t = (c_1 … c_t)`` with ``c_{i+1}.head = c_i.tail``. Actions: select a candidate whose head is the current tail
(at ``t = 0``: whose head is a topic entity) and whose edge is not on the path yet (in either orientation), or Stop.
Stop is always legal, so when no select is legal the masked softmax puts probability 1 on Stop. The backward
policy is 1: the only parent of ``S_{t+1}`` is ``S_t`` (drop the last edge).

Everything is a padded ``(questions, candidates)`` tensor with masks; a step is a handful of tensor ops, no Python
loop over candidates or questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["CandidatePool", "PathState", "pool_from_edges", "initial_state", "legal_actions", "step",
           "masked_log_probs", "STOP"]

STOP = -1  # the action index meaning Stop (column ``candidates`` of the action mask)


@dataclass
class CandidatePool:
    head: torch.Tensor  # (B, C) local node of the oriented candidate's head; -1 on padding
    tail: torch.Tensor  # (B, C)
    edge: torch.Tensor  # (B, C) the underlying g_agent edge; -1 on padding
    valid: torch.Tensor  # (B, C) bool
    is_topic: torch.Tensor  # (B, N) bool, N = the largest node count

    @property
    def size(self) -> int:
        return int(self.head.shape[1])

    def index(self, rows: torch.Tensor) -> CandidatePool:
        """The pools of ``rows`` (rows of one question share its pool)."""
        return CandidatePool(self.head[rows], self.tail[rows], self.edge[rows], self.valid[rows], self.is_topic[rows])


@dataclass
class PathState:
    selected: torch.Tensor  # (B, C) bool, candidates on the path
    edge_step: torch.Tensor  # (B, E) long, the step that put the edge on the path (either orientation); -1 = not
    current: torch.Tensor  # (B,) tail node of the last selected candidate; -1 before the first step
    length: torch.Tensor  # (B,) edges on the path
    done: torch.Tensor  # (B,) bool, Stop taken

    @property
    def edge_used(self) -> torch.Tensor:
        return self.edge_step >= 0

    @property
    def edge_reversed(self) -> torch.Tensor:
        """(B, E) bool: the edge is on the path walked against its direction (its candidate ``2e + 1``)."""
        return self.selected[:, 1::2]

    def index(self, rows: torch.Tensor) -> PathState:
        """The states of ``rows`` (beam search: children inherit their parent's path)."""
        return PathState(self.selected[rows], self.edge_step[rows], self.current[rows], self.length[rows],
                         self.done[rows])


def pool_from_edges(heads: Sequence[torch.Tensor], tails: Sequence[torch.Tensor], topics: Sequence[torch.Tensor],
                    num_nodes: Sequence[int]) -> CandidatePool:
    """Padded pool of several questions from their local edge ends and topic nodes (each edge twice)."""
    b = len(heads)
    c = 2 * max((int(h.numel()) for h in heads), default=0)
    n = max(num_nodes, default=0)
    head = torch.full((b, c), -1, dtype=torch.long)
    tail = torch.full((b, c), -1, dtype=torch.long)
    edge = torch.full((b, c), -1, dtype=torch.long)
    is_topic = torch.zeros((b, max(n, 1)), dtype=torch.bool)
    for i, (h, t, top) in enumerate(zip(heads, tails, topics, strict=True)):
        e = h.numel()
        head[i, : 2 * e] = torch.stack([h, t], dim=1).reshape(-1)
        tail[i, : 2 * e] = torch.stack([t, h], dim=1).reshape(-1)
        edge[i, : 2 * e] = torch.arange(e).repeat_interleave(2)
        is_topic[i, top] = True
    return CandidatePool(head, tail, edge, edge >= 0, is_topic)


def initial_state(pool: CandidatePool) -> PathState:
    b, c = pool.head.shape
    edges = max(c // 2, 1)
    return PathState(torch.zeros((b, c), dtype=torch.bool), torch.full((b, edges), -1, dtype=torch.long),
                     torch.full((b,), -1, dtype=torch.long), torch.zeros(b, dtype=torch.long),
                     torch.zeros(b, dtype=torch.bool))


def legal_actions(pool: CandidatePool, state: PathState, max_steps: int | None = None) -> torch.Tensor:
    """``(B, C + 1)`` bool: the legal selects, then Stop (always legal; a finished question has Stop alone, and so
    has a path of ``max_steps`` edges)."""
    safe_head = pool.head.clamp(min=0)
    at_start = pool.is_topic.gather(1, safe_head)  # head is a topic entity
    adjacent = pool.head == state.current[:, None]
    anchored = torch.where(state.length[:, None] == 0, at_start, adjacent)
    fresh = ~state.edge_used.gather(1, pool.edge.clamp(min=0))
    open_ = ~state.done if max_steps is None else ~state.done & (state.length < max_steps)
    select = pool.valid & anchored & fresh & open_[:, None]
    stop = torch.ones_like(state.done)[:, None]
    return torch.cat([select, stop], dim=1)


def step(pool: CandidatePool, state: PathState, actions: torch.Tensor) -> PathState:
    """Apply one action per question (candidate index, or :data:`STOP` / ``C``); finished questions stay put."""
    c = pool.size
    stop = (actions == STOP) | (actions == c) | state.done
    pick = torch.where(stop, torch.zeros_like(actions), actions)
    rows = torch.arange(actions.numel())
    selected = state.selected.clone()
    selected[rows[~stop], pick[~stop]] = True
    edge_step = state.edge_step.clone()
    edge_step[rows[~stop], pool.edge[rows[~stop], pick[~stop]]] = state.length[~stop]
    current = torch.where(stop, state.current, pool.tail[rows, pick])
    return PathState(selected, edge_step, current, state.length + (~stop).long(), stop)


def masked_log_probs(select_logits: torch.Tensor, stop_logit: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """log P_F over ``[selects…, Stop]`` with illegal actions at -inf; Stop alone legal ⇒ its log-prob is 0."""
    logits = torch.cat([select_logits, stop_logit[:, None]], dim=1)
    logits = logits.masked_fill(~legal, float("-inf"))
    return torch.log_softmax(logits, dim=1)
