"""Relation-chain labels: each train question's relation chain, read off the whole KG (the chain prior's and the
relation planner's training labels).

A question's chain is the action sequence (``2·relation + reversed``, the planner's alphabet) that, walked from its
topic entities over the full graph, reaches its gold answer set best (F1 of the reached entities, topics left out):

    chains = best_chains(graph, topics, answers, hops, max_steps=3)     # QuestionChains, one row set per question

Reading chains off the KG rather than off g_agent's shortest GT walks matters twice. g_agent is built for a few
thousand train questions while every train question has a chain; and a shortest walk is often a shortcut (a 3-hop
question whose answer is also one hop from the topic), a wrong label for the question's wording. A known hop count
restricts the chains to that length; otherwise every length up to ``max_steps`` competes and the shorter wins a
tie. Chains tied at the best F1 are all kept (a director who also wrote the film): the planner sees them in
proportion, and across the questions of one wording the chain they share wins.

Per question, depth-first over the actions that leave each frontier (one gather of the frontier's edges from the
CSR adjacency, grouped by action), so the cost is the walked frontiers' edges, never the graph's size; a branch
whose frontier has more than :data:`WALK_BUDGET` edges ends there (past a hub no chain can match an answer set).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.graph.csr import CSRGraph, in_sorted
from kgrag.hrag.retrieval.resumable import Parts
from kgrag.progress import counted, counter

__all__ = ["QuestionChains", "question_chains", "best_chains", "cached_chains", "WALK_BUDGET"]


@dataclass
class QuestionChains:
    """Per question, its best chains: ``chains[offsets[i]:offsets[i + 1]]`` (−1 padded rows) with F1 ``f1[i]``;
    a question whose walks reach no answer has none."""

    offsets: np.ndarray  # (Q + 1,) int64
    chains: np.ndarray  # (C, max_steps) int64, −1 padded
    f1: np.ndarray  # (Q,) float32

    def __len__(self) -> int:
        return int(self.f1.shape[0])

    def of(self, i: int) -> np.ndarray:
        return self.chains[self.offsets[i] : self.offsets[i + 1]]

    def save(self, path: Path) -> None:
        np.savez_compressed(path, offsets=self.offsets, chains=self.chains, f1=self.f1)

    @classmethod
    def load(cls, path: Path) -> QuestionChains:
        with np.load(path) as z:
            return cls(z["offsets"], z["chains"], z["f1"])

    @classmethod
    def concat(cls, parts: Sequence[QuestionChains], max_steps: int) -> QuestionChains:
        """The questions of ``parts`` in order, as one set."""
        counts = np.concatenate([np.diff(p.offsets) for p in parts]) if parts else np.zeros(0, np.int64)
        chains = np.concatenate([p.chains for p in parts]) if parts else np.zeros((0, max_steps), np.int64)
        f1 = np.concatenate([p.f1 for p in parts]) if parts else np.zeros(0, np.float32)
        return cls(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), chains, f1)


#: a frontier whose edges exceed this (or 100 × the question's answers, if more) is not walked further: past a
#: hub the reached set is far larger than any answer set (the chain's F1 ~ 0), and the walk would cost the hub's
#: neighbourhood (in a large graph: most of the graph)
WALK_BUDGET = 200_000


def _steps(graph: CSRGraph, frontier: np.ndarray, within: np.ndarray | None = None) -> list[tuple[int, np.ndarray]]:
    """``(action, reached entities)`` for every action leaving ``frontier`` (sorted unique), actions ascending;
    with ``within`` (sorted) only the actions that reach one of its nodes. One gather, grouped by sorting."""
    _, out_ids, out_other = graph.edges_of(frontier, "out")
    _, in_ids, in_other = graph.edges_of(frontier, "in")
    actions = np.concatenate([graph.rel[out_ids].astype(np.int64) * 2, graph.rel[in_ids].astype(np.int64) * 2 + 1])
    others = np.concatenate([out_other, in_other])
    if not actions.size:
        return []
    order = np.lexsort((others, actions))
    actions, others = actions[order], others[order]
    starts = np.flatnonzero(np.concatenate([[True], actions[1:] != actions[:-1]]))
    stops = np.append(starts[1:], actions.size)
    if within is not None:
        keep = np.logical_or.reduceat(in_sorted(others, within), starts)
        starts, stops = starts[keep], stops[keep]
    fresh = np.concatenate([[True], (others[1:] != others[:-1]) | (actions[1:] != actions[:-1])])
    return [(int(actions[a]), others[a:b][fresh[a:b]]) for a, b in zip(starts.tolist(), stops.tolist(), strict=True)]


def _near_answers(graph: CSRGraph, gold: np.ndarray, budget: int) -> list[np.ndarray | None]:
    """Sorted nodes within 0, 1, 2 hops of the answers (``None`` where gathering them would pass ``budget``
    edges): a branch whose frontier has none of the nodes within k hops cannot reach an answer in k steps."""
    near: list[np.ndarray | None] = [gold]
    for _ in range(2):
        last = near[-1]
        if last is None or int(graph.degree[last].sum()) > budget:
            near.append(None)
            continue
        near.append(np.union1d(last, graph.edges_of(last)[2]))
    return near


def question_chains(graph: CSRGraph, topics: Sequence[int], answers: Sequence[int], length: int,
                    max_steps: int) -> list[tuple[tuple[int, ...], float]]:
    """Every chain from ``topics`` that reaches an answer, with its F1: the chains of exactly ``length`` actions
    (``length`` 0: every length up to ``max_steps``), depth-first in action order, walked through the adjacency.
    A branch is cut when its frontier has no node within its remaining steps of an answer (it could reach none),
    or when its frontier has more than :data:`WALK_BUDGET` edges; so the cost is a few frontiers' edges."""
    start = np.unique(np.asarray(topics, dtype=np.int64))
    gold = np.unique(np.asarray(answers, dtype=np.int64))
    budget = max(WALK_BUDGET, 100 * gold.size)
    degree = graph.degree
    near = _near_answers(graph, gold, 5 * budget)
    last = length or max_steps
    found: list[tuple[tuple[int, ...], float]] = []

    def expand(frontier: np.ndarray, prefix: tuple[int, ...]) -> None:
        if prefix and (length == 0 or len(prefix) == length):
            reached = np.setdiff1d(frontier, start, assume_unique=True)
            hits = int(np.isin(reached, gold, assume_unique=True).sum())
            if hits:
                found.append((prefix, 2 * hits / max(reached.size + gold.size, 1)))
        left = last - len(prefix)
        if left == 0 or int(degree[frontier].sum()) > budget:
            return
        # only the actions whose reached nodes have an answer within the steps the branch then has left
        for action, reached in _steps(graph, frontier, near[left - 1] if left - 1 < len(near) else None):
            expand(reached, (*prefix, action))

    expand(start, ())
    return found


