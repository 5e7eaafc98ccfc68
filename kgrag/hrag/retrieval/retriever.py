"""The dense triple retriever s(q, t) (spec h-rag.md, the H-RAG specification of a triple retriever and a
GFlowNet path reasoner, §3, §4.1): a small MLP over text and structure features.

Per triple ``(h, r, t)`` of a question's G_retrieval the scorer reads the (masked) question vector, the relation
and entity-name vectors (frozen MiniLM, projected by learned linear maps) and the distance code
``(d_head, d_tail)`` from the topic entities (an embedding), plus question × relation and question × distance
products, and returns one logit. Projections run once per distinct question / relation / entity of a batch,
so a triple costs a gather and one small MLP — scoring is vectorised over all triples of many questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.samples import MAX_DIST, RetrievalSamples
from kgrag.hrag.retrieval.signatures import BITS, bits_matrix, path_signatures
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.progress import counter

__all__ = ["TripleBatch", "TripleScorer", "make_batch", "GroupSignatures", "score_samples"]


@dataclass
class TripleBatch:
    question_vec: torch.Tensor  # (B, D) one row per question of the batch
    question_of: torch.Tensor  # (N,) row -> question
    relation: torch.Tensor  # (N,) global relation id
    entity_vec: torch.Tensor  # (U, D) distinct entities of the batch
    head: torch.Tensor  # (N,) -> entity_vec row
    tail: torch.Tensor  # (N,)
    dist_code: torch.Tensor  # (N,) d_head * (MAX_DIST + 1) + d_tail
    path_bits: torch.Tensor  # (N, 2 * BITS) first / last relation sets of the near end (kgrag.hrag.retrieval.signatures)


#: triples scored per model call: the hidden layers of a chunk stay in the CPU's caches (on 2 cores, 500 10M-haystack
#: questions of ~2,700 triples: 3.3 s at 32k rows, 5.2 s at 200k)
SCORE_ROWS = 32_768


class TripleScorer(nn.Module):
    def __init__(self, text_dim: int, num_relations: int, hidden: int = 128, proj: int = 64, entity_proj: int = 32):
        super().__init__()
        self.config = {"text_dim": text_dim, "num_relations": num_relations, "hidden": hidden, "proj": proj,
                       "entity_proj": entity_proj}
        self.question = nn.Linear(text_dim, proj)
        self.relation = nn.Linear(text_dim, proj)
        self.relation_id = nn.Embedding(num_relations, proj)
        self.entity = nn.Linear(text_dim, entity_proj)
        self.dist = nn.Embedding((MAX_DIST + 1) ** 2, proj)
        self.path = nn.Linear(2 * BITS, proj)
        self.mlp = nn.Sequential(
            nn.Linear(7 * proj + 2 * entity_proj, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, batch: TripleBatch, relation_vec: torch.Tensor) -> torch.Tensor:
        """Logits ``(N,)`` for the batch's triples; ``relation_vec`` is the ``(relations, D)`` text matrix.

        The first layer reads ``[q, rel, d, p, q*rel, q*d, q*p, ent_head, ent_tail]`` (:meth:`concat_features`);
        it is linear, so it is computed by parts where each part varies: the question × relation terms once per
        (question, relation) pair, the question × distance terms once per (question, distance code), the entity
        terms once per entity, and per triple only the path terms ``[p, q*p]`` — the same sum as the concatenation
        (up to float rounding) at a quarter of its multiply-adds."""
        proj, entity_proj = self.config["proj"], self.config["entity_proj"]
        first = self.mlp[0]
        w = first.weight  # (hidden, 7 * proj + 2 * entity_proj)
        blocks = [w[:, i * proj : (i + 1) * proj] for i in range(7)]  # q, rel, d, p, q*rel, q*d, q*p
        w_head, w_tail = w[:, 7 * proj : 7 * proj + entity_proj], w[:, 7 * proj + entity_proj :]
        q = self.question(batch.question_vec)  # (B, proj)
        used, rel_of = torch.unique(batch.relation, return_inverse=True)  # project the batch's relations only
        rel = self.relation(relation_vec[used]) + self.relation_id.weight[used]  # (U, proj)
        # question × relation: one row per distinct (question, relation) pair of the batch
        pair_key = batch.question_of * used.numel() + rel_of
        pairs, pair_of = torch.unique(pair_key, return_inverse=True)
        pq, pr = q[pairs // used.numel()], rel[pairs % used.numel()]
        pair_term = pq @ blocks[0].T + pr @ blocks[1].T + (pq * pr) @ blocks[4].T + first.bias
        # question × distance code: a dense (B, codes) table
        d = self.dist.weight  # (codes, proj)
        codes = d.shape[0]
        dist_term = (d @ blocks[2].T).unsqueeze(0) + (q.unsqueeze(1) * d.unsqueeze(0)) @ blocks[5].T  # (B, codes, h)
        ent = self.entity(batch.entity_vec)
        p = self.path(batch.path_bits) + rel[rel_of]  # the path prefix and the relation extending it
        per_triple = torch.cat([p, q[batch.question_of] * p], dim=-1) @ torch.cat([blocks[3], blocks[6]], 1).T
        hidden = (per_triple + pair_term[pair_of] + dist_term.reshape(-1, w.shape[0])[batch.question_of * codes
                                                                                      + batch.dist_code]
                  + (ent @ w_head.T)[batch.head] + (ent @ w_tail.T)[batch.tail])
        return self.mlp[1:](hidden).squeeze(-1)

    def concat_features(self, batch: TripleBatch, relation_vec: torch.Tensor) -> torch.Tensor:
        """The first layer's input ``(N, 7 * proj + 2 * entity_proj)`` written out: the definition :meth:`forward`
        computes by parts (``self.mlp(concat_features(...))`` is the same logit)."""
        q = self.question(batch.question_vec)[batch.question_of]
        used, inverse = torch.unique(batch.relation, return_inverse=True)
        rel = (self.relation(relation_vec[used]) + self.relation_id.weight[used])[inverse]
        ent = self.entity(batch.entity_vec)
        d = self.dist(batch.dist_code)
        p = self.path(batch.path_bits) + rel
        return torch.cat([q, rel, d, p, q * rel, q * d, q * p, ent[batch.head], ent[batch.tail]], dim=-1)


class GroupSignatures:
    """Path signatures of each G_retrieval group of ``samples``, computed once per group (they depend on the group's
    triples and distances only, not on the question) and kept as two uint32 sets per triple."""

    def __init__(self, graph: CSRGraph, samples: RetrievalSamples) -> None:
        self.graph = graph
        self.samples = samples
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def bits(self, group: int, rows: np.ndarray | None = None) -> np.ndarray:
        """``(n, 2 * BITS)`` float32 features of the group's triples (``rows`` of them when given). Computed on
        the whole G_retrieval: a subsample would cut the paths."""
        if group not in self._cache:
            span = self.samples.group_triples(group)
            self._cache[group] = path_signatures(self.graph, self.samples.triples[span].astype(np.int64),
                                                 self.samples.head_dist[span], self.samples.tail_dist[span])
        first, last = self._cache[group]
        if rows is not None:
            first, last = first[rows], last[rows]
        return np.concatenate([bits_matrix(first), bits_matrix(last)], axis=1)


def make_batch(graph: CSRGraph, text: TextEmbeddings, question_vec: np.ndarray,
               rows: Sequence[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> TripleBatch:
    """A batch from ``(question position in question_vec, triples, head_dist, tail_dist, path_bits)`` per
    question."""
    triples = np.concatenate([r[1] for r in rows])
    heads, tails = graph.head[triples], graph.tail[triples]
    entities, inverse = np.unique(np.concatenate([heads, tails]), return_inverse=True)
    n = triples.size
    positions = np.array([r[0] for r in rows], dtype=np.int64)
    counts = np.array([r[1].size for r in rows], dtype=np.int64)
    dist = np.concatenate([r[2].astype(np.int64) * (MAX_DIST + 1) + r[3] for r in rows])
    return TripleBatch(
        question_vec=torch.from_numpy(np.ascontiguousarray(question_vec[positions], dtype=np.float32)),
        question_of=torch.from_numpy(np.repeat(np.arange(len(rows)), counts)),
        relation=torch.from_numpy(graph.rel[triples].astype(np.int64)),
        entity_vec=torch.from_numpy(text.entities[entities].astype(np.float32)),
        head=torch.from_numpy(inverse[:n].astype(np.int64)),
        tail=torch.from_numpy(inverse[n:].astype(np.int64)),
        dist_code=torch.from_numpy(dist),
        path_bits=torch.from_numpy(np.concatenate([r[4] for r in rows])),
    )


@torch.no_grad()
def score_samples(model: TripleScorer, graph: CSRGraph, text: TextEmbeddings, samples: RetrievalSamples,
                  question_vec: np.ndarray | None = None, max_rows: int = SCORE_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """Scores of every question's G_retrieval triples: ``(ptr (Q+1,), scores)``, question ``i``'s scores at
    ``scores[ptr[i]:ptr[i+1]]`` aligned with ``samples.question(i).triples``. Questions are scored in chunks of
    about ``max_rows`` triples."""
    model.eval()
    if question_vec is None:
        question_vec = text.questions(samples.texts)
    relation_vec = torch.from_numpy(text.relations)
    signatures = GroupSignatures(graph, samples)
    counts = samples.question_triple_counts()
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    scores = np.zeros(int(ptr[-1]), dtype=np.float32)
    start = 0
    with counter("retriever scoring", "question", len(samples)) as progress:
        while start < len(samples):
            stop = start + 1
            while stop < len(samples) and ptr[stop + 1] - ptr[start] <= max_rows:
                stop += 1
            rows = []
            for i in range(start, stop):
                group = int(samples.group_of[i])
                span = samples.group_triples(group)
                rows.append((i, samples.triples[span].astype(np.int64), samples.head_dist[span],
                             samples.tail_dist[span], signatures.bits(group)))
            if ptr[stop] > ptr[start]:
                batch = make_batch(graph, text, question_vec, rows)
                scores[ptr[start] : ptr[stop]] = model(batch, relation_vec).numpy()
            start = stop
            progress(start, len(samples))
    return ptr, scores
