"""The relation planner: GT walks as actions, its labels (relation chains read off a KG), its loss on hand-made
inputs, the policy's prefix of a state, and a tiny question → relation-chain task it must learn."""

from __future__ import annotations

import math

import numpy as np
import torch

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.gflownet.data import QuestionGraph, collate
from kgrag.hrag.gflownet.env import initial_state, step
from kgrag.hrag.gflownet.plan_data import PlanData
from kgrag.hrag.gflownet.planner import RelationPlanner, plan_loss, walk_actions
from kgrag.hrag.gflownet.policy import PathPolicy
from kgrag.hrag.retrieval.chain_labels import best_chains
from kgrag.hrag.retrieval.text import QuestionTokens

TEXT = 8


def test_walk_actions_are_relation_and_direction() -> None:
    relation = torch.tensor([[3, 1, 2]])
    walks = torch.tensor([[0, 3, 4, -1]])  # edge 0 forward, edge 1 reversed, edge 2 forward, padding
    assert walk_actions(walks, relation).tolist() == [[6, 3, 4, -1]]


def test_plan_loss_is_the_marginal_likelihood_of_each_questions_chains() -> None:
    a = 5  # 2 relations, Stop = 4
    log_plan = torch.full((3, 3, a), math.log(1 / a))
    log_plan[0, 0] = torch.tensor([0.5, 0.1, 0.1, 0.2, 0.1]).log()
    log_plan[0, 1] = torch.tensor([0.1, 0.1, 0.1, 0.1, 0.6]).log()
    log_plan[1, 0] = torch.tensor([0.5, 0.1, 0.1, 0.2, 0.1]).log()  # same question, its other chain
    log_plan[1, 1] = torch.tensor([0.1, 0.1, 0.1, 0.3, 0.4]).log()
    actions = torch.tensor([[0, -1], [0, 3], [1, -1]])  # q0: r0 fwd | r0 fwd, r1 rev; q1: r0 rev
    group = torch.tensor([0, 0, 1])
    p0 = 0.5 * 0.6 + 0.5 * 0.3 * (1 / a)  # the last row's step after two actions is uniform
    expected = -(math.log(p0) + 2 * math.log(1 / a)) / 2
    assert math.isclose(float(plan_loss(log_plan, actions, 4, group)), expected, rel_tol=1e-6)


def _graph(triples: list[tuple[int, int, int]], relations: int) -> CSRGraph:
    t = np.array(triples, dtype=np.int64)
    n = int(t[:, [0, 2]].max()) + 1
    names = [f"e{i}" for i in range(n)]
    return CSRGraph("toy", "http://x/", names, names, names, [f"r{k}" for k in range(relations)], t[:, 0], t[:, 1],
                    t[:, 2])


def test_best_chains_follow_the_hop_count_keep_ties_and_prefer_short_chains() -> None:
    # film 0 directed (r0) by 1, who also wrote (r1) it; 1 directed film 2 too; 2 stars (r2) 3; 0 stars 3 as well
    g = _graph([(0, 0, 1), (0, 1, 1), (2, 0, 1), (2, 2, 3), (0, 2, 3), (4, 0, 5)], relations=3)
    chains = best_chains(g, topics=[[0], [0], [0], [4]], answers=[[1], [3], [3], [0]], hops=[1, 3, 0, 2],
                         max_steps=3)
    as_lists = [sorted(tuple(a for a in c if a >= 0) for c in chains.of(i).tolist()) for i in range(4)]
    assert as_lists[0] == [(0,), (2,)]  # director and writer tie: both kept
    assert chains.f1[0] == 1.0
    # 3 hops asked: not the 1-hop shortcut 0 -r2-> 3, but through the director's other film (topic left out)
    assert (0, 1, 4) in as_lists[1] and all(len(c) == 3 for c in as_lists[1])
    assert as_lists[2] == [(4,)]  # hop unknown: the shortest of the best
    assert as_lists[3] == [] and chains.f1[3] == 0.0  # nothing reaches the answer


def test_plan_data_samples_every_chain_of_a_picked_question() -> None:
    tokens = QuestionTokens(np.arange(3 * 2 * TEXT, dtype=np.float16).reshape(3, 2, TEXT),
                            np.array([[True, False], [True, True], [True, True]]))
    plan = PlanData(tokens, np.array([0, 2]), [np.array([[4, -1], [0, 3]]), np.array([[1, -1]])])
    question, mask, actions, group = plan.sample(np.random.default_rng(0), 2)
    assert {tuple(a) for a in actions.tolist()} == {(4, -1), (0, 3), (1, -1)}
    for r, a in enumerate(actions.tolist()):
        own = 0 if a[0] in (4, 0) else 1
        assert int((group == group[r]).sum()) == (2 if own == 0 else 1)
        assert torch.equal(question[r], torch.from_numpy(tokens.vectors[[0, 2][own]].astype(np.float32)))


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
        loss = plan_loss(planner(q, mask, actions, rel_vectors), actions, planner.stop, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
    q, actions = batch()
    with torch.no_grad():
        predicted = planner(q, mask, actions, rel_vectors).argmax(-1)
    assert (predicted[:, :2] == actions).float().mean() > 0.95
    assert (predicted[:, 2] == planner.stop).float().mean() > 0.95