def best_chains(graph: CSRGraph, topics: Sequence[Sequence[int]], answers: Sequence[Sequence[int]],
                hops: Sequence[int], max_steps: int, tie: float = 1e-6,
                progress: Callable[[int], None] | None = None) -> QuestionChains:
    """Each question's best relation chains over ``graph`` (module docstring); ``hops[i]`` 0 = unknown;
    ``progress(done)`` every 64 questions (else a bar / progress lines of its own)."""
    q = len(topics)
    per_question: list[list[tuple[int, ...]]] = [[] for _ in range(q)]
    f1 = np.zeros(q, np.float32)
    hops = [h if 0 < h <= max_steps else 0 for h in hops]
    for i in (range(q) if progress else counted(range(q), "relation chains", "question")):
        if progress is not None and i % 64 == 0:
            progress(i)
        if not len(topics[i]) or not len(answers[i]):
            continue
        found = question_chains(graph, topics[i], answers[i], hops[i], max_steps)
        if not found:
            continue
        found.sort(key=lambda c: len(c[0]))  # stable: a row's ties come shortest first
        best = max(np.float32(score) for _, score in found)
        keep = per_question[i]
        for chain, score in found:
            if best > 0 and np.float32(score) >= best - tie and (not keep or len(chain) == len(keep[0])):
                keep.append(chain)
        f1[i] = best
    counts = np.array([len(c) for c in per_question], np.int64)
    chains = np.full((int(counts.sum()), max_steps), -1, np.int64)
    k = 0
    for keep in per_question:
        for c in keep:
            chains[k, : len(c)] = c
            k += 1
    return QuestionChains(np.concatenate([[0], np.cumsum(counts)]), chains, f1)


def cached_chains(folder: Path, graph: CSRGraph, topics: Sequence[Sequence[int]], answers: Sequence[Sequence[int]],
                  hops: Sequence[int], max_steps: int, part_questions: int = 2000) -> QuestionChains:
    """:func:`best_chains`, kept in ``folder/chains_<fingerprint>.npz`` (graph triples, questions, max_steps);
    built in resumable parts of ``part_questions`` questions (a killed build continues from its last part)."""
    digest = hashlib.sha256(f"{graph.edges_fingerprint}:{graph.names_fingerprint}:{WALK_BUDGET}".encode())
    digest.update(repr((list(map(list, topics)), list(map(list, answers)), list(hops), max_steps)).encode())
    path = Path(folder) / f"chains_{digest.hexdigest()[:16]}.npz"
    if path.is_file():
        return QuestionChains.load(path)
    bounds = [(a, min(a + part_questions, len(topics))) for a in range(0, len(topics), part_questions)]
    parts = Parts(path.with_name(path.stem + ".parts"), len(bounds), QuestionChains.save, QuestionChains.load,
                  label="relation chains")
    with counter("relation chains", "question", len(topics)) as progress:
        built = []
        for k, (a, b) in enumerate(bounds):
            built.append(parts.get(k, lambda a=a, b=b: best_chains(
                graph, topics[a:b], answers[a:b], hops[a:b], max_steps, progress=lambda done, a=a: progress(a + done))))
            progress(b)
    chains = QuestionChains.concat(built, max_steps)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    chains.save(tmp)
    tmp.replace(path)
    parts.clear()
    return chains
