"""The relation planner: GT walks as actions, its loss on hand-made inputs, the policy's prefix of a state, and a
tiny question → relation-chain task it must learn."""

from __future__ import annotations

import math

import numpy as np
import torch

from kgrag.hrag.gflownet.data import QuestionGraph, collate
from kgrag.hrag.gflownet.env import initial_state, step
from kgrag.hrag.gflownet.planner import RelationPlanner, plan_loss, sample_walk_actions, walk_actions
from kgrag.hrag.gflownet.policy import PathPolicy
from kgrag.hrag.text import QuestionTokens

TEXT = 8


def test_walk_actions_are_relation_and_direction() -> None:
    relation = torch.tensor([[3, 1, 2]])
    walks = torch.tensor([[0, 3, 4, -1]])  # edge 0 forward, edge 1 reversed, edge 2 forward, padding
    assert walk_actions(walks, relation).tolist() == [[6, 3, 4, -1]]


def test_sampled_walks_come_from_each_rows_own_walks() -> None:
    relation = torch.tensor([[0, 1], [1, 0]])
    walks = [torch.tensor([[0, 3], [1, -1]]), torch.zeros((0, 0), dtype=torch.long)]
    seen = set()
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        actions = sample_walk_actions(walks, relation, gen)
        assert actions[1].tolist() == [-1, -1]  # no walk: nothing to learn
        seen.add(tuple(actions[0].tolist()))
    assert seen == {(0, 3), (1, -1)}


def test_plan_loss_hand_computed_and_rows_without_walks_left_out() -> None:
    a = 5  # 2 relations, Stop = 4
    log_plan = torch.full((2, 3, a), math.log(1 / a))
    log_plan[0, 0] = torch.tensor([0.5, 0.1, 0.1, 0.2, 0.1]).log()
    log_plan[0, 1] = torch.tensor([0.1, 0.1, 0.1, 0.1, 0.6]).log()
    actions = torch.tensor([[0, -1], [-1, -1]])  # row 0: relation 0 forward then Stop; row 1: no walk
    expected = -(math.log(0.5) + math.log(0.6)) / 2
    assert math.isclose(float(plan_loss(log_plan, actions, stop=4)), expected, rel_tol=1e-6)


def _question(edges: list[tuple[int, int, int]]) -> QuestionGraph:
    t = torch.tensor(edges, dtype=torch.long)
    n = int(t[:, [0, 2]].max()) + 1
    return QuestionGraph(t[:, 0], t[:, 2], t[:, 1], torch.arange(n), torch.tensor([0]), torch.tensor([n - 1]),
                         torch.zeros(0, dtype=torch.long), 1, "q [x]", 1, torch.zeros((0, 0), dtype=torch.long),
                         torch.zeros(len(edges)))


def test_policy_reads_the_paths_relations_in_walk_order() -> None:
    torch.manual_seed(0)
    pol = PathPolicy(TEXT, 3, dim=16, heads=2, layers=1, ffn=32, entity_dim=0, max_steps=3,
                     relation_vectors=torch.randn(3, TEXT)).eval()
    q = _question([(0, 2, 1), (2, 1, 1), (2, 0, 3)])  # 0 -r2-> 1 <-r1- 2 -r0-> 3
    vec = QuestionTokens(np.random.default_rng(1).normal(size=(1, 3, TEXT)).astype(np.float16),
                         np.ones((1, 3), dtype=bool))
    batch = collate([q], vec, np.zeros((4, TEXT), dtype=np.float16))
    pooled = pol.embed_pool(batch)
    state = initial_state(batch.pool)
    for candidate in (0, 3):  # edge 0 forward, then edge 1 reversed
        state = step(batch.pool, state, torch.tensor([candidate]))
    with torch.no_grad():
        direct = pol.plan(batch.question, batch.question_mask, torch.tensor([[4, 3, -1]]))[0, 2]  # after (r2 fwd, r1 rev)
        assert torch.allclose(pol.next_action(pooled, state)[0], direct, atol=1e-6)
        out = pol(pooled, state)
        plain = pol(pooled, state)
    assert torch.equal(out.stop_logit, plain.stop_logit)


def test_planner_learns_question_words_to_relation_chains() -> None:
    """Word w_k names relation k; a question's contextual token vectors (word + position, as a contextual encoder
    gives) name the first hop then the second, and one hop can repeat: the planner must follow the chain it has
    walked to read the next word, then stop."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    words, positions = torch.randn(3, TEXT), torch.randn(2, TEXT)
    planner = RelationPlanner(3, 16, TEXT)
    rel_vectors = torch.randn(3, TEXT)
    opt = torch.optim.Adam(planner.parameters(), 1e-2)
    mask = torch.ones((64, 2), dtype=torch.bool)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        first, second = rng.integers(0, 3, 64), rng.integers(0, 3, 64)
        q = torch.stack([words[first] + positions[0], words[second] + positions[1]], dim=1)
        return q, torch.tensor(np.stack([2 * first, 2 * second + 1], axis=1))

    for _ in range(300):
        q, actions = batch()
        loss = plan_loss(planner(q, mask, actions, rel_vectors), actions, planner.stop)
        opt.zero_grad()
        loss.backward()
        opt.step()
    q, actions = batch()
    with torch.no_grad():
        predicted = planner(q, mask, actions, rel_vectors).argmax(-1)
    assert (predicted[:, :2] == actions).float().mean() > 0.95
    assert (predicted[:, 2] == planner.stop).float().mean() > 0.95
