"""On-policy trajectory sampling with ε-uniform exploration (spec h-rag.md, the H-RAG specification of a
triple retriever and a GFlowNet path reasoner, §4.3.2), batched over questions.

Each step: the policy's masked distribution over ``[selects…, Stop]``; per question, with probability
``explore`` the action is drawn uniformly from the legal ones instead. The log-probabilities kept are always the
policy's own (``log P_F``), what TB / SubTB need; a finished question contributes 0 (Stop alone is legal).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kgrag.hrag.gflownet.data import PoolBatch
from kgrag.hrag.gflownet.env import PathState, initial_state, legal_actions, step
from kgrag.hrag.gflownet.losses import reward
from kgrag.hrag.gflownet.policy import PathPolicy

__all__ = ["Trajectories", "sample_trajectories", "path_rewards", "replay_actions", "FREE"]


@dataclass
class Trajectories:
    log_pf: torch.Tensor  # (B, T) log P_F of the action taken at step t (0 once finished)
    log_flow: torch.Tensor  # (B, T) log F(S_t): log Z at t = 0, the flow head after
    state: PathState  # the final states
    steps: int  # T: steps run (≤ max_steps + 1)

    @property
    def log_z(self) -> torch.Tensor:
        return self.log_flow[:, 0]

    @property
    def terminal(self) -> torch.Tensor:
        """(B,) local node the path ends at; -1 for an empty path."""
        return torch.where(self.state.length > 0, self.state.current, torch.full_like(self.state.current, -1))


FREE = -2  # in ``forced``: sample this step


def sample_trajectories(policy: PathPolicy, batch: PoolBatch, max_steps: int, explore: float,
                        generator: torch.Generator, with_flows: bool = False,
                        forced: torch.Tensor | None = None) -> Trajectories:
    """One trajectory per question of ``batch``; ``with_flows`` also evaluates ``log F(S_t)`` (for SubTB).
    ``forced`` (B, max_steps + 1): per row and step an action to replay (candidate index, or ``C`` = Stop)
    instead of sampling, :data:`FREE` to sample — off-policy trajectories TB / SubTB accept as they are."""
    pooled = policy.embed_pool(batch)
    state = initial_state(batch.pool)
    log_pf, log_flow = [], []
    b = len(batch)
    for t in range(max_steps + 1):
        legal = legal_actions(batch.pool, state, max_steps)
        rows = torch.nonzero(~state.done).flatten()
        log_p, out = policy.log_probs(pooled, state, legal, rows)
        if t == 0:
            log_flow.append(policy.initial_log_z(out))
        elif with_flows:
            flow = torch.zeros(b)
            flow = flow.index_put((rows,), policy.state_log_flow(out))
            log_flow.append(flow)
        probs = log_p.detach().exp()
        uniform = legal.float() / legal.sum(dim=1, keepdim=True)
        explore_rows = torch.rand(len(batch), generator=generator) < explore
        probs = torch.where(explore_rows[:, None], uniform, probs)
        action = torch.multinomial(probs, 1, generator=generator)
        if forced is not None:
            action = torch.where(forced[:, t : t + 1] == FREE, action, forced[:, t : t + 1])
        log_pf.append(log_p.gather(1, action).squeeze(1).masked_fill(state.done, 0.0))
        state = step(batch.pool, state, action.squeeze(1))
        if bool(state.done.all()):
            break
    flows = torch.stack(log_flow, dim=1) if with_flows else log_flow[0][:, None]
    return Trajectories(torch.stack(log_pf, dim=1), flows, state, len(log_pf))


def path_rewards(batch: PoolBatch, traj: Trajectories, alpha: float, beta: float, epsilon: float,
                 exclude_topics: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(R, recall, correct)`` per trajectory: ``Recall(S_T, G*)`` = GT edges on the path over the GT edges one
    answer path has; ``correct`` = the path ends at a gold answer (the exact-match stand-in for the LLM check)."""
    on_gt = (traj.state.edge_used[:, : batch.gt_edge.shape[1]] & batch.gt_edge).sum(dim=1).float()
    recall = (on_gt / batch.gt_needed).clamp(max=1.0)
    terminal = traj.terminal
    safe = terminal.clamp(min=0)[:, None]
    correct = (terminal >= 0) & batch.is_answer.gather(1, safe).squeeze(1)
    if exclude_topics:
        correct &= ~batch.pool.is_topic.gather(1, safe).squeeze(1)
    return reward(recall, correct, alpha, beta, epsilon), recall, correct


def replay_actions(batch_walks: list[torch.Tensor], share: float, stop: int, max_steps: int,
                   generator: torch.Generator) -> torch.Tensor:
    """``forced`` for :func:`sample_trajectories`: each row that has GT walks replays one of them (then Stop)
    with probability ``share``; the other rows sample freely."""
    forced = torch.full((len(batch_walks), max_steps + 1), FREE, dtype=torch.long)
    draws = torch.rand(len(batch_walks), generator=generator)
    for row, walks in enumerate(batch_walks):
        if walks.shape[0] == 0 or float(draws[row]) >= share:
            continue
        walk = walks[int(torch.randint(walks.shape[0], (1,), generator=generator))]
        walk = walk[walk >= 0][:max_steps]
        forced[row] = stop
        forced[row, : walk.numel()] = walk
    return forced
