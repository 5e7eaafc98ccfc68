"""Fast answering with the policy's relation planner alone: a beam over relation chains walked inside g_agent.

The policy's ``P_F`` factorises into the planner's ``P_plan(next relation and direction | question, relations
walked)`` and the encoder's choice among the edges of that relation (:mod:`~kgrag.hrag.gflownet.policy`). With
chain completion the answer set is every entity a chain reaches, so the within-relation choice only breaks ties;
this search drops the encoder (the per-step Transformer over the pool, the cost of :func:`answers.beam_search`)
and keeps the planner:

    chains = chain_search(policy, batch, width=8, max_steps=3)      # per question: [FoundChain, …] best first
    ranked = rank_chains(chains, batch)                              # [(entity id, score), …] as rank_answers

A beam over action prefixes, one frontier (a set of pool nodes) per prefix. At each step an action with no
candidate edge from the frontier is a dead end: its planner mass is lost, not re-spread (as the encoder beam's
``renormalise=False``). A prefix that stops is a found chain: its probability is ``P_plan(actions, Stop)``, the
entities it reaches (topics never re-entered, as :class:`~kgrag.hrag.retrieval.chains.ChainWalker`) score it, summed
over chains. Ties (a chain's answers all score its mass) break, one hop from the topics, by the policy's select
logit of the edge at the start state (the encoder's preference, as the beam's path probability breaks them; one
encoder pass per question), farther by the best raw retriever score among the chain's last-hop edges into the
entity, then by entity id. Every operation is a batched tensor op over the questions'
prefixes; the planner runs once per step on all live prefixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kgrag.hrag.gflownet.data import PoolBatch
from kgrag.hrag.gflownet.env import initial_state
from kgrag.hrag.gflownet.found import FoundPath
from kgrag.hrag.gflownet.policy import PathPolicy

__all__ = ["FoundChain", "chain_search", "rank_chains", "chain_paths", "pool_frontiers"]


@dataclass
class FoundChain:
    actions: tuple[int, ...]  # planner actions 2r + reversed
    probability: float
    reached: np.ndarray  # local nodes the chain ends at (topics excluded)
    tie: np.ndarray  # aligned with ``reached``: the best retriever score of a last-hop edge into it


@torch.no_grad()
def chain_search(policy: PathPolicy, batch: PoolBatch, width: int = 8, max_steps: int = 3,
                 min_share: float = 1e-6, edge_scores: torch.Tensor | None = None,
                 first_hop_encoder: bool = True) -> list[list[FoundChain]]:
    """Per question of ``batch`` the chains that stopped within the beam, most probable first. The beam is dense:
    ``width`` prefixes per question (row ``q · width + k``), an empty slot at log-probability −inf.
    ``edge_scores`` (B, E): the retriever's raw edge scores for the ties (default: the batch's standardised ones,
    clipped, which flatten the chain prior's boosted edges into ties). With ``first_hop_encoder`` the ties of the
    entities one hop from the topics break as the encoder beam's would: by the policy's select logit of the edge
    at the start state (one encoder pass per question, not one per beam row and step)."""
    b, n = batch.pool.is_topic.shape
    stop, inf = policy.planner.stop, float("-inf")
    q = torch.arange(b).repeat_interleave(width)  # (R,) each beam row's question
    actions = PathPolicy.candidate_actions(batch.relation)[q]  # (R, C)
    valid = batch.pool.valid[q]
    src, dst = batch.pool.head.clamp(min=0)[q], batch.pool.tail.clamp(min=0)[q]
    score = (batch.score if edge_scores is None else edge_scores).repeat_interleave(2, dim=1)[q]  # per candidate
    first = score
    if first_hop_encoder:
        start = policy(policy.embed_pool(batch), initial_state(batch.pool)).select_logits  # (B, C)
        first = start.masked_fill(~batch.pool.valid, inf)[q]
    topic = batch.pool.is_topic[q]
    planner, relations = policy.planner, policy.relation_vectors
    read, mask = planner.read(batch.question)[q], batch.question_mask[q]  # the question read once
    state = torch.zeros((1, b * width, planner.gru.hidden_size))
    prefix = torch.full((b * width, max_steps), -1, dtype=torch.long)
    logp = torch.full((b, width), inf)
    logp[:, 0] = 0.0  # one live prefix per question at the start
    frontier, tie = topic.clone(), torch.zeros((b * width, n))
    found: list[list[FoundChain]] = [[] for _ in range(b)]
    for t in range(max_steps + 1):
        flat_logp = logp.view(-1)
        live = torch.nonzero(torch.isfinite(flat_logp)).flatten()  # the planner runs on live prefixes only
        plan = torch.full((b * width, stop + 1), inf)
        last = prefix[live, t - 1] if t > 0 else None
        plan[live], state[:, live] = planner.step(read[live], mask[live], last, state[:, live].contiguous(),
                                                  relations)
        if t > 0:  # every live prefix may stop here: a found chain
            ends = flat_logp + plan[:, stop]
            for r in torch.nonzero(torch.isfinite(ends)).flatten().tolist():
                reached = torch.nonzero(frontier[r]).flatten()
                if reached.numel():
                    found[r // width].append(FoundChain(tuple(prefix[r, :t].tolist()), float(ends[r].exp()),
                                                        reached.numpy(), tie[r, reached].numpy()))
        if t == max_steps:
            break
        out = valid & frontier.gather(1, src)  # candidates leaving the frontier
        present = torch.zeros(plan.shape).scatter_add_(1, actions, out.float()) > 0  # actions that can move
        grow = (flat_logp[:, None] + plan).masked_fill(~present, inf)
        grow[:, stop] = inf
        a = grow.shape[1]
        top, pick = grow.view(b, width * a).topk(width, dim=1)
        if min_share > 0:
            top = top.masked_fill(top < top.max(dim=1, keepdim=True)[0] + float(np.log(min_share)), inf)
        if not torch.isfinite(top).any():
            break
        parent = (torch.arange(b)[:, None] * width + pick // a).view(-1)
        action = (pick % a).view(-1)
        moves = (actions == action[:, None]) & valid & frontier[parent].gather(1, src)
        frontier = (torch.zeros((b * width, n)).scatter_add_(1, dst, moves.float()) > 0) & ~topic
        tie = torch.full((b * width, n), inf).scatter_reduce(1, dst, (first if t == 0 else score)
                                                             .masked_fill(~moves, inf), "amax")
        state = state[:, parent]
        prefix = prefix[parent].clone()
        prefix[:, t] = action
        logp = top
    for chains in found:
        chains.sort(key=lambda c: -c.probability)
    return found


def rank_chains(found: Sequence[Sequence[FoundChain]], batch: PoolBatch) -> list[list[tuple[int, float]]]:
    """Per question ``(global entity id, score)`` best first: an entity scores the summed probability of the
    chains reaching it; ties break by the retriever score of its last-hop edge, then the smaller id."""
    ranked = []
    for i, chains in enumerate(found):
        scores: dict[int, float] = {}
        ties: dict[int, float] = {}
        node_ids = batch.node_ids[i].numpy()
        for c in chains:
            for local, tie in zip(c.reached.tolist(), c.tie.tolist(), strict=True):
                entity = int(node_ids[local])
                scores[entity] = scores.get(entity, 0.0) + c.probability
                ties[entity] = max(ties.get(entity, float("-inf")), tie)
        ranked.append(sorted(scores.items(), key=lambda kv: (-kv[1], -ties[kv[0]], kv[0])))
    return ranked


def pool_frontiers(valid: np.ndarray, act: np.ndarray, src: np.ndarray, dst: np.ndarray, topic: np.ndarray,
                   chain: Sequence[int]) -> list[np.ndarray]:
    """One question's pool walked along ``chain``: the boolean node sets after each step (index 0: the topics),
    topics never re-entered; ``valid``/``act``/``src``/``dst`` per oriented candidate."""
    layers = [topic.copy()]
    for a in chain:
        nxt = np.zeros_like(topic)
        nxt[dst[valid & (act == a) & layers[-1][src]]] = True
        layers.append(nxt & ~topic)
    return layers


def chain_paths(chains: Sequence[FoundChain], batch: PoolBatch, row: int, entity: int,
                limit: int = 3) -> list[FoundPath]:
    """Up to ``limit`` walks (as :class:`FoundPath`, the chain's probability each) of the found chains that end at
    global ``entity``: the evidence of an answer, walked back from it layer by layer."""
    pool = batch.pool
    valid = pool.valid[row].numpy()
    src, dst = pool.head[row].numpy(), pool.tail[row].numpy()
    act = PathPolicy.candidate_actions(batch.relation[row : row + 1])[0].numpy()
    topic = pool.is_topic[row].numpy()
    local = np.flatnonzero(batch.node_ids[row].numpy() == entity)
    out: list[FoundPath] = []
    for chain in chains:
        if not local.size or local[0] not in set(chain.reached.tolist()):
            continue
        layers = pool_frontiers(valid, act, src, dst, topic, chain.actions)  # then walk back through them
        node, walk = int(local[0]), []
        for t in range(len(chain.actions), 0, -1):
            options = np.flatnonzero(valid & (act == chain.actions[t - 1]) & (dst == node) & layers[t - 1][src])
            if not options.size:
                break
            walk.append(int(options[0]))
            node = int(src[options[0]])
        if len(walk) == len(chain.actions):
            out.append(FoundPath(row, walk[::-1], int(local[0]), chain.probability))
        if len(out) >= limit:
            break
    return out
