"""The planner's chain search (the fast answer path) against the encoder beam with chain completion, on a fixed
(seeded, untrained) policy and hand-made pools."""

from __future__ import annotations

import pytest
import torch
from test_gflownet_policy import ENTITIES, policy, question, tokens

from kgrag.hrag.gflownet.answers import answer_questions, beam_search, rank_answers
from kgrag.hrag.gflownet.chain_search import chain_paths, chain_search, rank_chains
from kgrag.hrag.gflownet.data import collate

# topic 0 -r0-> films 1, 2; each film -r1-> its own two people (3, 4 | 5, 6); topic 0 -r2-> 7, a dead end for r1
EDGES = [(0, 0, 1), (0, 0, 2), (1, 1, 3), (1, 1, 4), (2, 1, 5), (2, 1, 6), (0, 2, 7)]


def test_chain_search_scores_equal_the_exhaustive_beam_with_completion() -> None:
    """Two steps: every walk that turns back ends at the topic here. (At three, the chain search also counts
    0 -> 1 -> 3 -> 1, a walk back over the edge it came by — MetaQA's answer sets count those, the beam never
    reuses an edge.)"""
    q = question(EDGES, [0], [3, 4, 5, 6], 8)
    pol = policy(seed=3)
    batch = collate([q], tokens(1), ENTITIES)
    beam = rank_answers(beam_search(pol, batch, width=64, max_steps=2, min_share=0.0, lookahead=1), batch)[0]
    fast = rank_chains(chain_search(pol, batch, width=64, max_steps=2, min_share=0.0), batch)[0]
    assert {e for e, _ in beam} == {e for e, _ in fast}
    beam_scores, fast_scores = dict(beam), dict(fast)
    for entity, score in fast_scores.items():
        assert score == pytest.approx(beam_scores[entity], rel=1e-4, abs=1e-7), entity
    assert beam[0][1] == pytest.approx(fast[0][1], rel=1e-4)  # the same best score: the same answer, ties aside


def test_a_dead_end_keeps_no_chain_and_its_mass_is_lost() -> None:
    q = question(EDGES, [0], [3], 8)
    pol = policy(seed=1)
    batch = collate([q], tokens(1), ENTITIES)
    chains = chain_search(pol, batch, width=64, max_steps=3, min_share=0.0)[0]
    r0, r1, r2 = 0, 2, 4  # forward actions 2r
    found = {c.actions: c for c in chains}
    assert (r2, r1) not in found  # node 7 has no r1 edge
    assert sorted(found[(r0, r1)].reached.tolist()) == [3, 4, 5, 6]
    with torch.no_grad():
        plan = pol.plan(batch.question, batch.question_mask, torch.tensor([[r0, r1, -1]]))[0].exp()
    stop = pol.planner.stop
    expected = float(plan[0, r0] * plan[1, r1] * plan[2, stop])  # P_plan(r0, r1, Stop): no renormalisation
    assert found[(r0, r1)].probability == pytest.approx(expected, rel=1e-5)
    assert sum(c.probability for c in chains) < 1.0


def test_ties_break_by_the_raw_edge_score_and_paths_walk_back_to_the_topic() -> None:
    q = question(EDGES, [0], [3, 4], 8)
    pol = policy(seed=2)
    batch = collate([q], tokens(1), ENTITIES)
    raw = torch.zeros(batch.relation.shape)
    raw[0, : q.scores.numel()] = torch.tensor([0.0, 0.0, 1.0, 3.0, 2.0, 0.5, 0.0])  # person 4 has the best edge
    chains = chain_search(pol, batch, width=64, max_steps=3, min_share=0.0, edge_scores=raw)
    ranked = rank_chains(chains, batch)[0]
    two_hop = [c for c in chains[0] if c.actions == (0, 2)][0]
    people = [e for e, s in ranked if s == pytest.approx(two_hop.probability) and e - 100 in (3, 4, 5, 6)]
    assert people[:4] == [104, 105, 103, 106]  # equal chain mass: by the raw score of the edge into each
    walk = chain_paths(chains[0], batch, 0, 104, limit=1)[0]
    edges = [c // 2 for c in walk.candidates]
    assert [EDGES[e] for e in edges] == [(0, 0, 1), (1, 1, 4)] and walk.terminal == 4


def test_answer_questions_runs_both_reasoners_on_a_batch() -> None:
    qs = [question(EDGES, [0], [3, 4, 5, 6], 8), question(EDGES[:3], [0], [3], 8)]
    pol = policy(seed=4)
    for reasoner in ("planner", "beam"):
        ranked, found = answer_questions(pol, qs, tokens(2), ENTITIES, width=8, max_steps=3, batch_size=1,
                                         reasoner=reasoner)
        assert len(ranked) == len(found) == 2 and all(ranked)
        assert all(100 not in {e for e, _ in r} for r in ranked)  # the topic is never an answer
