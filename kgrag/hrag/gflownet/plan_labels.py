"""The relation planner's training labels: each train question's relation chain, read off the whole KG.

A question's chain is the action sequence (``2·relation + reversed``, the planner's alphabet) that, walked from its
topic entities over the full graph, reaches its gold answer set best (F1 of the reached entities, topics left out):

    chains = best_chains(graph, topics, answers, hops, max_steps=3)
    plan = PlanData.build(texts, chains, text)          # what warm-up and the TB steps' cross-entropy draw from

Reading chains off the KG rather than off g_agent's shortest GT walks matters twice. g_agent is built for a few
thousand train questions while every train question has a chain; and a shortest walk is often a shortcut (a 3-hop
question whose answer is also one hop from the topic), a wrong label for the question's wording. A known hop count
restricts the chains to that length; otherwise every length up to ``max_steps`` competes and the shorter wins a
tie. Chains tied at the best F1 are all kept (a director who also wrote the film): the planner sees them in
proportion, and across the questions of one wording the chain they share wins.

Vectorised: one boolean sparse matrix per action, a chunk of questions' frontiers as one sparse (questions ×
entities) matrix, expanded depth-first over the actions, with branches that reach nothing pruned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.gflownet.planner import walk_actions
from kgrag.hrag.questions import masked_text
from kgrag.hrag.text import QuestionTokens, TextEmbeddings

__all__ = ["QuestionChains", "PlanData", "action_matrices", "best_chains", "cached_chains"]


@dataclass
class QuestionChains:
    """Per question, its best chains: ``chains[offsets[i]:offsets[i + 1]]`` (−1 padded rows) with F1 ``f1[i]``;
    a question whose walks reach no answer has none."""

    offsets: np.ndarray  # (Q + 1,) int64
    chains: np.ndarray  # (C, max_steps) int64, −1 padded
    f1: np.ndarray  # (Q,) float32

    def __len__(self) -> int:
        return int(self.f1.shape[0])

    def of(self, i: int) -> np.ndarray:
        return self.chains[self.offsets[i] : self.offsets[i + 1]]

    def save(self, path: Path) -> None:
        np.savez_compressed(path, offsets=self.offsets, chains=self.chains, f1=self.f1)

    @classmethod
    def load(cls, path: Path) -> QuestionChains:
        with np.load(path) as z:
            return cls(z["offsets"], z["chains"], z["f1"])


def action_matrices(graph: CSRGraph) -> list[sp.csr_matrix]:
    """One (entities × entities) 0/1 matrix per planner action: ``2r`` walks relation ``r`` head → tail,
    ``2r + 1`` tail → head."""
    n = len(graph.entity_keys)
    out = []
    for r in range(len(graph.relations)):
        pick = graph.rel == r
        m = sp.csr_matrix((np.ones(int(pick.sum()), np.float32), (graph.head[pick], graph.tail[pick])), shape=(n, n))
        m.data[:] = 1.0  # duplicate triples count once
        out += [m, m.T.tocsr()]
    return out


def _rows(sets: Sequence[Sequence[int]], n: int) -> sp.csr_matrix:
    lengths = np.fromiter((len(s) for s in sets), np.int64, len(sets))
    cols = np.fromiter((e for s in sets for e in s), np.int64, int(lengths.sum()))
    m = sp.csr_matrix((np.ones(cols.size, np.float32), cols, np.concatenate([[0], np.cumsum(lengths)])),
                      shape=(len(sets), n))
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


def _chunk_chains(actions: list[sp.csr_matrix], topics: sp.csr_matrix, answers: sp.csr_matrix, length: int,
                  max_steps: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every chain of a chunk of questions that reaches something, with each question's F1 under it: the chains
    of exactly ``length`` actions (``length`` 0: every length up to ``max_steps``) and a (Q, chains) F1 matrix."""
    size = np.asarray(answers.sum(axis=1)).ravel()
    found: list[tuple[int, ...]] = []
    scores: list[np.ndarray] = []

    def expand(frontier: sp.csr_matrix, prefix: tuple[int, ...]) -> None:
        if prefix and (length == 0 or len(prefix) == length):
            reached = frontier - frontier.multiply(topics)
            reached.eliminate_zeros()
            hits = np.asarray(reached.multiply(answers).sum(axis=1)).ravel()
            f1 = 2 * hits / np.maximum(reached.getnnz(axis=1) + size, 1)
            if f1.any():
                found.append(prefix)
                scores.append(f1.astype(np.float32))
        if len(prefix) == (length or max_steps):
            return
        for a, step in enumerate(actions):
            nxt = frontier @ step
            if nxt.nnz:
                nxt.data[:] = 1.0
                expand(nxt, (*prefix, a))

    expand(topics, ())
    return found, (np.stack(scores, axis=1) if scores else np.zeros((topics.shape[0], 0), np.float32))


