"""GFlowNet environment (spec h-rag.md §4.2.1, §4.3.1): legal actions, forced Stop, batched steps, TB loss."""

from __future__ import annotations

import math

import torch

from kgrag.hrag.gflownet.env import (
    STOP,
    initial_state,
    legal_actions,
    masked_log_probs,
    pool_from_edges,
    step,
)
from kgrag.hrag.gflownet.losses import reward, trajectory_balance


def legal_set(mask_row: torch.Tensor) -> set[int]:
    return {int(i) for i in torch.nonzero(mask_row[:-1]).flatten()}


def test_legal_actions_follow_the_path_and_stop_is_forced_at_a_dead_end() -> None:
    # edges: e0 = 0 -> 1, e1 = 2 -> 1, e2 = 3 -> 4 ; topic 0. Candidates: 2e as stored, 2e + 1 reversed.
    pool = pool_from_edges([torch.tensor([0, 2, 3])], [torch.tensor([1, 1, 4])], [torch.tensor([0])], [5])
    state = initial_state(pool)
    legal = legal_actions(pool, state)
    assert legal_set(legal[0]) == {0} and bool(legal[0, -1])  # only e0 starts at the topic; Stop legal
    state = step(pool, state, torch.tensor([0]))
    assert int(state.current[0]) == 1 and int(state.length[0]) == 1
    legal = legal_actions(pool, state)
    assert legal_set(legal[0]) == {3}  # e1 walked backwards (1 -> 2); e0 reversed is the same edge: excluded
    state = step(pool, state, torch.tensor([3]))
    legal = legal_actions(pool, state)
    assert legal_set(legal[0]) == set()  # dead end
    log_p = masked_log_probs(torch.randn(1, pool.size), torch.randn(1), legal)
    assert float(log_p[0, -1]) == 0.0 and torch.isinf(log_p[0, :-1]).all()  # P(Stop) = 1
    state = step(pool, state, torch.tensor([STOP]))
    assert bool(state.done[0]) and int(state.length[0]) == 2
    assert legal_set(legal_actions(pool, state)[0]) == set()  # finished: Stop alone


def test_random_rollouts_never_select_a_non_adjacent_candidate() -> None:
    gen = torch.Generator().manual_seed(0)
    heads, tails, topics, sizes = [], [], [], []
    for n, m in ((12, 30), (7, 9), (20, 50)):  # padded batch of three questions
        heads.append(torch.randint(0, n, (m,), generator=gen))
        tails.append(torch.randint(0, n, (m,), generator=gen))
        topics.append(torch.tensor([0]))
        sizes.append(n)
    pool = pool_from_edges(heads, tails, topics, sizes)
    for _ in range(20):
        state = initial_state(pool)
        for _ in range(8):
            legal = legal_actions(pool, state)
            assert not (legal[:, :-1] & ~pool.valid).any()  # padding is never legal
            choice = torch.multinomial(legal.float(), 1, generator=gen).squeeze(1)
            choice = torch.where(choice == pool.size, torch.full_like(choice, STOP), choice)
            previous = state.current.clone()
            was_start = state.length == 0
            state = step(pool, state, choice)
            moved = choice != STOP
            rows = torch.nonzero(moved).flatten()
            for r in rows.tolist():
                head = int(pool.head[r, choice[r]])
                assert (head == 0) if bool(was_start[r]) else (head == int(previous[r]))
        # a path never uses an edge twice
        used = pool.edge.masked_fill(~state.selected, -1)
        for r in range(3):
            edges = [int(e) for e in used[r] if e >= 0]
            assert len(edges) == len(set(edges)) == int(state.length[r])


def test_trajectory_balance_hand_computed() -> None:
    log_z = torch.tensor([0.5, -0.2])
    sum_log_pf = torch.tensor([math.log(0.5) + math.log(0.25), math.log(0.9)])
    r = reward(torch.tensor([1.0, 0.0]), epsilon=0.1)
    assert torch.allclose(r, torch.tensor([1.1, 0.1]))
    expected = ((0.5 + math.log(0.125) - math.log(1.1)) ** 2 + (-0.2 + math.log(0.9) - math.log(0.1)) ** 2) / 2
    assert math.isclose(float(trajectory_balance(log_z, sum_log_pf, torch.log(r))), expected, rel_tol=1e-6)
    assert torch.allclose(reward(torch.tensor([0.5]), torch.tensor([True]), alpha=1.0, beta=2.0, epsilon=0.0),
                          torch.tensor([2.5]))
