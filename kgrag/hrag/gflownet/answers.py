"""Answers without an LLM: beam search over the policy's paths, terminal entities ranked by path probability.

    found = beam_search(policy, batch, width=16, max_steps=4)       # every path that stopped, with its probability
    ranked = rank_answers(found, batch, exclude_topics=True)         # per question: [(entity id, score), …] best first
    scores = answer_metrics(ranked, gold, threshold=0.5)             # hits@1 / hit / f1 per question

Beam search keeps, per question, ``width`` partial paths: of the ``lookahead · width`` most probable extensions,
those whose next step keeps the most of the planner's mass (a path into a node that lacks the planned next
relation loses it there); at every step each kept path also ends (Stop) with probability
``P(path) · P_F(Stop | path)``. Path probabilities are not renormalised over the legal actions: the mass the
planner puts on a relation that has no edge at a node is lost there, not re-spread onto the relations present
(``PathPolicy.log_probs(renormalise=False)``). An entity's score is the summed probability of the found paths
ending at it. The predicted set is every entity scoring at least ``threshold`` × the top score
(``threshold`` chosen on validation: :func:`choose_threshold`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from kgrag.hrag.gflownet.chain_search import chain_paths, chain_search, pool_frontiers, rank_chains
from kgrag.hrag.gflownet.data import PoolBatch, QuestionGraph, collate
from kgrag.hrag.gflownet.env import CandidatePool, PathState, initial_state, legal_actions, step
from kgrag.hrag.gflownet.found import FoundPath
from kgrag.hrag.gflownet.policy import PathPolicy, PoolEmbedding
from kgrag.hrag.retrieval.text import QuestionTokens
from kgrag.progress import counted

__all__ = ["FoundPath", "beam_search", "answer_questions", "rank_answers", "answer_metrics", "choose_threshold", "summarise",
           "THRESHOLDS"]

THRESHOLDS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


@torch.no_grad()
def beam_search(policy: PathPolicy, batch: PoolBatch, width: int, max_steps: int, min_share: float = 1e-9,
                lookahead: int = 8) -> list[list[FoundPath]]:
    """Per question of ``batch``, the paths that stopped within the beam, most probable first. A path kept with
    less than ``min_share`` of its question's most probable one is dropped instead (it cannot move the ranking,
    and a confident planner leaves many such: the policy is not run on them).

    ``lookahead`` > 1: the beam keeps not the ``width`` most probable extended paths but, of the ``lookahead ·
    width`` most probable, the ``width`` with the most probability that can still go on or end one step further
    (:func:`continuing_mass`): a path into a dead end (the planned next relation has no edge at its node inside
    g_agent: its mass is lost there) gives its place to one that goes on. The paths' probabilities are unchanged.
    """
    b, c = len(batch), batch.pool.size
    rows = batch.repeat(width)
    pooled = policy.embed_pool(batch).repeat(width)
    state = initial_state(rows.pool)
    beam_logp = torch.full((b, width), float("-inf"))
    beam_logp[:, 0] = 0.0  # one live path per question at the start
    history = torch.full((b * width, max_steps), -1, dtype=torch.long)
    found: list[list[FoundPath]] = [[] for _ in range(b)]
    for t in range(max_steps + 1):
        flat_logp = beam_logp.view(-1)
        legal = legal_actions(rows.pool, state, max_steps)
        live_rows = torch.nonzero(torch.isfinite(flat_logp)).flatten()  # at max_steps Stop alone is legal, yet
        log_p = policy.log_probs(pooled, state, legal, live_rows, renormalise=False)[0]  # a plan may want more
        log_p = log_p.view(b, width, c + 1)
        ends = (beam_logp + log_p[..., c]).view(-1)
        live = torch.isfinite(ends) & (state.length > 0)
        for r in torch.nonzero(live).flatten().tolist():
            n = int(state.length[r])
            found[r // width].append(FoundPath(r // width, history[r, :n].tolist(), int(state.current[r]),
                                               float(ends[r].exp())))
        if t == max_steps or c == 0:
            break
        grow = (beam_logp[..., None] + log_p[..., :c]).view(b, width * c)
        top, flat = grow.topk(min(width * max(lookahead, 1), width * c), dim=1)  # width · c ≥ width: c ≥ 1
        parent, candidate = (torch.arange(b)[:, None] * width + flat // c).view(-1), (flat % c).view(-1)
        pools = rows.pool.index(parent)
        children = step(pools, state.index(parent), candidate)
        if top.shape[1] > width:
            ahead = continuing_mass(policy, pools, pooled, parent, candidate, children, max_steps)
            keep = (top + ahead.view(b, -1)).masked_fill(~torch.isfinite(top), float("-inf")).topk(width, dim=1)[1]
            chosen = (torch.arange(b)[:, None] * top.shape[1] + keep).view(-1)
            top, flat = top.gather(1, keep), flat.gather(1, keep)
            children, parent, candidate = children.index(chosen), parent[chosen], candidate[chosen]
        if min_share > 0:
            top = top.masked_fill(top < top.max(dim=1, keepdim=True)[0] + math.log(min_share), float("-inf"))
        if not torch.isfinite(top).any():
            break
        state = children
        history = history[parent]
        history[:, t] = candidate
        beam_logp = top
    for paths in found:
        paths.sort(key=lambda p: -p.probability)
    return found


def continuing_mass(policy: PathPolicy, pool: CandidatePool, pooled: PoolEmbedding, parent: torch.Tensor,
                    candidate: torch.Tensor, state: PathState, max_steps: int) -> torch.Tensor:
    """(N,) log of the planner's mass, after each path of ``state`` (its row ``parent`` of ``pooled`` extended by
    ``candidate``; ``pool`` one row per path), on Stop and on the next relations that have a legal candidate at
    the path's end. The planner reads only the relations walked, so the paths that extend one row by the same
    relation share one planner call."""
    relation_ids = pooled.relation_ids[parent]
    actions = PathPolicy.candidate_actions(relation_ids)  # (N, C) the planner's action of every candidate
    stop = policy.planner.stop
    legal = legal_actions(pool, state, max_steps)[:, :-1]
    present = torch.zeros((len(parent), stop + 1)).scatter_add_(1, actions, legal.float()) > 0
    present[:, stop] = True
    action = actions.gather(1, candidate[:, None]).squeeze(1)  # the step that made each path
    unique, inverse = torch.unique(parent * (stop + 1) + action, return_inverse=True)
    first = torch.full((unique.numel(),), len(parent), dtype=torch.long).scatter_reduce(
        0, inverse, torch.arange(len(parent)), "amin")
    plan = policy.plan_next(pooled.tokens[parent[first]], pooled.token_mask[parent[first]], relation_ids[first],
                            state.index(first))[inverse]
    return plan.masked_fill(~present, float("-inf")).logsumexp(dim=1)


def rank_answers(found: Sequence[Sequence[FoundPath]], batch: PoolBatch, exclude_topics: bool = True,
                 complete: bool = True) -> list[list[tuple[int, float]]]:
    """Per question: ``(global entity id, score)`` best first (ties: the larger beam score, then the smaller id).

    Without ``complete`` an entity's score is the summed probability of the found paths ending at it (its beam
    score). With ``complete`` (chain completion) the found paths are grouped by their relation chain (the
    sequence of relations and directions walked); a chain's mass is its paths' summed probability, and every
    entity the chain reaches inside the pool — walked from the topics, topics never re-entered — scores the
    chain's mass (summed over chains): the beam finds which chain the question asks for, the walk gives the whole
    answer set (a beam of 16 paths cannot hold a 40-answer set)."""
    ranked = []
    actions = PathPolicy.candidate_actions(batch.relation) if complete else None
    for i, paths in enumerate(found):
        beam: dict[int, float] = {}
        for p in paths:
            if exclude_topics and bool(batch.pool.is_topic[i, p.terminal]):
                continue
            entity = int(batch.node_ids[i, p.terminal])
            beam[entity] = beam.get(entity, 0.0) + p.probability
        scores = dict(beam)
        if complete and paths:
            scores = _completed(paths, batch, actions, i) or scores
        ranked.append(sorted(scores.items(), key=lambda kv: (-kv[1], -beam.get(kv[0], 0.0), kv[0])))
    return ranked


def _completed(paths: Sequence[FoundPath], batch: PoolBatch, actions: torch.Tensor, row: int) -> dict[int, float]:
    """Chain completion of one question (see :func:`rank_answers`): entity → summed mass of the chains reaching
    it inside the pool."""
    pool = batch.pool
    valid = pool.valid[row].numpy()
    src, dst, act = pool.head[row].numpy(), pool.tail[row].numpy(), actions[row].numpy()
    topic = pool.is_topic[row].numpy()
    node_ids = batch.node_ids[row].numpy()
    mass: dict[tuple[int, ...], float] = {}
    for p in paths:
        chain = tuple(int(actions[row, c]) for c in p.candidates)
        mass[chain] = mass.get(chain, 0.0) + p.probability
    scores: dict[int, float] = {}
    for chain, m in mass.items():
        reached = pool_frontiers(valid, act, src, dst, topic, chain)[-1]
        for local in np.flatnonzero(reached).tolist():
            entity = int(node_ids[local])
            scores[entity] = scores.get(entity, 0.0) + m
    return scores


def predicted_set(ranked: Sequence[tuple[int, float]], threshold: float) -> list[int]:
    if not ranked:
        return []
    floor = threshold * ranked[0][1]
    return [e for e, s in ranked if s >= floor]


def answer_metrics(ranked: Sequence[Sequence[tuple[int, float]]], gold: Sequence[set[int]],
                   threshold: float) -> dict[str, np.ndarray]:
    """Per question: ``hits@1`` (the top answer is gold), ``hit`` (some predicted answer is gold), ``f1`` of the
    predicted set against the whole gold set; a question without a prediction scores 0 on all three."""
    hits1, hit, f1 = (np.zeros(len(gold)) for _ in range(3))
    for i, (answers, truth) in enumerate(zip(ranked, gold, strict=True)):
        predicted = set(predicted_set(answers, threshold))
        if not predicted:
            continue
        hits1[i] = answers[0][0] in truth
        common = len(predicted & truth)
        hit[i] = common > 0
        if common:
            precision, recall = common / len(predicted), common / len(truth)
            f1[i] = 2 * precision * recall / (precision + recall)
    return {"hits@1": hits1, "hit": hit, "f1": f1}


def choose_threshold(ranked: Sequence[Sequence[tuple[int, float]]], gold: Sequence[set[int]],
                     grid: Sequence[float] = THRESHOLDS) -> float:
    """The relative threshold with the best mean F1 (ties: the larger threshold)."""
    best = max(grid, key=lambda t: (float(answer_metrics(ranked, gold, t)["f1"].mean()), t))
    return float(best)


def summarise(metrics: dict[str, np.ndarray], hops: Sequence[int]) -> dict[str, dict[str, float | int]]:
    """Mean of each metric per hop and over ``all``, with ``n``."""
    hops = np.asarray(hops)
    rows = {f"{h}-hop": hops == h for h in sorted(set(hops.tolist()))}
    rows["all"] = np.ones(hops.size, dtype=bool)
    return {name: {"n": int(mask.sum()), **{k: float(v[mask].mean()) if mask.any() else 0.0
                                            for k, v in metrics.items()}} for name, mask in rows.items()}


def answer_questions(policy: PathPolicy, questions: Sequence[QuestionGraph], tokens: QuestionTokens,
                     entity_vectors: np.ndarray, width: int, max_steps: int, exclude_topics: bool = True,
                     batch_size: int = 64, lookahead: int = 8, complete: bool = True,
                     reasoner: str = "beam", evidence: int = 3) -> tuple[list[list[tuple[int, float]]],
                                                                          list[list[FoundPath]]]:
    """Ranked answers and found paths of every question, in batches (found paths index rows of their batch).

    ``reasoner``: ``"beam"`` — the policy's beam over paths (:func:`beam_search`, the encoder at every step);
    ``"planner"`` — the planner's beam over relation chains walked in the pool
    (:func:`~kgrag.hrag.gflownet.chain_search.chain_search`, no encoder), its found paths one walk per chain for
    each of the ``evidence`` best answers."""
    ranked: list[list[tuple[int, float]]] = []
    found: list[list[FoundPath]] = []
    policy.eval()
    for lo in counted(range(0, len(questions), batch_size), "GFlowNet answers", "batch"):
        batch = collate(questions[lo : lo + batch_size], tokens[lo : lo + batch_size], entity_vectors)
        batch = batch.to(policy.relation_vectors.device)
        if reasoner == "planner":
            part_questions = questions[lo : lo + batch_size]
            raw = torch.zeros(batch.relation.shape)
            for i, q in enumerate(part_questions):
                raw[i, : q.scores.numel()] = q.scores
            chains = chain_search(policy, batch, width, max_steps, edge_scores=raw)
            part = rank_chains(chains, batch)
            ranked.extend(part)
            found.extend([p for e, _ in r[:evidence] for p in chain_paths(c, batch, i, e, limit=1)]
                         for i, (c, r) in enumerate(zip(chains, part, strict=True)))
            continue
        paths = beam_search(policy, batch, width, max_steps, lookahead=lookahead)
        ranked.extend(rank_answers(paths, batch, exclude_topics, complete))
        found.extend(paths)
    return ranked, found
