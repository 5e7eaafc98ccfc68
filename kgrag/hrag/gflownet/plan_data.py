"""The relation planner's training set: each train question's masked wording with its relation chains.

The chains are read off the whole KG (:mod:`kgrag.hrag.retrieval.chain_labels`), or, without a KG at hand, off
g_agent's GT walks (:meth:`PlanData.from_walks`):

    chains = cached_chains(folder, graph, topics, answers, hops, max_steps=3)
    plan = PlanData.build(texts, chains, text)          # what warm-up and the TB steps' cross-entropy draw from
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kgrag.hrag.gflownet.planner import walk_actions
from kgrag.hrag.retrieval.chain_labels import QuestionChains
from kgrag.hrag.retrieval.questions import masked_text
from kgrag.hrag.retrieval.text import QuestionTokens, TextEmbeddings

__all__ = ["PlanData"]


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
