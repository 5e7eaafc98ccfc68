"""g_agent materialization (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §4.4): the retriever's Top-K edges of G_retrieval as the agent's graph.

    record = materialize(head, relation, tail, scores, labels, topics, answers, answer_hops, top_k=500, oracle=True)
    split = GAgentSplit.build(records, qids, questions, hops, meta={"split": "train", "mode": "oracle", "top_k": 500})
    split.save(g_agent_path(folder, "train"))          # <folder>/train_g_agent.pt
    split = GAgentSplit.load(g_agent_path(folder, "train"))

One question, deterministically:

1. **Top-K**: edges sorted by score desc (ties: lower input position first), the first ``top_k`` get
   ``top_edge_mask``. Kept: the Top-K (G_pruned, validation/test) or Top-K ∪ the label-1 edges (G_oracle, train).
2. **Triple dedup** on ``(head, relation, tail)`` over the kept edges: score max, label max, mask OR; the edges come
   out by score desc, then by key.
3. **Nodes**: the entities the kept edges induce (sorted); edges, topics and answers get local indices into them.
4. **GT**: BFS from the topics over the kept edges as an undirected graph; an answer whose kept-graph distance equals
   its ``answer_hops`` (its full-graph distance) has a shortest path inside G_agent, and every edge of its
   shortest-path DAG (walked back layer by layer, either edge direction, as in :mod:`kgrag.hrag.retrieval.labels`) is a GT
   edge. No such answer: ``gt_path_exists = False`` and no GT edge — never an error. An answer that is itself a
   kept topic has a path of length 0 (exists, no edge), as ``PathLabels.has_path`` counts it.

:class:`GAgentSplit` holds a split flat, PyG-style: per-question segments of concatenated tensors delimited by
``*_ptr`` offsets (local indices stay local to their question). Saved as a plain dict of tensors, lists and
scalars, loadable with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["GAgentSplit", "g_agent_path", "materialize", "hop_distances"]

FORMAT_VERSION = 1
UNREACHED = -1

#: concatenated per-question tensor -> the offsets delimiting its segments, and its dtype
SEGMENTS: dict[str, tuple[str, torch.dtype]] = {
    "node_ids": ("node_ptr", torch.int64),
    "edge_head_local": ("edge_ptr", torch.int64),
    "edge_tail_local": ("edge_ptr", torch.int64),
    "edge_head": ("edge_ptr", torch.int64),
    "edge_relation": ("edge_ptr", torch.int64),
    "edge_tail": ("edge_ptr", torch.int64),
    "edge_scores": ("edge_ptr", torch.float32),
    "edge_labels": ("edge_ptr", torch.float32),
    "top_edge_mask": ("edge_ptr", torch.bool),
    "topic_local": ("topic_ptr", torch.int64),
    "answer_local": ("answer_ptr", torch.int64),
    "gt_path_edge_indices": ("gt_ptr", torch.int64),
}
PTRS = ("node_ptr", "edge_ptr", "topic_ptr", "answer_ptr", "gt_ptr")


def g_agent_path(folder: str | Path, split: str) -> Path:
    return Path(folder) / f"{split}_g_agent.pt"


def _top_mask(scores: np.ndarray, top_k: int) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")  # score desc, ties by input position
    mask = np.zeros(scores.size, dtype=bool)
    mask[order[: max(top_k, 0)]] = True
    return mask


def _dedup(head: np.ndarray, rel: np.ndarray, tail: np.ndarray, scores: np.ndarray, labels: np.ndarray,
           top: np.ndarray) -> tuple[np.ndarray, ...]:
    """One edge per (head, relation, tail): score max, label max, mask OR; ordered by score desc, then key."""
    if head.size == 0:
        return head, rel, tail, scores, labels, top
    order = np.lexsort((tail, rel, head))
    head, rel, tail = head[order], rel[order], tail[order]
    new = np.ones(head.size, dtype=bool)
    new[1:] = (head[1:] != head[:-1]) | (rel[1:] != rel[:-1]) | (tail[1:] != tail[:-1])
    starts = np.flatnonzero(new)
    head, rel, tail = head[starts], rel[starts], tail[starts]
    scores = np.maximum.reduceat(scores[order], starts)
    labels = np.maximum.reduceat(labels[order], starts)
    top = np.logical_or.reduceat(top[order], starts)
    out = np.lexsort((tail, rel, head, -scores))
    return head[out], rel[out], tail[out], scores[out], labels[out], top[out]


def _local(nodes: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """Sorted local indices of the ``ids`` present among ``nodes`` (sorted unique)."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    return np.searchsorted(nodes, ids[np.isin(ids, nodes)]).astype(np.int64)


