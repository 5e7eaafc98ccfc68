"""Relation-path signatures: how the topic entity reaches the near end of a triple, inside G_retrieval.

Distances alone cannot tell a 3-hop question's final-hop triple from a look-alike: in "actors of the films
directed by the director of [X]", a film two hops from X via its director and a film two hops from X via a shared
actor both sit at distance 2. What differs is the path. For every node of a question's G_retrieval, walking the
shortest-path layers from the topic (the stored distances, edges of G_retrieval only, either direction):

- ``first``: the signed relations (relation id × direction) of the first edge of its shortest paths;
- ``last``: the signed relations of the last edge into it.

Each is a 32-bit set (signed relation id modulo 32: exact for graphs with up to 16 relations such as MetaQA,
hashed beyond). A triple takes the sets of its end nearer the topic: with its own relation and the distance pair,
that names the path prefix it extends. Vectorised over the triples, three layers, no per-node Python.
"""

from __future__ import annotations

import numpy as np

from kgrag.graph.csr import CSRGraph

__all__ = ["BITS", "path_signatures", "bits_matrix"]

BITS = 32
_LAYERS = 3


def path_signatures(graph: CSRGraph, triples: np.ndarray, head_dist: np.ndarray,
                    tail_dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, last)`` uint32 bit sets of each triple's near end (see the module docstring)."""
    if triples.size == 0:
        return np.zeros(0, np.uint32), np.zeros(0, np.uint32)
    heads, tails = graph.head[triples], graph.tail[triples]
    nodes, inverse = np.unique(np.concatenate([heads, tails]), return_inverse=True)
    h, t = inverse[: triples.size], inverse[triples.size :]
    dist = np.full(nodes.size, 255, dtype=np.int16)
    dist[h] = head_dist
    dist[t] = tail_dist
    signed = graph.rel[triples].astype(np.int64) * 2
    bit_fwd = np.left_shift(np.uint32(1), (signed % BITS).astype(np.uint32))  # walked head -> tail
    bit_bwd = np.left_shift(np.uint32(1), ((signed + 1) % BITS).astype(np.uint32))  # walked tail -> head
    first = np.zeros(nodes.size, dtype=np.uint32)
    last = np.zeros(nodes.size, dtype=np.uint32)
    dh, dt = dist[h], dist[t]
    for k in range(1, _LAYERS + 1):
        for src, dst, bit in ((h, t, bit_fwd), (t, h, bit_bwd)):
            step = (dist[src] == k - 1) & (dist[dst] == k)
            if not step.any():
                continue
            np.bitwise_or.at(last, dst[step], bit[step])
            np.bitwise_or.at(first, dst[step], bit[step] if k == 1 else first[src[step]])
    near = np.where(dh <= dt, h, t)
    return first[near], last[near]


def bits_matrix(sets: np.ndarray) -> np.ndarray:
    """uint32 bit sets → float32 ``(n, 32)`` 0/1 matrix."""
    return ((sets[:, None] >> np.arange(BITS, dtype=np.uint32)) & 1).astype(np.float32)
