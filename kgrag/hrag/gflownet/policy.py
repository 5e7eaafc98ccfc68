"""The reasoning policy (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §4.2.1–4.2.2): a Transformer encoder over [CLS], the query and the pool.

Tokens: ``[CLS]``, the query (the mean of its masked question's token vectors), then one token per g_agent edge.
An edge token's content ``h_i`` mixes its relation (name vector + id embedding), the retriever's score of the edge
(System 1's relevance, standardised per question) and its head/tail entity name vectors; it is computed once per
question (:meth:`PathPolicy.embed_pool`), as are the per-hop readings ``q_t`` of the question's tokens. At step
``t`` the role-aware input is

    Z_i = h_i + e_type(role_i) + 1[i ∈ S_t] · e_order(position of i on the path, walk direction)

with roles CLS / Query / Context (selected evidence) / Candidate, plus on every edge token alike a step-``t`` map of
``relation ⊙ question`` (which relation the question asks for at hop ``t``; ``t`` is the path length, the same for
all tokens of a state), and on [CLS] a step-``t`` map of the question (whether it asks for more hops: Stop). Pool
tokens get no positional encoding, so the encoder (no positional encoding anywhere) is permutation-equivariant
over the pool: permuting the edges permutes their select logits and leaves Stop and ``log Z`` unchanged.

Heads. ``P_F`` factorises over the relation planner's groups (:mod:`~kgrag.hrag.gflownet.planner`): a candidate
``c`` walks relation ``r`` forward or backward, the planner's action ``a(c) = 2r + reversed``, and

    log P_F(c | S_t) ∝ log P_plan(a(c) | q, relations walked) + log softmax_{legal c' with a(c') = a(c)} ℓ(c')
    log P_F(Stop | S_t) ∝ log P_plan(Stop | …) + w_stop · h_CLS

where ``ℓ`` is the select head on the edge token, ``w_fwd·h_j`` (walk the edge as stored) or ``w_rev·h_j`` (walk it
backwards), plus ``w_s · s_j`` (System 1's standardised score, ``w_s`` learned from 1), laid out as the
environment's candidates ``2e`` / ``2e + 1``. The planner decides which relation the question asks for next; the
encoder decides among the edges of that relation (which film, which actor) and corrects Stop (``w_stop`` starts at
0). The masked softmax over the legal actions renormalises over the groups that have a legal candidate.
``log Z_θ(q)`` is an MLP on ``h_CLS`` at ``S_0``, and ``log F(S_t)`` (sub-trajectory balance) another MLP on
``h_CLS`` at ``S_t``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from kgrag.hrag.gflownet.data import PoolBatch
from kgrag.hrag.gflownet.env import PathState, masked_log_probs
from kgrag.hrag.gflownet.planner import RelationPlanner

__all__ = ["PathPolicy", "PolicyOutput", "PoolEmbedding", "CLS", "QUERY", "CONTEXT", "CANDIDATE"]

CLS, QUERY, CONTEXT, CANDIDATE = range(4)  # token roles (e_type)


@dataclass
class PoolEmbedding:
    edges: torch.Tensor  # (B, E, dim) content h_i of the edge tokens
    query: torch.Tensor  # (B, dim)
    padding: torch.Tensor  # (B, 2 + E) bool, True on padded edge tokens (key padding mask)
    relation: torch.Tensor  # (B, E, dim) the edge's relation embedding
    hop_query: torch.Tensor  # (B, max_steps + 1, dim) the question read for hop t (attention over its tokens)
    score: torch.Tensor  # (B, E) the retriever's standardised score of each edge
    relation_ids: torch.Tensor  # (B, E) the edge's relation id (the planner's actions)
    tokens: torch.Tensor  # (B, L, text_dim) the question's token vectors (the planner reads them)
    token_mask: torch.Tensor  # (B, L) bool

    def repeat(self, times: int) -> PoolEmbedding:
        return PoolEmbedding(*(x.repeat_interleave(times, dim=0) for x in (
            self.edges, self.query, self.padding, self.relation, self.hop_query, self.score, self.relation_ids,
            self.tokens, self.token_mask)))

    def index(self, rows: torch.Tensor) -> PoolEmbedding:
        return PoolEmbedding(self.edges[rows], self.query[rows], self.padding[rows], self.relation[rows],
                             self.hop_query[rows], self.score[rows], self.relation_ids[rows], self.tokens[rows],
                             self.token_mask[rows])


@dataclass
class PolicyOutput:
    select_logits: torch.Tensor  # (B, 2E) candidate logits, candidate 2e = edge e forward, 2e + 1 reversed
    stop_logit: torch.Tensor  # (B,)
    cls: torch.Tensor  # (B, dim) encoder output at [CLS]
    log_total: torch.Tensor  # (B,) log of the mass over every action, a planned relation missing here included


def _mlp(dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, 1))


class PathPolicy(nn.Module):
    """``relation_vectors`` (relations, text_dim): the relation name vectors, kept as a buffer (saved with the
    weights); ``PathPolicy(**policy.hparams)`` rebuilds the architecture for ``load_state_dict``."""

    def __init__(self, text_dim: int, num_relations: int, dim: int = 64, heads: int = 4, layers: int = 2,
                 ffn: int = 128, entity_dim: int = 16, max_steps: int = 4,
                 relation_vectors: torch.Tensor | None = None) -> None:
        super().__init__()
        self.hparams = {"text_dim": text_dim, "num_relations": num_relations, "dim": dim, "heads": heads,
                        "layers": layers, "ffn": ffn, "entity_dim": entity_dim, "max_steps": max_steps}
        vectors = torch.zeros((max(num_relations, 1), text_dim)) if relation_vectors is None else relation_vectors
        self.register_buffer("relation_vectors", torch.as_tensor(vectors, dtype=torch.float32).clone())
        self.relation_text = nn.Linear(text_dim, dim)
        self.relation_id = nn.Embedding(max(num_relations, 1), dim)
        self.entity = nn.Linear(text_dim, entity_dim) if entity_dim else None
        self.entity_mix = nn.Linear(2 * entity_dim, dim, bias=False) if entity_dim else None
        self.query = nn.Linear(text_dim, dim)  # question token vectors → width
        # per hop t a learned attention over the question's tokens reads the part that names hop t's relation;
        # r ⊙ q_t is then read alike on every pool token (no positional information), and q_t enters [CLS]
        self.hop_attention = nn.Parameter(torch.randn(max_steps + 1, dim) * dim**-0.5)
        self.query_relation = nn.Linear(dim, dim)  # W(r ⊙ q_t)
        self.cls_hop = nn.Linear(dim, dim)  # [CLS] at step t: does the question ask for more hops (Stop)
        self.score = nn.Linear(1, dim, bias=False)  # the retriever's (standardised) score of the edge
        self.cls = nn.Parameter(torch.zeros(dim))
        self.role = nn.Embedding(4, dim)
        self.order = nn.Embedding(2 * max_steps, dim)  # (position on the path, walked backwards)
        layer = nn.TransformerEncoderLayer(dim, heads, ffn, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.select = nn.Linear(dim, 2)
        # System 1's score as a prior on the select logits (learned weight, starts at 1): the untrained policy
        # already prefers the retriever's best adjacent edges, training corrects it
        self.score_prior = nn.Parameter(torch.ones(()))
        self.stop = nn.Linear(dim, 1)
        # the relation planner's log P_plan(next relation, direction | question, relations walked): the mass of
        # the candidates walking that relation that way, and of Stop
        self.planner = RelationPlanner(max(num_relations, 1), dim, text_dim)
        nn.init.zeros_(self.stop.weight)  # Stop starts as the planner's
        nn.init.zeros_(self.stop.bias)
        self.log_z = _mlp(dim)
        self.log_flow = _mlp(dim)

    def embed_pool(self, batch: PoolBatch) -> PoolEmbedding:
        """The per-question content of the tokens (no state in it): computed once, reused at every step."""
        tokens = self.query(batch.question)  # (B, L, dim)
        mask = batch.question_mask[..., None]  # (B, L, 1)
        query = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1)
        weights = (tokens @ self.hop_attention.T).masked_fill(~mask, float("-inf")).softmax(dim=1)  # (B, L, T)
        hop_query = weights.transpose(1, 2) @ tokens  # (B, T, dim)
        used, inverse = torch.unique(batch.relation, return_inverse=True)  # the pool's relations only, not all R
        relation = (self.relation_text(self.relation_vectors[used]) + self.relation_id.weight[used])[inverse]
        edges = relation + self.score(batch.score[..., None])
        if self.entity is not None:
            nodes = self.entity(batch.node_vectors)  # (B, N, entity_dim)
            ends = torch.cat([_gather_nodes(nodes, batch.head), _gather_nodes(nodes, batch.tail)], dim=-1)
            edges = edges + self.entity_mix(ends)
        b = len(batch)
        padding = torch.cat([torch.zeros((b, 2), dtype=torch.bool), ~batch.edge_valid], dim=1)
        return PoolEmbedding(edges, query, padding, relation, hop_query, batch.score, batch.relation, batch.question,
                             batch.question_mask)

    def forward(self, pooled: PoolEmbedding, state: PathState, legal: torch.Tensor | None = None) -> PolicyOutput:
        """Logits of the candidates and of Stop at ``state``; ``legal`` (B, C + 1) the legal actions (default: every
        real candidate), over which each relation-and-direction group is normalised."""
        b, e, dim = pooled.edges.shape
        on_path = state.edge_used[:, :e]
        role = torch.where(on_path, CONTEXT, CANDIDATE)
        t = state.length.clamp(max=pooled.hop_query.shape[1] - 1)
        q_t = pooled.hop_query[torch.arange(b), t]  # (B, dim)
        edges = pooled.edges + self.role(role) + self.query_relation(pooled.relation * q_t[:, None])
        order = (state.edge_step[:, :e].clamp(min=0) * 2 + state.edge_reversed[:, :e].long())
        order = order.clamp(max=self.order.num_embeddings - 1)
        edges = edges + self.order(order) * on_path[..., None]
        cls = (self.cls + self.role.weight[CLS] + self.cls_hop(q_t))[:, None]
        query = (pooled.query + self.role.weight[QUERY])[:, None]
        hidden = self.norm(self.encoder(torch.cat([cls, query, edges], dim=1), src_key_padding_mask=pooled.padding))
        raw = (self.select(hidden[:, 2:]) + self.score_prior * pooled.score[..., None]).reshape(b, 2 * e)
        groups = self.candidate_actions(pooled.relation_ids)
        allowed = (~pooled.padding[:, 2:]).repeat_interleave(2, dim=1) if legal is None else legal[:, :-1]
        plan = self.next_action(pooled, state).detach()  # (B, 2R + 1); the planner learns from its own loss
        select = plan.gather(1, groups) + _group_log_softmax(raw, groups, allowed, self.planner.stop)
        stop = plan[:, self.planner.stop] + self.stop(hidden[:, 0]).squeeze(-1)
        moves_mass = torch.log1p(-plan[:, self.planner.stop].exp().clamp(max=1 - 1e-6))
        return PolicyOutput(select, stop, hidden[:, 0], torch.logaddexp(moves_mass, stop))

    def plan(self, question: torch.Tensor, question_mask: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        """The planner's ``log P_plan`` (B, T + 1, 2R + 1) after each prefix of the actions ``prefix`` (B, T), for
        questions given by their token vectors (B, L, text_dim) and mask."""
        return self.planner(question, question_mask, prefix, self.relation_vectors)

    def next_action(self, pooled: PoolEmbedding, state: PathState) -> torch.Tensor:
        """(B, 2R + 1) ``log P_plan`` of the next action after the path of ``state``."""
        return self.plan_next(pooled.tokens, pooled.token_mask, pooled.relation_ids, state)

    def plan_next(self, tokens: torch.Tensor, token_mask: torch.Tensor, relation_ids: torch.Tensor,
                  state: PathState) -> torch.Tensor:
        """:meth:`next_action` from the question's token vectors (B, L, text_dim), their mask and the pool's edge
        relations (B, E) alone (no encoder: the planner reads no entity)."""
        b, e = relation_ids.shape
        width = self.order.num_embeddings // 2  # max_steps
        used = state.edge_used[:, :e]
        actions = torch.where(used, 2 * relation_ids + state.edge_reversed[:, :e].long(), -1)
        prefix = torch.full((b, width + 1), -1, dtype=torch.long, device=actions.device)
        prefix.scatter_(1, torch.where(used, state.edge_step[:, :e], width).clamp(max=width), actions)
        log_plan = self.plan(tokens, token_mask, prefix[:, :width])
        return log_plan[torch.arange(b), state.length.clamp(max=width)]

    @staticmethod
    def candidate_actions(relation_ids: torch.Tensor) -> torch.Tensor:
        """(B, E) edge relations → (B, 2E) the planner's action ``2r + reversed`` of each oriented candidate."""
        b = relation_ids.shape[0]
        return (2 * relation_ids[..., None] + torch.arange(2, device=relation_ids.device)).reshape(b, -1)

    def log_probs(self, pooled: PoolEmbedding, state: PathState, legal: torch.Tensor, rows: torch.Tensor,
                  renormalise: bool = True) -> tuple[torch.Tensor, PolicyOutput]:
        """Masked ``log P_F`` over ``[selects…, Stop]`` for every row, running the encoder on ``rows`` only (the
        others are finished: Stop alone, log-prob 0); the output covers ``rows``.

        ``renormalise=False`` (answer scoring) keeps the planner's mass on relations that have no legal candidate
        at this node out of the others: it is lost (a dead end), not re-spread onto relations the question does
        not ask for. Sampling and the TB loss use the renormalised ``P_F``."""
        out = self(pooled.index(rows), state.index(rows), legal[rows])
        log_p = torch.full(legal.shape, float("-inf"))
        log_p[:, -1] = 0.0
        if renormalise:
            log_p[rows] = masked_log_probs(out.select_logits, out.stop_logit, legal[rows])
        else:
            logits = torch.cat([out.select_logits, out.stop_logit[:, None]], dim=1)
            log_p[rows] = logits.masked_fill(~legal[rows], float("-inf")) - out.log_total[:, None]
        return log_p, out

    def initial_log_z(self, out: PolicyOutput) -> torch.Tensor:
        return self.log_z(out.cls).squeeze(-1)

    def state_log_flow(self, out: PolicyOutput) -> torch.Tensor:
        return self.log_flow(out.cls).squeeze(-1)


def _group_log_softmax(logits: torch.Tensor, groups: torch.Tensor, allowed: torch.Tensor,
                       num_groups: int) -> torch.Tensor:
    """(B, C) ``logits`` log-softmaxed within each group (``groups`` (B, C) in ``[0, num_groups)``) over the
    ``allowed`` candidates; the values at candidates not allowed are finite and meaningless (masked later)."""
    masked = logits.masked_fill(~allowed, float("-inf"))
    top = masked.max(dim=1, keepdim=True).values.clamp(min=-1e4).detach()
    sums = torch.zeros((logits.shape[0], num_groups), dtype=logits.dtype, device=logits.device)
    sums = sums.scatter_add(1, groups, (masked - top).exp())
    return logits - top - sums.gather(1, groups).clamp(min=1e-30).log()


def _gather_nodes(nodes: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(B, N, D) node rows at (B, E) local indices → (B, E, D)."""
    return nodes.gather(1, index[..., None].expand(-1, -1, nodes.shape[-1]))
