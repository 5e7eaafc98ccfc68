"""The relation planner: which relation (and direction) the question asks for next, given the relations walked.

A question names its relation chain in words ("who acted in the films directed by the director of [X]": directed_by
forward, directed_by backward, starred_actors forward), in an order that depends on the phrasing. The planner
reads it as a short sequence: a GRU over the actions taken so far (``2·relation + reversed``, after a start
token) gives a state ``h_t``, an attention of ``h_t`` over the question's token vectors reads the words for the
next hop, and a linear head scores the next action, ``2R`` relation moves plus Stop:

    log P_plan(a_{t+1} | q, a_1 … a_t)

It knows nothing of the pool's entities: the policy's ``P_F`` puts its mass on the groups of candidates that walk
that relation in that direction, and on Stop (:class:`~kgrag.hrag.gflownet.policy.PathPolicy`). It is trained by
the marginal likelihood of each train question's relation chains read off the KG (:func:`plan_loss`,
:mod:`~kgrag.hrag.retrieval.chain_labels`) alone, beside the TB loss that trains the rest of the policy: on MetaQA
it learns in seconds what the reward's high-variance gradient did not teach the whole policy in hundreds of steps
(the TB gradient, left to flow into it, drowned the planner's own).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["RelationPlanner", "walk_actions", "pad_rows", "chain_log_probs", "plan_loss"]


class RelationPlanner(nn.Module):
    def __init__(self, num_relations: int, dim: int, text_dim: int) -> None:
        super().__init__()
        self.read = nn.Linear(text_dim, dim)  # question token vectors → width
        self.num_actions = 2 * num_relations + 1  # relation moves, then Stop
        self.stop = 2 * num_relations
        self.action = nn.Embedding(self.num_actions + 1, dim)  # + the start token
        self.relation_text = nn.Linear(text_dim, dim)  # relation name vectors give unseen relations a start
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.attend = nn.Linear(dim, dim, bias=False)
        self.out = nn.Sequential(nn.Linear(2 * dim, dim), nn.GELU(), nn.Linear(dim, self.num_actions))

    def _inputs(self, prefix: torch.Tensor, relation_vectors: torch.Tensor) -> torch.Tensor:
        """(B, T) actions (−1 = none) → (B, T + 1, dim): the start token, then the actions."""
        start = torch.full((prefix.shape[0], 1), self.num_actions, dtype=torch.long, device=prefix.device)
        tokens = torch.cat([start, prefix.clamp(min=0)], dim=1)
        x = self.action(tokens)
        moves = tokens < self.stop
        text = self.relation_text(relation_vectors[(tokens // 2).clamp(max=relation_vectors.shape[0] - 1)])
        return x + text * moves[..., None]

    def forward(self, question: torch.Tensor, question_mask: torch.Tensor, prefix: torch.Tensor,
                relation_vectors: torch.Tensor) -> torch.Tensor:
        """``question`` (B, L, text_dim) token vectors, ``prefix`` (B, T) actions taken (−1 padding at the end);
        returns (B, T + 1, 2R + 1) ``log P_plan`` of the next action after each prefix."""
        hidden, _ = self.gru(self._inputs(prefix, relation_vectors))  # (B, T + 1, dim)
        return self._head(hidden, self.read(question), question_mask)

    def _head(self, hidden: torch.Tensor, question: torch.Tensor, question_mask: torch.Tensor) -> torch.Tensor:
        """(B, T, dim) GRU states and (B, L, dim) read question tokens → (B, T, 2R + 1) ``log P_plan``."""
        logits = (self.attend(hidden) @ question.transpose(1, 2)) * hidden.shape[-1] ** -0.5  # (B, T, L)
        weights = logits.masked_fill(~question_mask[:, None], float("-inf")).softmax(dim=-1)
        read = weights @ question
        return self.out(torch.cat([hidden, read], dim=-1)).log_softmax(dim=-1)

    def step(self, read: torch.Tensor, question_mask: torch.Tensor, last: torch.Tensor | None,
             state: torch.Tensor | None, relation_vectors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of :meth:`forward`, incremental: ``read`` (B, L, dim) = ``self.read(question)`` computed once,
        ``last`` (B,) the action just taken (None at the start) and ``state`` (1, B, dim) the GRU state before it;
        returns (B, 2R + 1) ``log P_plan`` of the next action and the new state. Equal to :meth:`forward`'s row
        ``t`` for the prefix walked so far."""
        b = read.shape[0]
        if last is None:
            last = torch.full((b,), self.num_actions, dtype=torch.long, device=read.device)  # the start token
            x = self.action(last)
        else:
            x = self.action(last) + self.relation_text(relation_vectors[
                (last // 2).clamp(max=relation_vectors.shape[0] - 1)]) * (last < self.stop)[:, None]
        hidden, state = self.gru(x[:, None], state)
        return self._head(hidden, read, question_mask)[:, 0], state


def walk_actions(walks: torch.Tensor, relation: torch.Tensor) -> torch.Tensor:
    """(B, W) oriented candidates of GT walks (−1 padded) and (B, E) edge relations → (B, W) planner actions
    ``2·relation + reversed`` (−1 padded)."""
    edge = (walks // 2).clamp(min=0)
    actions = 2 * relation.gather(1, edge) + walks % 2
    return torch.where(walks >= 0, actions, torch.full_like(actions, -1))


def pad_rows(rows: list[torch.Tensor]) -> torch.Tensor:
    """1-D long tensors as one (B, longest) tensor, −1 padded (at least one column)."""
    out = torch.full((len(rows), max((r.numel() for r in rows), default=0) or 1), -1, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : r.numel()] = r
    return out


def chain_log_probs(log_plan: torch.Tensor, actions: torch.Tensor, stop: int) -> torch.Tensor:
    """(B,) ``log P_plan`` of each action chain ``actions`` (B, W) (−1 padded) followed by Stop, under ``log_plan``
    (B, W + 1, A) computed with ``actions`` as the prefix (teacher forcing)."""
    b = actions.shape[0]
    length = (actions >= 0).sum(1)
    target = torch.cat([actions, torch.full((b, 1), -1, dtype=actions.dtype, device=actions.device)], dim=1)
    target[torch.arange(b), length] = stop
    picked = log_plan.gather(2, target.clamp(min=0)[..., None]).squeeze(-1)
    return (picked * (target >= 0)).sum(1)


def plan_loss(log_plan: torch.Tensor, actions: torch.Tensor, stop: int, question: torch.Tensor) -> torch.Tensor:
    """The planner's loss: mean over questions of ``−log Σ_chains P_plan(chain)``, the marginal likelihood of a
    question's label chains (rows of ``actions`` with the same ``question`` index, (B,)). A question whose chains
    tie (a director who also wrote the film) asks for either; across the questions of one wording the chain that
    fits them all takes the mass, which a uniform pick among ties would split."""
    per_chain = chain_log_probs(log_plan, actions, stop)
    groups = int(question.max()) + 1 if question.numel() else 0
    top = torch.full((groups,), float("-inf"), device=per_chain.device).scatter_reduce(
        0, question, per_chain.detach(), "amax")
    total = torch.zeros(groups, device=per_chain.device).index_add(0, question, (per_chain - top[question]).exp())
    return -(total.log() + top).mean()
