"""g_agent questions as padded policy batches (spec h-rag.md, the H-RAG specification of a triple retriever
and a GFlowNet path reasoner, §5: "自动 padding 出批次级别的实体/关系 ID …").

    questions = agent_questions(GAgentSplit.load(path), max_edges=None)   # one QuestionGraph per question
    batch = collate([questions[i] for i in rows], question_vectors[rows], entity_vectors)

A :class:`QuestionGraph` is one question's G_agent with local node indices; ``max_edges`` caps a training pool
(oracle g_agent can hold thousands of GT edges on 3-hop questions): the Top-K edges stay, then GT edges in score
order. :class:`PoolBatch` pads several of them into ``(B, E)`` / ``(B, N)`` tensors plus the environment's
:class:`~kgrag.hrag.gflownet.env.CandidatePool` (every edge in both orientations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kgrag.hrag.gflownet.env import CandidatePool, pool_from_edges
from kgrag.hrag.retrieval.g_agent import GAgentSplit, hop_distances
from kgrag.hrag.retrieval.text import QuestionTokens

__all__ = ["QuestionGraph", "PoolBatch", "agent_questions", "collate", "gt_walks"]


@dataclass
class QuestionGraph:
    head: torch.Tensor  # (E,) local node of each edge's head
    tail: torch.Tensor  # (E,)
    relation: torch.Tensor  # (E,) global relation id
    node_ids: torch.Tensor  # (N,) global entity ids
    topics: torch.Tensor  # (T,) local
    answers: torch.Tensor  # (A,) local: the gold answers present in G_agent
    gt_edges: torch.Tensor  # (G,) local edge indices on a shortest topic → answer path
    answer_distance: int  # hops from the topics to the nearest answer inside G_agent; 0 = none reachable
    text: str
    hop: int
    gt_walks: torch.Tensor  # (P, W) oriented candidates of sampled GT paths topic → answer, -1 padded; P may be 0
    scores: torch.Tensor  # (E,) retriever scores


def _answer_distance(head: np.ndarray, tail: np.ndarray, num_nodes: int, topics: np.ndarray, answers: np.ndarray,
                     max_hops: int = 8) -> int:
    if topics.size == 0 or answers.size == 0:
        return 0
    dist = hop_distances(head, tail, num_nodes, topics, max_hops)[answers]
    reached = dist[dist > 0]
    return int(reached.min()) if reached.size else 0


def gt_walks(head: np.ndarray, tail: np.ndarray, gt: np.ndarray, num_nodes: int, topics: np.ndarray,
             answers: np.ndarray, count: int, rng: np.random.Generator, max_hops: int = 8) -> np.ndarray:
    """Up to ``count`` distinct random walks over GT edges from a topic, one hop farther each step, that end at an
    answer: ``(P, longest)`` oriented candidate indices (``2e`` along edge ``e``, ``2e + 1`` against), -1 padded."""
    if not gt.any() or topics.size == 0 or answers.size == 0:
        return np.zeros((0, 0), dtype=np.int64)
    dist = hop_distances(head[gt], tail[gt], num_nodes, topics, max_hops)
    is_answer = np.zeros(num_nodes, dtype=bool)
    is_answer[answers] = True
    edges = np.flatnonzero(gt)
    walks: set[tuple[int, ...]] = set()
    for _ in range(4 * count):
        node, walk = int(rng.choice(topics)), []
        while not (walk and is_answer[node]) and len(walk) < max_hops:
            forward = edges[(head[edges] == node) & (dist[tail[edges]] == dist[node] + 1)]
            backward = edges[(tail[edges] == node) & (dist[head[edges]] == dist[node] + 1)]
            options = np.concatenate([2 * forward, 2 * backward + 1])
            if options.size == 0:
                break
            pick = int(rng.choice(options))
            walk.append(pick)
            node = int(tail[pick // 2] if pick % 2 == 0 else head[pick // 2])
        if walk and is_answer[node]:
            walks.add(tuple(walk))
        if len(walks) >= count:
            break
    if not walks:
        return np.zeros((0, 0), dtype=np.int64)
    longest = max(len(w) for w in walks)
    return np.array([list(w) + [-1] * (longest - len(w)) for w in sorted(walks)], dtype=np.int64)


def agent_questions(split: GAgentSplit, max_edges: int | None = None, walks: int = 0,
                    seed: int = 0) -> list[QuestionGraph]:
    """Every question of ``split``; ``max_edges`` keeps the Top-K edges, then GT edges by score, up to the cap;
    ``walks`` GT paths sampled per question (training replay)."""
    out = []
    for i in range(len(split)):
        s = split.sample(i)
        e = s["edge_head_local"].numel()
        gt = torch.zeros(e, dtype=torch.bool)
        gt[s["gt_path_edge_indices"]] = True
        keep = torch.arange(e)
        if max_edges is not None and e > max_edges:
            top = s["top_edge_mask"]
            order = torch.cat([keep[top], keep[~top & gt], keep[~top & ~gt]])  # each part stays in score order
            keep = torch.sort(order[:max_edges]).values
        head, tail = s["edge_head_local"][keep], s["edge_tail_local"][keep]
        n = s["node_ids"].numel()
        topics, answers = s["topic_local"].numpy(), s["answer_local"].numpy()
        distance = _answer_distance(head.numpy(), tail.numpy(), n, topics, answers)
        sampled = gt_walks(head.numpy(), tail.numpy(), gt[keep].numpy(), n, topics, answers, walks,
                           np.random.default_rng([seed, i])) if walks else np.zeros((0, 0), dtype=np.int64)
        out.append(QuestionGraph(head, tail, s["edge_relation"][keep], s["node_ids"], s["topic_local"],
                                 s["answer_local"], torch.nonzero(gt[keep]).flatten(), distance, s["question"],
                                 s["hop"], torch.from_numpy(sampled), s["edge_scores"][keep]))
    return out


@dataclass
class PoolBatch:
    pool: CandidatePool  # the environment's view: oriented candidates 2e / 2e + 1
    relation: torch.Tensor  # (B, E) relation ids, 0 on padding
    edge_valid: torch.Tensor  # (B, E) bool
    node_vectors: torch.Tensor  # (B, N, D) entity name vectors
    is_answer: torch.Tensor  # (B, N) bool
    gt_edge: torch.Tensor  # (B, E) bool
    score: torch.Tensor  # (B, E) retriever score standardised within the question (z-score, clipped to ±5)
    gt_needed: torch.Tensor  # (B,) float: GT edges a single answer path has, min(|G*|, answer distance), ≥ 1
    question: torch.Tensor  # (B, L, D) token vectors of the masked questions
    question_mask: torch.Tensor  # (B, L) bool, real tokens
    node_ids: torch.Tensor  # (B, N) global entity ids, -1 on padding

    def __len__(self) -> int:
        return int(self.relation.shape[0])

    @property
    def head(self) -> torch.Tensor:
        """(B, E) local head node of each edge (0 on padding)."""
        return self.pool.head[:, 0::2].clamp(min=0)

    @property
    def tail(self) -> torch.Tensor:
        return self.pool.tail[:, 0::2].clamp(min=0)

    def to(self, device: torch.device | str) -> PoolBatch:
        p = self.pool
        pool = CandidatePool(*(x.to(device) for x in (p.head, p.tail, p.edge, p.valid, p.is_topic)))
        return PoolBatch(pool, *(x.to(device) for x in (self.relation, self.edge_valid, self.node_vectors,
                                                        self.is_answer, self.gt_edge, self.score, self.gt_needed,
                                                        self.question, self.question_mask, self.node_ids)))

    def repeat(self, times: int) -> PoolBatch:
        """Each question ``times`` times in a row (beam search: one row per beam)."""
        def rep(x: torch.Tensor) -> torch.Tensor:
            return x.repeat_interleave(times, dim=0)

        p = self.pool
        pool = CandidatePool(rep(p.head), rep(p.tail), rep(p.edge), rep(p.valid), rep(p.is_topic))
        return PoolBatch(pool, rep(self.relation), rep(self.edge_valid), rep(self.node_vectors), rep(self.is_answer),
                         rep(self.gt_edge), rep(self.score), rep(self.gt_needed), rep(self.question),
                         rep(self.question_mask), rep(self.node_ids))


def collate(questions: Sequence[QuestionGraph], question_tokens: QuestionTokens,
            entity_vectors: np.ndarray) -> PoolBatch:
    """Pad ``questions`` into one batch; ``question_tokens`` aligned with them, ``entity_vectors`` by global id."""
    pool = pool_from_edges([q.head for q in questions], [q.tail for q in questions], [q.topics for q in questions],
                           [q.node_ids.numel() for q in questions])
    b, c = pool.head.shape
    e, n = c // 2, pool.is_topic.shape[1]
    relation = torch.zeros((b, e), dtype=torch.long)
    gt_edge = torch.zeros((b, e), dtype=torch.bool)
    is_answer = torch.zeros((b, n), dtype=torch.bool)
    node_ids = torch.full((b, n), -1, dtype=torch.long)
    score = torch.zeros((b, e))
    for i, q in enumerate(questions):
        relation[i, : q.relation.numel()] = q.relation
        if q.scores.numel() > 1:
            score[i, : q.scores.numel()] = ((q.scores - q.scores.mean()) / (q.scores.std() + 1e-6)).clamp(-5, 5)
        gt_edge[i, q.gt_edges] = True
        is_answer[i, q.answers] = True
        node_ids[i, : q.node_ids.numel()] = q.node_ids
    node_vectors = torch.from_numpy(entity_vectors[node_ids.clamp(min=0).numpy()].astype(np.float32))
    node_vectors[node_ids < 0] = 0.0
    needed = torch.tensor([max(min(q.gt_edges.numel(), q.answer_distance), 1) for q in questions],
                          dtype=torch.float32)
    length = max(int(question_tokens.mask.sum(1).max()), 1) if len(question_tokens) else 1
    return PoolBatch(pool, relation, pool.valid[:, 0::2], node_vectors, is_answer, gt_edge, score, needed,
                     torch.from_numpy(question_tokens.vectors[:, :length].astype(np.float32)),
                     torch.from_numpy(question_tokens.mask[:, :length].copy()), node_ids)
