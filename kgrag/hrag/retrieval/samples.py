"""Retrieval samples: for each question, G_retrieval (PPR top-N nodes and the triples among them), the
structure features of those triples and the shortest-path labels (spec h-rag.md, the H-RAG specification of a
triple retriever and a GFlowNet path reasoner, §3).

Questions sharing a topic-entity set share one G_retrieval ("group": PPR depends on the seeds only), so the
triples and their distance features are stored once per group; labels, answers and hops per question.
Layout is flat with ``*_ptr`` offset arrays (one ``.npz``), the same for every split and for question files.

Structure features (SubgraphRAG's DDE in spirit): each triple carries the undirected BFS distance of its head
and of its tail from the topic entities over the full graph, capped at ``MAX_DIST`` (``MAX_DIST`` = farther
than 3 hops or unreached), so ``(d_head, d_tail)`` also tells whether the edge points away from the topic,
towards it, or along a level.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.labels import UNREACHED, shortest_path_labels, topic_distances
from kgrag.hrag.retrieval.local_ppr import LocalPPR
from kgrag.hrag.retrieval.ppr import PersonalizedPageRank
from kgrag.hrag.retrieval.questions import HragQuestion

__all__ = ["MAX_DIST", "QuestionSample", "RetrievalSamples", "build_samples", "focus_weights"]

MAX_DIST = 4
MAX_HOPS = 3


#: topic sets whose PPR runs as one matrix product (a shard of the work holds whole batches: same results)
PPR_BATCH = 64


def _ptr(lengths: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)


def _flat(parts: Sequence[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)


@dataclass
class QuestionSample:
    """One question's view: G_retrieval triples (global ids), features, labels."""

    index: int
    qid: str
    text: str
    hop: int
    topics: np.ndarray
    answers: np.ndarray
    triples: np.ndarray  # int64 global triple ids of G_retrieval
    head_dist: np.ndarray  # uint8
    tail_dist: np.ndarray  # uint8
    labels: np.ndarray  # bool, triple on a shortest topic -> answer path
    positives: np.ndarray  # int64 all positive triples (also those PPR left out of G_retrieval)
    answer_hops: dict[int, int]

    @property
    def has_path(self) -> bool:
        return bool(self.positives.size)