def hop_distances(head: np.ndarray, tail: np.ndarray, num_nodes: int, sources: np.ndarray, max_hops: int) -> np.ndarray:
    """Undirected BFS hop counts from ``sources`` up to ``max_hops`` (``UNREACHED`` beyond)."""
    dist = np.full(num_nodes, UNREACHED, dtype=np.int64)
    frontier = np.zeros(num_nodes, dtype=bool)
    frontier[sources] = True
    dist[sources] = 0
    for hop in range(1, max_hops + 1):
        if not frontier.any():
            break
        reached = np.zeros(num_nodes, dtype=bool)
        reached[tail[frontier[head]]] = True
        reached[head[frontier[tail]]] = True
        frontier = reached & (dist == UNREACHED)
        dist[frontier] = hop
    return dist


def _gt_edges(head: np.ndarray, tail: np.ndarray, nodes: np.ndarray, topic_local: np.ndarray,
              answer_hops: dict[int, int]) -> tuple[bool, np.ndarray]:
    """Whether some answer keeps a full-length shortest path in the kept graph, and the edges of those paths."""
    answer_local = _local(nodes, list(answer_hops))
    if topic_local.size == 0 or answer_local.size == 0:
        return False, np.zeros(0, dtype=np.int64)
    wanted = np.array([answer_hops[a] for a in nodes[answer_local].tolist()], dtype=np.int64)
    dist = hop_distances(head, tail, nodes.size, topic_local, int(wanted.max()))
    exists = False
    on_path = np.zeros(head.size, dtype=bool)
    for answer, length in zip(answer_local.tolist(), wanted.tolist(), strict=True):
        if dist[answer] != length:
            continue
        exists = True
        layer = np.zeros(nodes.size, dtype=bool)
        layer[answer] = True
        for k in range(length, 0, -1):
            below = dist == k - 1
            back = (layer[tail] & below[head]) | (layer[head] & below[tail])  # either edge direction
            on_path |= back
            layer = np.zeros(nodes.size, dtype=bool)
            layer[head[back & below[head]]] = True
            layer[tail[back & below[tail]]] = True
    return exists, np.flatnonzero(on_path).astype(np.int64)


def materialize(edge_head: np.ndarray, edge_relation: np.ndarray, edge_tail: np.ndarray, edge_scores: np.ndarray,
                edge_labels: np.ndarray, topics: Sequence[int], answers: Sequence[int],
                answer_hops: Mapping[int, int], top_k: int, oracle: bool) -> dict[str, Any]:
    """G_agent of one question (see the module docstring): torch tensors plus the python bool ``gt_path_exists``."""
    head = np.asarray(edge_head, dtype=np.int64)
    rel = np.asarray(edge_relation, dtype=np.int64)
    tail = np.asarray(edge_tail, dtype=np.int64)
    scores = np.asarray(edge_scores, dtype=np.float32)
    labels = np.asarray(edge_labels, dtype=np.float32)
    top = _top_mask(scores, top_k)
    kept = top | (labels == 1.0) if oracle else top
    head, rel, tail, scores, labels, top = _dedup(head[kept], rel[kept], tail[kept], scores[kept], labels[kept],
                                                  top[kept])
    nodes = np.unique(np.concatenate([head, tail]))
    head_local = np.searchsorted(nodes, head).astype(np.int64)
    tail_local = np.searchsorted(nodes, tail).astype(np.int64)
    topic_local = _local(nodes, topics)
    answer_local = _local(nodes, answers)
    gold = set(np.asarray(answers, dtype=np.int64).tolist())
    exists, gt = _gt_edges(head_local, tail_local, nodes, topic_local,
                           {int(a): int(h) for a, h in answer_hops.items() if int(a) in gold})
    return {
        "node_ids": torch.from_numpy(nodes),
        "edge_head_local": torch.from_numpy(head_local),
        "edge_tail_local": torch.from_numpy(tail_local),
        "edge_head": torch.from_numpy(head),
        "edge_relation": torch.from_numpy(rel),
        "edge_tail": torch.from_numpy(tail),
        "edge_scores": torch.from_numpy(np.ascontiguousarray(scores, dtype=np.float32)),
        "edge_labels": torch.from_numpy(np.ascontiguousarray(labels, dtype=np.float32)),
        "top_edge_mask": torch.from_numpy(np.ascontiguousarray(top, dtype=bool)),
        "topic_local": torch.from_numpy(topic_local),
        "answer_local": torch.from_numpy(answer_local),
        "gt_path_exists": exists,
        "gt_path_edge_indices": torch.from_numpy(gt),
    }


def _ptr(counts: Sequence[int]) -> torch.Tensor:
    ptr = torch.zeros(len(counts) + 1, dtype=torch.int64)
    ptr[1:] = torch.cumsum(torch.as_tensor(list(counts), dtype=torch.int64), dim=0)
    return ptr