def best_chains(graph: CSRGraph, topics: Sequence[Sequence[int]], answers: Sequence[Sequence[int]],
                hops: Sequence[int], max_steps: int, chunk: int = 256, tie: float = 1e-6) -> QuestionChains:
    """Each question's best relation chains over ``graph`` (module docstring); ``hops[i]`` 0 = unknown."""
    n, q = len(graph.entity_keys), len(topics)
    actions = action_matrices(graph)
    per_question: list[list[tuple[int, ...]]] = [[] for _ in range(q)]
    f1 = np.zeros(q, np.float32)
    hops = np.asarray([h if 0 < h <= max_steps else 0 for h in hops], np.int64)
    for length in np.unique(hops):
        rows = np.flatnonzero(hops == length)
        for start in range(0, rows.size, chunk):
            part = rows[start : start + chunk]
            found, scores = _chunk_chains(actions, _rows([topics[i] for i in part], n),
                                          _rows([answers[i] for i in part], n), int(length), max_steps)
            if not found:
                continue
            lengths = np.array([len(c) for c in found])
            order = np.argsort(lengths, kind="stable")  # a row's ties come shortest first below
            scores, found = scores[:, order], [found[k] for k in order]
            best = scores.max(axis=1)
            for row, col in zip(*np.nonzero((scores >= best[:, None] - tie) & (best[:, None] > 0)), strict=True):
                keep = per_question[part[row]]
                if not keep or len(found[col]) == len(keep[0]):  # among ties, the shortest length only
                    keep.append(found[col])
            f1[part] = best
    counts = np.array([len(c) for c in per_question], np.int64)
    chains = np.full((int(counts.sum()), max_steps), -1, np.int64)
    k = 0
    for keep in per_question:
        for c in keep:
            chains[k, : len(c)] = c
            k += 1
    return QuestionChains(np.concatenate([[0], np.cumsum(counts)]), chains, f1)


def cached_chains(folder: Path, graph: CSRGraph, topics: Sequence[Sequence[int]], answers: Sequence[Sequence[int]],
                  hops: Sequence[int], max_steps: int) -> QuestionChains:
    """:func:`best_chains`, kept in ``folder/chains_<fingerprint>.npz`` (graph triples, questions, max_steps)."""
    digest = hashlib.sha256()
    for array in (graph.head, graph.rel, graph.tail):
        digest.update(np.ascontiguousarray(array, np.int64).tobytes())
    digest.update(repr((list(map(list, topics)), list(map(list, answers)), list(hops), max_steps)).encode())
    path = Path(folder) / f"chains_{digest.hexdigest()[:16]}.npz"
    if path.is_file():
        return QuestionChains.load(path)
    chains = best_chains(graph, topics, answers, hops, max_steps)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    chains.save(tmp)
    tmp.replace(path)
    return chains


@dataclass
class PlanData:
    """The planner's training set: question token vectors (one row per distinct masked wording), each question's
    row, and its chains; only questions with a chain are kept."""

    tokens: QuestionTokens
    row: np.ndarray  # (Q,) question → its row of ``tokens``
    chains: list[np.ndarray]  # per question, (P ≥ 1, W) actions, −1 padded

    def __post_init__(self) -> None:
        """All chains as one −1 padded array, question ``i``'s at ``_flat[_offsets[i]:_offsets[i + 1]]``."""
        self._offsets = np.concatenate([[0], np.cumsum([c.shape[0] for c in self.chains], dtype=np.int64)])
        width = max((c.shape[1] for c in self.chains if c.size), default=1) or 1
        self._flat = np.full((int(self._offsets[-1]), width), -1, np.int64)
        for i, c in enumerate(self.chains):
            self._flat[self._offsets[i] : self._offsets[i + 1], : c.shape[1]] = c

    def __len__(self) -> int:
        return len(self.chains)

    @classmethod
    def build(cls, texts: Sequence[str], chains: QuestionChains, text: TextEmbeddings) -> PlanData:
        keep = [i for i in range(len(chains)) if chains.offsets[i + 1] > chains.offsets[i]]
        masked = [masked_text(texts[i]) for i in keep]
        unique = list(dict.fromkeys(masked))
        index = {t: k for k, t in enumerate(unique)}
        return cls(text.question_tokens(unique), np.array([index[t] for t in masked], np.int64),
                   [chains.of(i) for i in keep])

    @classmethod
    def from_walks(cls, questions: Sequence, tokens: QuestionTokens) -> PlanData:
        """The fallback without a KG at hand: the relation chains of g_agent questions' GT walks."""
        chains = [walk_actions(q.gt_walks, q.relation[None].expand(q.gt_walks.shape[0], -1)).numpy()
                  for q in questions]
        keep = [i for i, c in enumerate(chains) if c.shape[0]]
        return cls(tokens[keep] if keep else tokens[:0], np.arange(len(keep), dtype=np.int64),
                   [chains[i] for i in keep])

    def sample(self, rng: np.random.Generator, n: int
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``n`` questions (without replacement) with all their chains, one row per chain: token vectors
        (rows, L, D), their mask, the actions (rows, W), −1 padded, and each row's question (0 … n − 1)."""
        picked = rng.choice(len(self), min(n, len(self)), replace=False)
        counts = self._offsets[picked + 1] - self._offsets[picked]
        question = np.repeat(np.arange(picked.size), counts)
        rows = np.repeat(self._offsets[picked] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        flat = self._flat[rows]
        used = max(int((flat >= 0).sum(1).max()), 1) if flat.size else 1
        actions = torch.from_numpy(flat[:, :used].copy())
        tokens = self.tokens[self.row[picked][question]]
        width = max(int(tokens.mask.sum(1).max()), 1)
        return (torch.from_numpy(tokens.vectors[:, :width].astype(np.float32)),
                torch.from_numpy(tokens.mask[:, :width].copy()), actions, torch.from_numpy(question))
