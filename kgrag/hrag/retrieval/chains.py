"""The retriever's relation-chain prior: which relation chain a question asks for, and the triples that walk it.

A multi-hop question names a relation chain ("who acted in the films directed by the director of [X]":
directed_by forward, directed_by backward, starred_actors forward). The dense scorer ranks a triple from its own
features, so the third hop of a chain — far from the topic, its relation common — falls below closer
distractors and out of the strict top-K g_agent. The prior fixes that in two parts:

* :class:`ChainPrior` — a softmax over the relation chains of the train questions (labels read off the KG by
  :mod:`kgrag.hrag.retrieval.chain_labels`), from the masked question's sentence vector; trained by the marginal
  likelihood of each question's tied chains (:func:`train_chain_prior`, seconds on CPU).
* :class:`ChainWalker` — walks a chain from the topic entities through the CSR adjacency: forward frontiers (topics
  never re-entered), then backward pruning, so only triples on a *complete* walk remain (a walk that dies at hop
  2 keeps nothing).

The retriever's score of a triple becomes ``s(q, t) + chain_weight · P(chain)`` for the triples on the predicted
chains' walks (the best chain a triple lies on), and those triples join the question's candidates when PPR left
them out of G_retrieval: the strict top-K then holds the chain (:func:`chain_candidates`).

    prior = train_chain_prior(vectors, chains)                   # chains: QuestionChains of the train questions
    walker = ChainWalker(graph)
    triples = walker.triples([topic], prior.chains[0])           # the triple ids of chain 0's complete walks
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.chain_labels import QuestionChains
from kgrag.hrag.retrieval.questions import masked_text
from kgrag.progress import counted

if TYPE_CHECKING:  # torch tensors: ranking chains online never imports torch
    from kgrag.hrag.retrieval.g_agent import GAgentSplit

__all__ = ["ChainPrior", "ChainWalker", "train_chain_prior", "chain_candidates", "chain_text", "chains_held",
           "relation_focus", "shared_chains"]

_WORD = re.compile(r"\w+")


def chain_text(chain: Sequence[int], relations: Sequence[str]) -> str:
    """A chain of actions (``2r + reversed``, −1 padded) as ``directed_by> <directed_by starred_actors>``."""
    return " ".join(f"<{relations[a // 2]}" if a % 2 else f"{relations[a // 2]}>" for a in chain if a >= 0)


class ChainWalker:
    """Relation-chain walks over a graph from a topic set: each step gathers the frontier's edges from the CSR
    adjacency and keeps those of the step's relation, so a walk costs the edges it touches, not the graph."""

    def __init__(self, graph: CSRGraph) -> None:
        self.graph = graph

    def _step(self, nodes: np.ndarray, action: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(from, to, triple ids) of the edges leaving ``nodes`` by ``action`` (``2r``: head → tail of relation
        ``r``; ``2r + 1``: tail → head)."""
        owner, ids, other = self.graph.edges_of(nodes, "in" if action % 2 else "out")
        keep = self.graph.rel[ids] == action // 2
        return nodes[owner[keep]], other[keep], ids[keep]

    def frontiers(self, topics: Sequence[int], chain: Sequence[int]) -> list[np.ndarray]:
        """Sorted entity ids reached after each step (index 0: the topics); topics are never re-entered."""
        start = np.unique(np.asarray(list(topics), dtype=np.int64))
        out = [start]
        for action in (a for a in chain if a >= 0):
            _, dst, _ = self._step(out[-1], int(action))
            out.append(np.setdiff1d(np.unique(dst), start, assume_unique=True))
        return out

    def answers(self, topics: Sequence[int], chain: Sequence[int]) -> np.ndarray:
        """The entities a chain's walks end at (topics excluded), sorted."""
        return self.frontiers(topics, chain)[-1]

    def steps(self, topics: Sequence[int], chain: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per step of the chain, ``(from, to, triple ids)`` of the edges on its complete walks from ``topics``
        (forward frontiers, then backward pruning); empty when no walk completes."""
        actions = [int(a) for a in chain if a >= 0]
        reach = self.frontiers(topics, actions)
        if not actions or not reach[-1].size:
            return []
        alive = reach[-1]
        picked: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for step in range(len(actions) - 1, -1, -1):  # backward: keep edges from a live source to a live target
            src, dst, ids = self._step(reach[step], actions[step])
            keep = np.isin(dst, alive)
            picked.append((src[keep], dst[keep], ids[keep]))
            alive = np.unique(src[keep])
        return picked[::-1]

    def triples(self, topics: Sequence[int], chain: Sequence[int], budget: int | None = None) -> np.ndarray:
        """Triple ids on the chain's complete walks from ``topics``. With ``budget`` and more walk triples than
        that, a path-covering subset of at most ``budget``: one walk per end entity, reusing the walks already
        taken (:func:`_cover`), so every end entity kept is reachable from the topics inside it."""
        steps = self.steps(topics, chain)
        if not steps:
            return np.zeros(0, dtype=np.int64)
        ids = np.concatenate([s[2] for s in steps])
        if budget is None or ids.size <= budget:
            return ids
        return _cover(steps, budget)


def _cover(steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]], budget: int) -> np.ndarray:
    """At most ``budget`` triples of a chain's walks such that the end entities they reach are reached by a whole
    walk: end entities in id order, each joined by one walk back to the topics that prefers nodes already on a
    kept walk (so a walk costs 1–3 new triples); an end entity whose walk does not fit is left out."""
    into = []  # per step: node -> [(source, triple id)]
    for src, dst, ids in steps:
        table: dict[int, list[tuple[int, int]]] = {}
        for a, b, t in zip(src.tolist(), dst.tolist(), ids.tolist(), strict=True):
            table.setdefault(b, []).append((a, t))
        into.append(table)
    kept: list[int] = []
    taken: set[int] = set()
    on_walk = [set() for _ in steps]  # per step: nodes kept as that step's source
    for end in sorted(into[-1]):
        node, new = end, []
        for step in range(len(steps) - 1, -1, -1):
            options = into[step][node]
            source, triple = next(((a, t) for a, t in options if a in on_walk[step]), options[0])
            if triple not in taken:
                new.append((step, source, triple))
            node = source
        if len(kept) + len(new) > budget:
            continue
        for step, source, triple in new:
            kept.append(triple)
            taken.add(triple)
            on_walk[step].add(source)
    return np.asarray(kept, dtype=np.int64)


def _grams(text: str, n: int = 3) -> list[str]:
    words = _WORD.findall(masked_text(text).lower())
    return [" ".join(words[i : i + k]) for k in range(1, n + 1) for i in range(len(words) - k + 1)]


@dataclass
class ChainPrior:
    """``P(chain | question)`` over the train questions' chains (``chains`` (C, W) actions, −1 padded): a softmax
    regression on the masked question's word 1–3-grams (``vocabulary``, binary, L2-normalised) beside its
    sentence vector. The n-grams keep the word order that tells "written by the director of" from "directed by
    the writer of"; the vector covers wordings the train questions lack."""

    chains: np.ndarray  # (C, W) int64
    vocabulary: list[str]
    weight: np.ndarray  # (V + D, C) float32
    bias: np.ndarray  # (C,) float32

    def features(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        index = {g: j for j, g in enumerate(self.vocabulary)}
        grams = np.zeros((len(texts), len(self.vocabulary)), dtype=np.float32)
        for i, text in enumerate(texts):
            cols = [index[g] for g in set(_grams(text)) if g in index]
            if cols:
                grams[i, cols] = 1.0 / np.sqrt(len(cols))
        return np.concatenate([grams, np.asarray(vectors, dtype=np.float32)], axis=1)

    def probabilities(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        logits = self.features(texts, vectors) @ self.weight + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def top(self, texts: Sequence[str], vectors: np.ndarray, max_chains: int = 3,
            min_share: float = 0.05) -> list[list[tuple[int, float]]]:
        """Per question the most probable chains ``(row of chains, probability)``: at most ``max_chains``, each
        with at least ``min_share`` of the best one's probability."""
        p = self.probabilities(texts, vectors)
        k = min(max_chains, p.shape[1])
        best = np.argsort(-p, axis=1, kind="stable")[:, :k]
        out = []
        for row, cols in zip(p, best, strict=True):
            floor = min_share * row[cols[0]]
            out.append([(int(c), float(row[c])) for c in cols if row[c] >= floor])
        return out

    def save(self, path: Path) -> None:
        np.savez(path, chains=self.chains, vocabulary=np.array(self.vocabulary, dtype=str), weight=self.weight,
                 bias=self.bias)

    @classmethod
    def load(cls, path: Path) -> ChainPrior:
        with np.load(path) as z:
            return cls(z["chains"].astype(np.int64), [str(g) for g in z["vocabulary"]], z["weight"].astype(np.float32),
                       z["bias"].astype(np.float32))


def train_chain_prior(texts: Sequence[str], vectors: np.ndarray, labels: QuestionChains, steps: int = 300,
                      lr: float = 0.05, weight_decay: float = 1e-5, seed: int = 0) -> ChainPrior:
    """Fit :class:`ChainPrior` on questions' texts, sentence vectors (Q, D) and label chains (ties kept: the loss
    is ``−log Σ_{label chains} P(chain | q)``, averaged over questions); questions without a chain are left out.
    Questions sharing a masked wording share one feature row (MetaQA's 35k train questions have ~500).

    A question's tied chains its wording does not share are dropped (:func:`shared_chains`): in a big graph a
    walk through unrelated entities often reaches the same answers (a coincidence of the graph, not a way of
    asking: 23 tied chains per question, 12,669 distinct, inside 10M distractor triples; 1.5 and 106 without
    them), and each such chain would be a class of its own."""
    masked = [masked_text(t) for t in texts]
    labels = shared_chains(labels, masked)
    keys = sorted({tuple(int(a) for a in c) for i in range(len(labels)) for c in labels.of(i)})
    if not keys:
        raise ValueError("no question has a relation chain to learn from")
    chain_index = {k: j for j, k in enumerate(keys)}
    unique = list(dict.fromkeys(masked))
    row_of = {t: u for u, t in enumerate(unique)}
    first = {}
    for i, t in enumerate(masked):
        first.setdefault(t, i)
    question, row, target = [], [], []
    for i in range(len(labels)):
        for c in labels.of(i):
            question.append(i)
            row.append(row_of[masked[i]])
            target.append(chain_index[tuple(int(a) for a in c)])
    import torch  # training only: the agent ranks chains without torch

    vocabulary = sorted({g for t in unique for g in _grams(t)})
    prior = ChainPrior(np.zeros((0, 0), np.int64), vocabulary, np.zeros((0, 0), np.float32), np.zeros(0, np.float32))
    x = torch.from_numpy(prior.features(unique, np.asarray(vectors, np.float32)[[first[t] for t in unique]]))
    q, r, t = (torch.as_tensor(v, dtype=torch.long) for v in (question, row, target))
    used, position = torch.unique(q, return_inverse=True)
    torch.manual_seed(seed)
    linear = torch.nn.Linear(x.shape[1], len(keys))
    optimiser = torch.optim.Adam(linear.parameters(), lr=lr, weight_decay=weight_decay)
    for _ in range(steps):
        picked = linear(x).log_softmax(dim=1)[r, t]
        best = torch.full((used.numel(),), float("-inf")).scatter_reduce(0, position, picked.detach(), "amax")
        mass = torch.zeros(used.numel()).index_add(0, position, (picked - best[position]).exp())
        loss = -(mass.log() + best).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    width = max(len(k) for k in keys)
    chains = np.full((len(keys), width), -1, dtype=np.int64)
    for j, k in enumerate(keys):
        chains[j, : len(k)] = k
    return ChainPrior(chains, vocabulary, linear.weight.detach().numpy().T.copy(), linear.bias.detach().numpy().copy())


#: a question's tied chain is kept when at least this share of the questions of its wording that have the
#: wording's most common chain have it too
SHARED_SUPPORT = 0.5


def shared_chains(labels: QuestionChains, wordings: Sequence[str], keep: float = SHARED_SUPPORT) -> QuestionChains:
    """``labels`` with each question's tied chains cut to those its wording shares: a chain stays when the
    questions of the same (masked) wording that have it are at least ``keep`` × those that have the wording's
    best-supported chain among the question's. The questions of one wording ask one way (hundreds on MetaQA);
    a walk that reaches the same answers through unrelated entities of a big graph is a coincidence of a few
    of them (a chain ending in ``has_genre`` from any film set whose genres are just Drama), and a tie the
    wording does not say (a director who also wrote the film, in "written by" questions) is one of a few too.
    A wording with one question keeps its labels."""
    if len(wordings) != len(labels):
        raise ValueError("one wording per question")
    rows = [[tuple(int(a) for a in c) for c in labels.of(i)] for i in range(len(labels))]
    support: dict[tuple[str, tuple[int, ...]], int] = {}
    for wording, chains in zip(wordings, rows, strict=True):
        for c in set(chains):
            support[wording, c] = support.get((wording, c), 0) + 1
    kept = []
    for wording, chains in zip(wordings, rows, strict=True):
        best = max((support[wording, c] for c in chains), default=0)
        kept.append([c for c in chains if support[wording, c] >= keep * best])
    width = labels.chains.shape[1] if labels.chains.ndim == 2 else 1
    flat = np.array([c for chains in kept for c in chains], dtype=np.int64).reshape(-1, width)
    counts = np.array([len(chains) for chains in kept], dtype=np.int64)
    return QuestionChains(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), flat, labels.f1)


def relation_focus(prior: ChainPrior, texts: Sequence[str], vectors: np.ndarray, max_chains: int = 3,
                   min_share: float = 0.05) -> list[np.ndarray]:
    """Per question the relations on its most probable chains (:meth:`ChainPrior.top`), sorted: what a
    question-aware PPR walk follows (:meth:`~kgrag.hrag.retrieval.local_ppr.LocalPPR.push`'s relation weights)."""
    out = []
    for chosen in prior.top(texts, vectors, max_chains, min_share):
        actions = prior.chains[[c for c, _ in chosen]].ravel() if chosen else np.zeros(0, np.int64)
        out.append(np.unique(actions[actions >= 0] // 2))
    return out


def chain_candidates(walker: ChainWalker, prior: ChainPrior, texts: Sequence[str], vectors: np.ndarray,
                     topics: Sequence[Sequence[int]], budget: int, max_chains: int = 3,
                     min_share: float = 0.05) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per question ``(triple ids, P(chain))`` of the triples on its predicted chains' complete walks, at most
    ``budget`` in all (the most probable chain first; a chain over what is left keeps a path-covering subset):
    each triple once, with the probability of the most probable chain it lies on."""
    out = []
    chosen_chains = prior.top(texts, vectors, max_chains, min_share)
    for chosen, seeds in counted(zip(chosen_chains, topics, strict=True), "chain walks", "question", len(topics)):
        ids, probs = [], []
        ids, probs = [np.zeros(0, np.int64)], [np.zeros(0, np.float32)]
        left = budget
        for c, p in chosen:  # most probable first: a triple keeps the probability of the first chain it lies on
            if left <= 0:
                break
            found = walker.triples(seeds, prior.chains[c], left)
            found = found[~np.isin(found, np.concatenate(ids))]
            left -= found.size
            ids.append(found)
            probs.append(np.full(found.size, p, dtype=np.float32))
        out.append((np.concatenate(ids), np.concatenate(probs)))
    return out


def chains_held(split: GAgentSplit, labels: QuestionChains) -> np.ndarray:
    """Per question of ``split``: does one of its label chains (``labels`` aligned with the split), walked inside
    its g_agent from the topics (topics never re-entered), reach a gold answer — the chain is in g_agent."""
    out = np.zeros(len(split), dtype=bool)
    for i in range(len(split)):
        s = split.sample(i)
        head, rel, tail = s["edge_head"].numpy(), s["edge_relation"].numpy(), s["edge_tail"].numpy()
        nodes = s["node_ids"].numpy()
        topic = np.isin(nodes, nodes[s["topic_local"].numpy()])
        gold = np.zeros(nodes.size, dtype=bool)
        gold[s["answer_local"].numpy()] = True
        local_head, local_tail = np.searchsorted(nodes, head), np.searchsorted(nodes, tail)
        for chain in labels.of(i):
            reached = topic.copy()
            for a in (int(a) for a in chain if a >= 0):
                move = rel == a // 2
                src, dst = (local_tail, local_head) if a % 2 else (local_head, local_tail)
                nxt = np.zeros_like(reached)
                nxt[dst[move & reached[src]]] = True
                reached = nxt & ~topic
            if (reached & gold).any():
                out[i] = True
                break
    return out