@dataclass
class RetrievalSamples:
    qids: list[str]
    texts: list[str]
    splits: list[str]
    hops: np.ndarray  # int16 (Q,), 0 = unknown
    group_of: np.ndarray  # int32 (Q,) -> group
    group_ptr: np.ndarray  # int64 (G+1,) into triples / head_dist / tail_dist
    triples: np.ndarray  # int32
    head_dist: np.ndarray  # uint8
    tail_dist: np.ndarray  # uint8
    topic_ptr: np.ndarray  # int64 (G+1,)
    topics: np.ndarray  # int32
    answer_ptr: np.ndarray  # int64 (Q+1,)
    answers: np.ndarray  # int32
    answer_hop: np.ndarray  # int8, aligned with answers, -1 = not within MAX_HOPS
    pos_ptr: np.ndarray  # int64 (Q+1,)
    positives: np.ndarray  # int32
    meta: dict

    def __len__(self) -> int:
        return len(self.qids)

    def group_triples(self, g: int) -> slice:
        return slice(int(self.group_ptr[g]), int(self.group_ptr[g + 1]))

    def question(self, i: int) -> QuestionSample:
        g = int(self.group_of[i])
        span = self.group_triples(g)
        triples = self.triples[span].astype(np.int64)
        positives = self.positives[self.pos_ptr[i] : self.pos_ptr[i + 1]].astype(np.int64)
        a = slice(int(self.answer_ptr[i]), int(self.answer_ptr[i + 1]))
        answers, hops = self.answers[a].astype(np.int64), self.answer_hop[a]
        return QuestionSample(
            index=i, qid=self.qids[i], text=self.texts[i], hop=int(self.hops[i]),
            topics=self.topics[self.topic_ptr[g] : self.topic_ptr[g + 1]].astype(np.int64), answers=answers,
            triples=triples, head_dist=self.head_dist[span], tail_dist=self.tail_dist[span],
            labels=np.isin(triples, positives, assume_unique=True), positives=positives,
            answer_hops={int(e): int(h) for e, h in zip(answers, hops, strict=True) if h >= 0},
        )

    def positive_counts(self) -> np.ndarray:
        """Shortest-path triples per question (0 = no path within 3 hops)."""
        return np.diff(self.pos_ptr)

    def question_triple_counts(self) -> np.ndarray:
        return np.diff(self.group_ptr)[self.group_of]

    def subset(self, indices: Sequence[int]) -> RetrievalSamples:
        """The given questions (groups kept whole; unused groups stay, harmless)."""
        idx = np.asarray(indices, dtype=np.int64)
        ans = [self.answers[self.answer_ptr[i] : self.answer_ptr[i + 1]] for i in idx]
        ahop = [self.answer_hop[self.answer_ptr[i] : self.answer_ptr[i + 1]] for i in idx]
        pos = [self.positives[self.pos_ptr[i] : self.pos_ptr[i + 1]] for i in idx]
        return RetrievalSamples(
            qids=[self.qids[i] for i in idx], texts=[self.texts[i] for i in idx],
            splits=[self.splits[i] for i in idx], hops=self.hops[idx], group_of=self.group_of[idx],
            group_ptr=self.group_ptr, triples=self.triples, head_dist=self.head_dist, tail_dist=self.tail_dist,
            topic_ptr=self.topic_ptr, topics=self.topics, answer_ptr=_ptr([len(a) for a in ans]),
            answers=_flat(ans, np.int32), answer_hop=_flat(ahop, np.int8), pos_ptr=_ptr([len(p) for p in pos]),
            positives=_flat(pos, np.int32), meta=dict(self.meta),
        )

    # ------------------------------------------------------------------ persistence
    _ARRAYS = ("hops", "group_of", "group_ptr", "triples", "head_dist", "tail_dist", "topic_ptr", "topics",
               "answer_ptr", "answers", "answer_hop", "pos_ptr", "positives")

    def save(self, path: Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
        header = json.dumps({"qids": self.qids, "texts": self.texts, "splits": self.splits, "meta": self.meta})
        np.savez(tmp, header=np.frombuffer(header.encode(), dtype=np.uint8),
                 **{name: getattr(self, name) for name in self._ARRAYS})
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: Path) -> RetrievalSamples:
        with np.load(path) as data:
            header = json.loads(data["header"].tobytes().decode())
            arrays = {name: data[name] for name in cls._ARRAYS}
        return cls(qids=header["qids"], texts=header["texts"], splits=header["splits"], meta=header["meta"],
                   **arrays)


def _capped(dist: np.ndarray) -> np.ndarray:
    return np.where(dist == UNREACHED, MAX_DIST, np.minimum(dist, MAX_DIST)).astype(np.uint8)


def focus_weights(num_relations: int, relations: Sequence[int], floor: float) -> np.ndarray | None:
    """Relation weights of a question-aware walk: 1 for ``relations`` (the question's predicted chains'), ``floor``
    for every other one; None (the even walk) without a focus or with ``floor`` 1."""
    if floor >= 1.0 or not len(relations):
        return None
    weight = np.full(num_relations, floor, dtype=np.float64)
    relations = np.asarray(relations, dtype=np.int64)
    weight[relations[relations < num_relations]] = 1.0
    return weight