@dataclass
class GAgentSplit:
    """A split's G_agent graphs: ``tensors`` holds the concatenated segments of :data:`SEGMENTS` and the ``*_ptr``
    offsets (Q+1 each); ``gt_path_exists`` (Q,) bool, ``hops`` (Q,) int64; ``meta``: split, mode, top_k, ..."""

    tensors: dict[str, torch.Tensor]
    gt_path_exists: torch.Tensor
    qids: list[str | int]
    questions: list[str]
    hops: torch.Tensor
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, records: Sequence[Mapping[str, Any]], qids: Sequence[str | int], questions: Sequence[str],
              hops: Sequence[int], meta: Mapping[str, Any]) -> GAgentSplit:
        """From :func:`materialize` outputs, one per question, aligned with ``qids``, ``questions``, ``hops``."""
        if not len(records) == len(qids) == len(questions) == len(hops):
            raise ValueError("records, qids, questions and hops must have the same length")
        tensors: dict[str, torch.Tensor] = {}
        for key, (ptr, dtype) in SEGMENTS.items():
            parts = [torch.as_tensor(r[key], dtype=dtype).reshape(-1) for r in records]
            tensors[key] = torch.cat(parts) if parts else torch.zeros(0, dtype=dtype)
            tensors.setdefault(ptr, _ptr([p.numel() for p in parts]))
        exists = torch.tensor([bool(r["gt_path_exists"]) for r in records], dtype=torch.bool)
        return cls(tensors, exists, list(qids), [str(q) for q in questions],
                   torch.as_tensor(list(hops), dtype=torch.int64), dict(meta))

    @classmethod
    def concat(cls, parts: Sequence[GAgentSplit], meta: Mapping[str, Any] | None = None) -> GAgentSplit:
        """The questions of ``parts`` in order, as one split (e.g. the shards of a split built apart); ``meta``
        defaults to the first part's."""
        if not parts:
            raise ValueError("at least one part")
        tensors: dict[str, torch.Tensor] = {key: torch.cat([p.tensors[key] for p in parts]) for key in SEGMENTS}
        for ptr in PTRS:
            offsets = [0]
            for p in parts:
                offsets.append(offsets[-1] + int(p.tensors[ptr][-1]))
            tensors[ptr] = torch.cat([parts[0].tensors[ptr][:1]]
                                     + [p.tensors[ptr][1:] + offsets[k] for k, p in enumerate(parts)])
        return cls(tensors, torch.cat([p.gt_path_exists for p in parts]), [q for p in parts for q in p.qids],
                   [q for p in parts for q in p.questions], torch.cat([p.hops for p in parts]),
                   dict(parts[0].meta if meta is None else meta))

    def __len__(self) -> int:
        return len(self.qids)

    def sample(self, i: int) -> dict[str, Any]:
        """Question ``i``: the keys of :func:`materialize` plus ``qid``, ``question``, ``hop``."""
        out: dict[str, Any] = {}
        for key, (ptr, _) in SEGMENTS.items():
            bounds = self.tensors[ptr]
            out[key] = self.tensors[key][int(bounds[i]):int(bounds[i + 1])]
        out["gt_path_exists"] = bool(self.gt_path_exists[i])
        out.update(qid=self.qids[i], question=self.questions[i], hop=int(self.hops[i]))
        return out

    def subset(self, rows: Sequence[int]) -> GAgentSplit:
        """The questions ``rows``, in that order."""
        records = [self.sample(i) for i in rows]
        return GAgentSplit.build(records, [r["qid"] for r in records], [r["question"] for r in records],
                                 [r["hop"] for r in records], self.meta)

    def summary(self) -> dict[str, float | int]:
        q = len(self)
        edges = torch.diff(self.tensors["edge_ptr"]).double()
        nodes = torch.diff(self.tensors["node_ptr"]).double()
        answers = torch.diff(self.tensors["answer_ptr"])
        return {
            "questions": q,
            "mean_edges": float(edges.mean()) if q else 0.0,
            "mean_nodes": float(nodes.mean()) if q else 0.0,
            "gt_path_share": float(self.gt_path_exists.double().mean()) if q else 0.0,
            "answer_in_nodes_share": float((answers > 0).double().mean()) if q else 0.0,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION, **self.tensors, "gt_path_exists": self.gt_path_exists,
                "qids": list(self.qids), "questions": list(self.questions), "hops": self.hops, "meta": dict(self.meta)}

    def save(self, path: str | Path) -> Path:
        """``torch.save`` of :meth:`to_dict`, written to a temp file beside ``path`` and moved into place."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(self.to_dict(), f)
            os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; the file is a shared artefact
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path) -> GAgentSplit:
        return cls.from_dict(torch.load(Path(path), weights_only=True), str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "g_agent") -> GAgentSplit:
        """The split :meth:`to_dict` gave (``source`` names it in the error about an old format)."""
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"{source}: g_agent format version {data.get('version')}, expected {FORMAT_VERSION}")
        tensors = {key: data[key] for key in (*SEGMENTS, *PTRS)}
        return cls(tensors, data["gt_path_exists"], list(data["qids"]), list(data["questions"]), data["hops"],
                   dict(data["meta"]))
