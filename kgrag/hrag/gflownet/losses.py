"""GFlowNet objectives (spec h-rag.md §4.3.1)."""

from __future__ import annotations

import torch

__all__ = ["trajectory_balance", "reward"]


def trajectory_balance(log_z: torch.Tensor, sum_log_pf: torch.Tensor, log_reward: torch.Tensor) -> torch.Tensor:
    """Mean over trajectories of ``(log Z(q) + Σ_t log P_F(S_{t+1}|S_t, q) − log R(q, S_T))²``; ``P_B = 1`` (the
    parent of a path is unique), so its log term is 0."""
    return ((log_z + sum_log_pf - log_reward) ** 2).mean()


def reward(recall: torch.Tensor, answer_correct: torch.Tensor | None = None, alpha: float = 1.0, beta: float = 0.0,
           epsilon: float = 1e-3) -> torch.Tensor:
    """``R = α·Recall(S_T, G*) + β·1[answer correct] + ε`` (ε keeps ``log R`` finite)."""
    r = alpha * recall + epsilon
    if answer_correct is not None and beta:
        r = r + beta * answer_correct.float()
    return r
