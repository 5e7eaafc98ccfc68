"""G_retrieval samples built in shards (one task each, e.g. on a Dask cluster) and merged into exactly the file
the one-process build writes.

    shards = shard_questions(questions, 4)                       # question indices per shard
    parts = [build_samples(graph, [questions[i] for i in s]) for s in shards]
    merged = merge_samples(parts, shards)                        # == build_samples(graph, questions)

Questions sharing a topic set share one PPR column, and :func:`~kgrag.hrag.retrieval.samples.build_samples` runs PPR over
``PPR_BATCH`` topic sets at a time (its convergence test spans the batch). A shard therefore holds whole batches of
topic sets, in their first-appearance order; each shard's build repeats the same batches, and the merge puts
groups and questions back in the original order.

Later per-question work (retriever scoring, g_agent materialisation, answering) is independent per question and
cut into contiguous ranges balanced by its cost: :func:`contiguous_ranges`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgrag.hrag.retrieval.questions import HragQuestion
from kgrag.hrag.retrieval.samples import PPR_BATCH, RetrievalSamples, _flat, _ptr

__all__ = ["contiguous_ranges", "merge_samples", "shard_questions", "topic_groups"]


def topic_groups(questions: Sequence[HragQuestion]) -> list[list[int]]:
    """Question indices per topic set, the sets in first-appearance order (as ``build_samples`` numbers them)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(tuple(sorted(set(q.topics))), []).append(i)
    return list(groups.values())


def shard_questions(questions: Sequence[HragQuestion], shards: int, batch: int = PPR_BATCH) -> list[list[int]]:
    """Question indices of at most ``shards`` shards: contiguous runs of whole PPR batches, balanced by their
    number of questions; each shard's indices ascending."""
    groups = topic_groups(questions)
    blocks = [[i for g in groups[s : s + batch] for i in g] for s in range(0, len(groups), batch)]
    shards = max(1, min(shards, len(blocks)))
    target = len(questions) / shards
    out: list[list[int]] = [[]]
    done = 0
    for b, block in enumerate(blocks):
        left_blocks, left_shards = len(blocks) - b, shards - len(out)
        if out[-1] and (done >= target * len(out) or left_blocks <= left_shards):
            out.append([])
        out[-1] += block
        done += len(block)
    return [sorted(s) for s in out]


def merge_samples(parts: Sequence[RetrievalSamples], shards: Sequence[Sequence[int]]) -> RetrievalSamples:
    """One :class:`RetrievalSamples` from the shards' (``parts[k]`` built from the questions ``shards[k]``, in
    that order), questions back in their original order."""
    if len(parts) != len(shards) or not parts:
        raise ValueError("one part per shard, at least one")
    offsets = np.cumsum([0] + [len(p.group_ptr) - 1 for p in parts])
    total = sum(len(s) for s in shards)
    where = [(0, 0)] * total  # question -> (part, row in part)
    for k, indices in enumerate(shards):
        for j, i in enumerate(indices):
            where[i] = (k, j)

    def rows(part: RetrievalSamples, j: int, ptr: str, values: str) -> np.ndarray:
        p = getattr(part, ptr)
        return getattr(part, values)[p[j] : p[j + 1]]

    picked = [(parts[k], j, k) for k, j in where]
    return RetrievalSamples(
        qids=[p.qids[j] for p, j, _ in picked], texts=[p.texts[j] for p, j, _ in picked],
        splits=[p.splits[j] for p, j, _ in picked],
        hops=np.array([p.hops[j] for p, j, _ in picked], dtype=np.int16),
        group_of=np.array([offsets[k] + p.group_of[j] for p, j, k in picked], dtype=np.int32),
        group_ptr=_ptr([n for p in parts for n in np.diff(p.group_ptr)]),
        triples=_flat([p.triples for p in parts], np.int32), head_dist=_flat([p.head_dist for p in parts], np.uint8),
        tail_dist=_flat([p.tail_dist for p in parts], np.uint8),
        topic_ptr=_ptr([n for p in parts for n in np.diff(p.topic_ptr)]),
        topics=_flat([p.topics for p in parts], np.int32),
        answer_ptr=_ptr([int(p.answer_ptr[j + 1] - p.answer_ptr[j]) for p, j, _ in picked]),
        answers=_flat([rows(p, j, "answer_ptr", "answers") for p, j, _ in picked], np.int32),
        answer_hop=_flat([rows(p, j, "answer_ptr", "answer_hop") for p, j, _ in picked], np.int8),
        pos_ptr=_ptr([int(p.pos_ptr[j + 1] - p.pos_ptr[j]) for p, j, _ in picked]),
        positives=_flat([rows(p, j, "pos_ptr", "positives") for p, j, _ in picked], np.int32),
        meta=dict(parts[0].meta),
    )


def contiguous_ranges(costs: Sequence[float] | np.ndarray, shards: int) -> list[tuple[int, int]]:
    """At most ``shards`` non-empty ``(start, stop)`` ranges covering ``range(len(costs))`` in order, balanced by
    cost: an item goes to the share its cost's midpoint falls in (``[]`` for no items)."""
    cost = np.maximum(np.asarray(costs, dtype=np.float64), 0.0) + 1e-9
    if cost.size == 0:
        return []
    middle = np.cumsum(cost) - cost / 2
    share = np.minimum((middle / cost.sum() * max(1, int(shards))).astype(np.int64), int(shards) - 1)
    bounds = [0, *(np.flatnonzero(np.diff(share)) + 1).tolist(), cost.size]
    return list(zip(bounds, bounds[1:], strict=False))