def build_samples(graph: CSRGraph, questions: Sequence[HragQuestion], top_n: int = 500, max_triples: int = 3000,
                  ppr: LocalPPR | PersonalizedPageRank | None = None, batch: int = PPR_BATCH,
                  progress: Callable[[int, int], None] | None = None,
                  focus: Sequence[Sequence[int]] | None = None, floor: float = 1.0,
                  max_off_focus: int | None = None) -> RetrievalSamples:
    """G_retrieval, structure features and labels for ``questions`` (one PPR per distinct topic set and focus;
    the features are the subgraph's own topic distances, the labels a full BFS, only for questions with answers).
    ``focus[i]``: the relations question ``i``'s walk follows (the rest weighted ``floor``: :func:`focus_weights`;
    the local PPR only); ``max_off_focus``: at most that many triples of the other relations in a focused
    G_retrieval."""
    ppr = ppr or LocalPPR(graph)
    if focus is not None and floor < 1.0 and not isinstance(ppr, LocalPPR):
        raise ValueError("a focused walk needs the local PPR")
    if focus is None or floor >= 1.0:
        focus = [()] * len(questions)
    keys = [(tuple(sorted(set(q.topics))), tuple(int(r) for r in f)) for q, f in zip(questions, focus, strict=True)]
    groups = list(dict.fromkeys(keys))
    group_index = {k: i for i, k in enumerate(groups)}
    members: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        members.setdefault(group_index[key], []).append(i)
    g_triples: list[np.ndarray] = []
    g_head: list[np.ndarray] = []
    g_tail: list[np.ndarray] = []
    answers: list[np.ndarray] = [np.zeros(0, np.int64)] * len(questions)
    answer_hop: list[np.ndarray] = [np.zeros(0, np.int8)] * len(questions)
    positives: list[np.ndarray] = [np.zeros(0, np.int64)] * len(questions)
    for start in range(0, len(groups), batch):
        chunk = groups[start : start + batch]
        if any(f for _, f in chunk):
            subgraphs = ppr.retrieval_subgraphs([list(t) for t, _ in chunk], top_n, max_triples,
                                                [focus_weights(graph.num_relations, f, floor) for _, f in chunk],
                                                max_off_focus)
        else:  # the even walk (a dense PPR batches its topic sets)
            subgraphs = ppr.retrieval_subgraphs([list(t) for t, _ in chunk], top_n, max_triples)
        for offset, (key, sub) in enumerate(zip(chunk, subgraphs, strict=True)):
            g_triples.append(sub.triples)
            g_head.append(_capped(sub.distances.at(graph.head[sub.triples])))
            g_tail.append(_capped(sub.distances.at(graph.tail[sub.triples])))
            labelled = [i for i in members[start + offset] if len(questions[i].answers)]
            # exact shortest-path labels: the topics' BFS to MAX_HOPS - 1, the last hop from each answer's side
            topics = np.asarray(key[0], dtype=np.int64)
            dist = topic_distances(graph, topics, MAX_HOPS - 1) if labelled else None
            for i in labelled:
                labels = shortest_path_labels(graph, key[0], questions[i].answers, MAX_HOPS, distances=dist)
                answers[i] = np.asarray(questions[i].answers, dtype=np.int64)
                answer_hop[i] = np.array([labels.answer_hops.get(int(a), -1) for a in answers[i]], dtype=np.int8)
                positives[i] = labels.positive_triples
        if progress is not None:
            progress(min(start + batch, len(groups)), len(groups))
    return RetrievalSamples(
        qids=[q.qid for q in questions], texts=[q.text for q in questions], splits=[q.split for q in questions],
        hops=np.array([q.hop for q in questions], dtype=np.int16),
        group_of=np.array([group_index[k] for k in keys], dtype=np.int32),
        group_ptr=_ptr([len(t) for t in g_triples]), triples=_flat(g_triples, np.int32),
        head_dist=_flat(g_head, np.uint8), tail_dist=_flat(g_tail, np.uint8),
        topic_ptr=_ptr([len(k) for k, _ in groups]),
        topics=np.array([t for k, _ in groups for t in k], dtype=np.int32),
        answer_ptr=_ptr([len(a) for a in answers]), answers=_flat(answers, np.int32),
        answer_hop=_flat(answer_hop, np.int8), pos_ptr=_ptr([len(p) for p in positives]),
        positives=_flat(positives, np.int32),
        meta={"top_n": top_n, "max_triples": max_triples, "max_dist": MAX_DIST, "graph": graph.name,
              "focus_floor": floor if any(f for _, f in groups) else 1.0,
              "max_off_focus": max_off_focus if any(f for _, f in groups) else None,
              "entities": graph.num_entities, "graph_triples": graph.num_triples},
    )
