"""GFlowNet policy, objectives and answering on hand-made inputs (spec h-rag.md §4.2–4.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kgrag.hrag.gflownet.answers import FoundPath, answer_metrics, beam_search, choose_threshold, rank_answers
from kgrag.hrag.gflownet.data import QuestionGraph, collate, gt_walks
from kgrag.hrag.gflownet.env import initial_state, legal_actions, step
from kgrag.hrag.gflownet.losses import subtrajectory_balance, trajectory_balance
from kgrag.hrag.gflownet.policy import PathPolicy
from kgrag.hrag.gflownet.rollout import FREE, replay_actions, sample_trajectories
from kgrag.hrag.retrieval.text import QuestionTokens

TEXT = 8


def question(edges: list[tuple[int, int, int]], topics: list[int], answers: list[int], n: int,
             gt: list[int] = ()) -> QuestionGraph:
    t = torch.tensor(edges, dtype=torch.long).reshape(-1, 3)
    return QuestionGraph(t[:, 0], t[:, 2], t[:, 1], torch.arange(100, 100 + n), torch.tensor(topics),
                         torch.tensor(answers), torch.tensor(list(gt), dtype=torch.long), 1, "q [x]", 1,
                         torch.zeros((0, 0), dtype=torch.long), t[:, 1].float() + 0.1 * t[:, 0].float())  # scores: a function of the edge, not of its position


def policy(seed: int = 0, relations: int = 3) -> PathPolicy:
    torch.manual_seed(seed)
    return PathPolicy(TEXT, relations, dim=16, heads=2, layers=2, ffn=32, entity_dim=4, max_steps=3,
                      relation_vectors=torch.randn(relations, TEXT)).eval()


def tokens(n: int) -> QuestionTokens:
    """``n`` identical three-token questions."""
    vectors = np.random.default_rng(5).normal(size=(1, 4, TEXT)).astype(np.float16).repeat(n, axis=0)
    return QuestionTokens(vectors, np.array([[True, True, True, False]] * n))


ENTITIES = np.random.default_rng(0).normal(size=(200, TEXT)).astype(np.float16)


def test_pool_permutation_permutes_select_logits_and_keeps_stop_and_log_z() -> None:
    edges = [(0, 0, 1), (1, 1, 2), (2, 2, 3), (0, 1, 4), (4, 0, 5), (1, 2, 5)]
    perm = [3, 5, 0, 2, 4, 1]
    q = question(edges, [0], [3], 6)
    qp = question([edges[i] for i in perm], [0], [3], 6)
    vec = tokens(1)
    pol = policy()
    outs = []
    for qq, first in ((q, 0), (qp, 2 * perm.index(0))):  # walk edge e0 (0 -> 1) in both
        batch = collate([qq], vec, ENTITIES)
        state = step(batch.pool, initial_state(batch.pool), torch.tensor([first]))  # order encoding in play
        out = pol(pol.embed_pool(batch), state)
        outs.append((out, pol.initial_log_z(out)))
    (a, za), (b, zb) = outs
    # candidate 2e / 2e+1 of the original = candidate 2k / 2k+1 of the permuted where perm[k] = e
    expected = torch.empty_like(a.select_logits)
    for k, e in enumerate(perm):
        expected[0, 2 * e : 2 * e + 2] = b.select_logits[0, 2 * k : 2 * k + 2]
    assert torch.allclose(a.select_logits, expected, atol=1e-5)
    assert torch.allclose(a.stop_logit, b.stop_logit, atol=1e-5) and torch.allclose(za, zb, atol=1e-5)


def test_padding_does_not_change_a_question() -> None:
    small = question([(0, 0, 1), (1, 1, 2)], [0], [2], 3)
    big = question([(0, 0, 1)] + [(i, 2, i + 1) for i in range(2, 9)], [0], [1], 10)
    vec = tokens(2)
    pol = policy()
    alone = collate([small], vec[:1], ENTITIES)
    padded = collate([small, big], vec, ENTITIES)
    o1 = pol(pol.embed_pool(alone), initial_state(alone.pool))
    o2 = pol(pol.embed_pool(padded), initial_state(padded.pool))
    assert torch.allclose(o1.select_logits[0], o2.select_logits[0, :4], atol=1e-5)
    assert torch.allclose(o1.stop_logit[0], o2.stop_logit[0], atol=1e-5)


def test_subtrajectory_balance_hand_computed_and_tb_as_its_longest_pair() -> None:
    # one trajectory: 1 select then Stop (n = 1): flows L0 = log Z, L1 = log F(S1), L2 = log R
    log_flow = torch.tensor([[0.3, -0.4, 9.0]])  # the third column is never used (past the sink)
    log_pf = torch.tensor([[math.log(0.5), math.log(0.8), 0.0]])
    log_r = torch.tensor([math.log(0.2)])
    lam = 0.5
    L = [0.3, -0.4, math.log(0.2)]
    c = [0.0, math.log(0.5), math.log(0.5) + math.log(0.8)]
    pairs = [(0, 1), (1, 2), (0, 2)]
    num = sum(lam ** (j - i) * (L[i] + c[j] - c[i] - L[j]) ** 2 for i, j in pairs)
    den = sum(lam ** (j - i) for i, j in pairs)
    got = subtrajectory_balance(log_flow, log_pf, torch.tensor([1]), log_r, lam)
    assert got.item() == pytest.approx(num / den, rel=1e-5)
    tb = trajectory_balance(log_flow[:, 0], log_pf.sum(1), log_r)
    assert tb.item() == pytest.approx((L[0] + c[2] - L[2]) ** 2, rel=1e-5)


def test_gt_walks_follow_gt_edges_outward_to_an_answer() -> None:
    # 0 -e0-> 1 <-e1- 2 (answer); 0 -e2-> 3 -e3-> 4 (answer); e4: 1 -> 5 (not GT)
    head = np.array([0, 2, 0, 3, 1])
    tail = np.array([1, 1, 3, 4, 5])
    gt = np.array([True, True, True, True, False])
    walks = gt_walks(head, tail, gt, 6, np.array([0]), np.array([2, 4]), 8, np.random.default_rng(0))
    assert {tuple(w) for w in walks.tolist()} == {(0, 3), (4, 6)}  # e0 forward then e1 backward; e2, e3 forward


def test_replayed_actions_are_taken_and_scored_by_the_policy() -> None:
    q = question([(0, 0, 1), (1, 1, 2), (0, 2, 3)], [0], [2], 4)
    q.gt_walks = torch.tensor([[0, 2]])
    batch = collate([q, q], tokens(2), ENTITIES)
    gen = torch.Generator().manual_seed(0)
    forced = replay_actions([q.gt_walks, torch.zeros((0, 0), dtype=torch.long)], 1.0, batch.pool.size, 3, gen)
    assert forced[0].tolist() == [0, 2, 6, 6] and (forced[1] == FREE).all()
    traj = sample_trajectories(policy(), batch, 3, 0.0, gen, forced=forced)
    assert int(traj.state.length[0]) == 2 and int(traj.terminal[0]) == 2
    assert bool((traj.log_pf[0] <= 0).all()) and traj.log_pf[0, :3].sum() < 0


def test_beam_search_returns_legal_paths_with_probabilities_that_sum_below_one() -> None:
    q = question([(0, 0, 1), (1, 1, 2), (0, 2, 3), (3, 1, 4), (2, 0, 5)], [0], [2], 6)
    batch = collate([q], tokens(1), ENTITIES)
    found = beam_search(policy(), batch, width=50, max_steps=3, min_share=0.0)[0]
    assert found and sum(p.probability for p in found) <= 1.0 + 1e-5
    head, tail = q.head.tolist(), q.tail.tolist()
    for p in found:  # each path starts at the topic and is continuous
        node = 0
        for cand in p.candidates:
            e, backwards = divmod(cand, 2)
            assert (tail[e] if backwards else head[e]) == node
            node = head[e] if backwards else tail[e]
        assert node == p.terminal
    # width 50 ≥ every path of this pool: the beam finds every stopped path with its exact probability
    exact = _stopped_paths(q)
    assert {tuple(p.candidates): p.probability for p in found} == pytest.approx(exact, abs=1e-5)
    assert sum(exact.values()) < 1.0


def test_beam_lookahead_keeps_the_path_that_can_go_on_over_a_more_probable_dead_end() -> None:
    # topic 0 -r0-> 1 -r1-> 3 and 0 -r0-> 2 (a dead end: no r1 edge at 2); the retriever prefers 0 -> 2
    t = torch.tensor([(0, 0, 1), (0, 0, 2), (1, 1, 3)])
    q = QuestionGraph(t[:, 0], t[:, 2], t[:, 1], torch.arange(100, 104), torch.tensor([0]), torch.tensor([3]),
                      torch.tensor([0, 2]), 2, "q [x]", 2, torch.zeros((0, 0), dtype=torch.long),
                      torch.tensor([0.0, 10.0, 0.0]))
    pol = policy()
    with torch.no_grad():  # a planner that asks for r0 or r1 forward at any step, Stop hardly ever
        pol.planner.out[-1].weight.zero_()
        pol.planner.out[-1].bias.copy_(torch.tensor([5.0, -5, 5, -5, -5, -5, -5]))
        pol.score_prior.fill_(5.0)
    batch = collate([q], tokens(1), ENTITIES)
    plain = beam_search(pol, batch, width=1, max_steps=3, lookahead=1)[0]
    ahead = beam_search(pol, batch, width=1, max_steps=3, lookahead=2)[0]
    assert [p.terminal for p in plain] == [2]  # the plain beam keeps the dead end: the chain is never walked
    assert sorted(p.terminal for p in ahead) == [1, 3]  # the lookahead keeps 0 -> 1 and walks on to 3
    exact = _stopped_paths(q, pol)  # it picks which paths to keep, not their probabilities
    assert {tuple(p.candidates): p.probability for p in ahead} == pytest.approx(
        {(0,): exact[(0,)], (0, 4): exact[(0, 4)]}, rel=1e-4)
    assert exact[(2,)] > exact[(0,)]  # the path it dropped was the more probable one


def _stopped_paths(q: QuestionGraph, pol: PathPolicy | None = None) -> dict[tuple[int, ...], float]:
    """Every non-empty path of ``q`` with ``P(path) · P(Stop | path)`` under the answer scoring (mass on relations
    missing at a node is lost), by depth-first enumeration."""
    batch = collate([q], tokens(1), ENTITIES)
    pol = pol or policy()
    pooled = pol.embed_pool(batch)
    out: dict[tuple[int, ...], float] = {}

    def walk(state, path: tuple[int, ...], prob: float) -> None:
        legal = legal_actions(batch.pool, state, 3)
        with torch.no_grad():
            log_p = pol.log_probs(pooled, state, legal, torch.arange(1), renormalise=False)[0][0]
        if path:
            out[path] = prob * float(log_p[-1].exp())
        for c in torch.nonzero(legal[0, :-1]).flatten().tolist():
            walk(step(batch.pool, state, torch.tensor([c])), (*path, c), prob * float(log_p[c].exp()))

    walk(initial_state(batch.pool), (), 1.0)
    return out


def test_answer_ranking_and_metrics_on_fixed_paths() -> None:
    q = question([(0, 0, 1), (0, 0, 2), (0, 1, 3)], [0], [1, 2], 4)
    batch = collate([q], tokens(1), ENTITIES)
    found = [[FoundPath(0, [0], 1, 0.5), FoundPath(0, [2], 2, 0.2), FoundPath(0, [4], 3, 0.25),
              FoundPath(0, [1, 0], 0, 0.05)]]  # the last one ends at the topic: never an answer
    ranked = rank_answers(found, batch, complete=False)
    assert ranked == [[(101, 0.5), (103, 0.25), (102, 0.2)]]
    # chain completion: 101 and 102 are both reached by the chain "r0 forward" (mass 0.5 + 0.2); the tie breaks by
    # the beam score; r1's chain reaches 103 alone; the path back to the topic is no answer
    assert rank_answers(found, batch) == [[(101, 0.7), (102, 0.7), (103, 0.25)]]
    gold = [{101, 102}]
    m = answer_metrics(ranked, gold, threshold=1.0)  # predicted {101}
    assert m["hits@1"][0] == 1 and m["hit"][0] == 1 and m["f1"][0] == pytest.approx(2 * 1 * 0.5 / 1.5)
    m = answer_metrics(ranked, gold, threshold=0.3)  # predicted {101, 103, 102}: P 2/3, R 1
    assert m["f1"][0] == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))
    m = answer_metrics([[]], gold, threshold=0.5)
    assert m["hits@1"][0] == m["hit"][0] == m["f1"][0] == 0
    wrong_top = [[(103, 0.9), (101, 0.1)]]
    m = answer_metrics(wrong_top, gold, threshold=0.1)
    assert m["hits@1"][0] == 0 and m["hit"][0] == 1
    # F1: 0.667 at 1.0 ({101}), 0.5 at 0.5 ({101, 103}), 0.8 from 0.3 down (all three): the largest of those
    assert choose_threshold(ranked, gold) == 0.3
