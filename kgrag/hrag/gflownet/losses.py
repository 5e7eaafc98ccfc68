"""GFlowNet objectives (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §4.3.1) and the reward (§4.3.2)."""

from __future__ import annotations

import torch

__all__ = ["trajectory_balance", "subtrajectory_balance", "reward"]


def trajectory_balance(log_z: torch.Tensor, sum_log_pf: torch.Tensor, log_reward: torch.Tensor) -> torch.Tensor:
    """Mean over trajectories of ``(log Z(q) + Σ_t log P_F(S_{t+1}|S_t, q) − log R(q, S_T))²``; ``P_B = 1`` (the
    parent of a path is unique), so its log term is 0."""
    return ((log_z + sum_log_pf - log_reward) ** 2).mean()


def subtrajectory_balance(log_flow: torch.Tensor, log_pf: torch.Tensor, length: torch.Tensor,
                          log_reward: torch.Tensor, lam: float) -> torch.Tensor:
    """Sub-trajectory balance (Madan et al. 2023) with ``P_B = 1``, mean over trajectories.

    A trajectory of ``n = length`` selects and a Stop has transitions ``0 … n`` and flows
    ``L_0 = log Z``, ``L_k = log F(S_k)`` (``1 ≤ k ≤ n``), ``L_{n+1} = log R(S_n)`` (the Stop transition ends in
    the terminal sink). Every pair ``i < j ≤ n + 1`` gives ``(L_i + Σ_{i≤t<j} log P_F − L_j)²``, weighted
    ``λ^{j−i}`` and normalised by the weights' sum. The pair ``(0, n + 1)`` alone is trajectory balance.

    ``log_flow`` (B, T) with ``log Z`` in column 0, ``log_pf`` (B, T) with zeros after the Stop, ``T ≥ n + 1``.
    """
    b, t = log_pf.shape
    positions = torch.arange(t + 1)
    end = (length + 1)[:, None]  # index of the sink
    flows = torch.cat([log_flow, torch.zeros(b, 1)], dim=1)[:, : t + 1]
    flows = torch.where(positions == end, log_reward[:, None], flows)
    cum = torch.cat([torch.zeros(b, 1), torch.cumsum(log_pf, dim=1)], dim=1)  # cum[:, k] = Σ_{t<k}
    i, j = positions[:, None], positions[None, :]
    gap = (j - i).float()
    valid = (i < j)[None] & (j[None] <= end[..., None])  # (B, T+1, T+1)
    residual = flows[:, :, None] + cum[:, None, :] - cum[:, :, None] - flows[:, None, :]
    weight = (lam ** gap)[None] * valid
    return ((weight * residual**2).sum(dim=(1, 2)) / weight.sum(dim=(1, 2))).mean()


def reward(recall: torch.Tensor, answer_correct: torch.Tensor | None = None, alpha: float = 1.0, beta: float = 0.0,
           epsilon: float = 1e-3) -> torch.Tensor:
    """``R = α·Recall(S_T, G*) + β·1[answer correct] + ε`` (ε keeps ``log R`` finite)."""
    r = alpha * recall + epsilon
    if answer_correct is not None and beta:
        r = r + beta * answer_correct.float()
    return r
