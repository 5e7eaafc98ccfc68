"""The triple graph (G_global): vocabularies, int triple arrays and out/in adjacency, in memory or mapped from disk.

    graph = CSRGraph.load("work/metaqa/graph.npz")   # maps the file: milliseconds, pages shared by processes
    edges = graph.edges_of(np.array([graph.key_index["Tom Hanks"]]))  # (node position, triple id, other end)

Built from a :class:`~kgrag.data.records.KGDataset` or int arrays, saved as one uncompressed ``.npz`` of numeric
arrays (strings are UTF-8 buffers + offsets, no pickle). :meth:`load` maps it (:func:`kgrag.graph.mapped.map_npz`):
the triple arrays, the adjacency and the strings stay on disk until touched, so a 50M-triple graph opens in
milliseconds and several processes (server workers, Dask workers) share one copy through the page cache.

Triples are sorted by (head, relation, tail) and deduplicated; edge id ``e`` is the row in ``head/rel/tail``.
Adjacency without any entities × edges matrix: ``out_ptr`` (the edges leaving ``n`` are ``out_ptr[n]:out_ptr[n+1]``,
the triples being sorted by head) and ``in_ptr`` + ``in_order`` (the edges entering ``n`` are
``in_order[in_ptr[n]:in_ptr[n+1]]``, sorted by relation then head). :meth:`edges_of` gathers the undirected
incidence of a node set with vectorised range arithmetic: the work is the edges touched, never the graph's size.
Lookups by key / id are a dict in memory and a binary search over the mapped column (:class:`SortedIndex`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from kgrag.data.records import KGDataset
from kgrag.graph.iri import local_id
from kgrag.graph.mapped import SortedIndex, StringColumn, map_npz, pack_strings

FORMAT_VERSION = 2
_STRING_FIELDS = ("entity_keys", "entity_ids", "entity_names", "relations")


def gather_ranges(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[starts[i], stops[i])``: (which range each position belongs to, the positions), no Python
    loop: ``np.repeat`` of the range index and an arange shifted per range."""
    lengths = (stops - starts).astype(np.int64)
    total = int(lengths.sum())
    owner = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    if total == 0:
        return owner, np.zeros(0, dtype=np.int64)
    shift = np.repeat(starts.astype(np.int64) - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return owner, np.arange(total, dtype=np.int64) + shift


def in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Per value, whether it is in ``sorted_set`` (a sorted int array): one ``searchsorted``."""
    values = np.asarray(values)
    if not sorted_set.size:
        return np.zeros(values.shape, dtype=bool)
    return sorted_set[np.searchsorted(sorted_set, values).clip(max=sorted_set.size - 1)] == values


def sorted_lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray, missing: int) -> np.ndarray:
    """``values`` at each ``query``'s position in the sorted ``keys`` (int64), ``missing`` where absent."""
    query = np.asarray(query, dtype=np.int64)
    if not keys.size:
        return np.full(query.shape, missing, dtype=np.int64)
    at = np.searchsorted(keys, query).clip(max=keys.size - 1)
    return np.where(keys[at] == query, values[at].astype(np.int64), missing)


@dataclass
class CSRGraph:
    """Entity/relation vocabularies and the triple arrays; see the module docstring."""

    name: str
    iri_base: str
    entity_keys: list[str]
    entity_ids: list[str]
    entity_names: list[str]  # "" for unnamed nodes (CVTs)
    relations: list[str]
    head: np.ndarray
    rel: np.ndarray
    tail: np.ndarray
    meta: dict = field(default_factory=dict)
    #: other names of nodes read at import (``skos:altLabel`` …): the node of each, sorted, and the names
    alias_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    alias_names: Sequence[str] = ()

    # ------------------------------------------------------------------ building
    @classmethod
    def from_dataset(cls, kg: KGDataset) -> CSRGraph:
        keys = sorted({t.head for t in kg.triples} | {t.tail for t in kg.triples} | set(kg.names))
        relations = sorted({t.relation for t in kg.triples})
        e_index = {k: i for i, k in enumerate(keys)}
        r_index = {r: i for i, r in enumerate(relations)}
        n = len(kg.triples)
        h = np.fromiter((e_index[t.head] for t in kg.triples), dtype=np.int32, count=n)
        r = np.fromiter((r_index[t.relation] for t in kg.triples), dtype=np.int32, count=n)
        t = np.fromiter((e_index[t.tail] for t in kg.triples), dtype=np.int32, count=n)
        ids = [local_id(k, kg.id_style) for k in keys]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{kg.name}: two entity keys map to the same IRI local id")
        return cls.from_arrays(kg.name, kg.iri_base, keys, ids, [kg.names.get(k, "") for k in keys], relations,
                               h, r, t, meta={"id_style": kg.id_style, "name_lang": kg.name_lang})

    @classmethod
    def from_arrays(cls, name: str, iri_base: str, keys: list[str], ids: list[str], names: list[str],
                    relations: list[str], h: np.ndarray, r: np.ndarray, t: np.ndarray,
                    meta: dict | None = None) -> CSRGraph:
        """The graph of int triples over given vocabularies (keys and relations in sorted order), sorted by
        (head, relation, tail) with duplicate triples dropped (counted in ``meta["duplicates_dropped"]``)."""
        n = len(h)
        order = np.lexsort((t, r, h))
        h, r, t = h[order], r[order], t[order]
        keep = np.ones(n, dtype=bool)
        if n > 1:
            keep[1:] = (h[1:] != h[:-1]) | (r[1:] != r[:-1]) | (t[1:] != t[:-1])
        return cls(
            name=name,
            iri_base=iri_base,
            entity_keys=keys,
            entity_ids=ids,
            entity_names=names,
            relations=relations,
            head=h[keep],
            rel=r[keep],
            tail=t[keep],
            meta={**(meta or {}), "duplicates_dropped": int(n - keep.sum())},
        )

    # ------------------------------------------------------------------ sizes
    @property
    def num_entities(self) -> int:
        return len(self.entity_keys)

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    @property
    def num_triples(self) -> int:
        return int(self.head.shape[0])

    # ------------------------------------------------------------------ adjacency
    @cached_property
    def out_ptr(self) -> np.ndarray:
        """int64 (entities + 1): the edges leaving ``n`` are rows ``out_ptr[n]:out_ptr[n+1]`` of
        ``out_order`` (the identity for a graph sorted by head, as every built or loaded one is)."""
        return np.searchsorted(self.head[self.out_order] if self.out_order is not None else self.head,
                               np.arange(self.num_entities + 1)).astype(np.int64)

    @cached_property
    def out_order(self) -> np.ndarray | None:
        """Edge ids sorted by head; ``None`` when the triples already are (no copy)."""
        h = self.head
        if h.size < 2 or bool(np.all(h[1:] >= h[:-1])):
            return None
        return np.lexsort((self.tail, self.rel, h)).astype(np.int64)

    @cached_property
    def in_order(self) -> np.ndarray:
        """Edge ids sorted by (tail, relation, head)."""
        dtype = np.int32 if self.num_triples < 2**31 else np.int64
        return np.lexsort((self.head, self.rel, self.tail)).astype(dtype)

    @cached_property
    def in_ptr(self) -> np.ndarray:
        """int64 (entities + 1): the edges entering ``n`` are ``in_order[in_ptr[n]:in_ptr[n+1]]``."""
        return np.searchsorted(self.tail[self.in_order], np.arange(self.num_entities + 1)).astype(np.int64)

    @cached_property
    def in_head(self) -> np.ndarray:
        """``head[in_order]``: the far end of each entering edge in ``in_order``'s order, so gathering a node's
        in-edges reads one contiguous run instead of a head per edge scattered over the triples (stored: mapped on
        load; a graph saved before it computes it once, on first use)."""
        return np.asarray(self.head)[np.asarray(self.in_order)]

    @cached_property
    def degree(self) -> np.ndarray:
        """Undirected degree (edges leaving + entering, a self-loop twice) per entity (stored: mapped on load)."""
        return np.diff(self.out_ptr) + np.diff(self.in_ptr)

    def edges_of(self, nodes: np.ndarray, direction: str = "both") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The incidence of ``nodes`` (int array): ``(position in nodes, triple id, other end)`` per incident edge,
        out-edges of every node first, then in-edges (``direction``: ``out`` / ``in`` / ``both``)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        owners, triples, others = [], [], []
        if direction in ("out", "both"):
            owner, at = gather_ranges(self.out_ptr[nodes], self.out_ptr[nodes + 1])
            ids = at if self.out_order is None else self.out_order[at]
            owners.append(owner)
            triples.append(ids)
            others.append(self.tail[ids].astype(np.int64))
        if direction in ("in", "both"):
            owner, at = gather_ranges(self.in_ptr[nodes], self.in_ptr[nodes + 1])
            ids = self.in_order[at].astype(np.int64)
            owners.append(owner)
            triples.append(ids)
            others.append(self.in_head[at].astype(np.int64))
        if len(owners) == 1:
            return owners[0], triples[0], others[0]
        return np.concatenate(owners), np.concatenate(triples), np.concatenate(others)

    def adjacency(self, undirected: bool = False) -> sp.csr_matrix:
        """Entity × entity matrix of edge counts (head → tail; symmetric when ``undirected``)."""
        rows, cols = self.head, self.tail
        if undirected:
            rows, cols = np.concatenate([self.head, self.tail]), np.concatenate([self.tail, self.head])
        data = np.ones(len(rows), dtype=np.float32)
        return sp.csr_matrix((data, (rows, cols)), shape=(self.num_entities, self.num_entities))

    def out_edges(self, entity: int) -> np.ndarray:
        return self.edges_of(np.array([entity]), "out")[1]

    def in_edges(self, entity: int) -> np.ndarray:
        return self.edges_of(np.array([entity]), "in")[1]

    def neighbourhood(self, entity: int) -> list[tuple[str, str, str]]:
        """One-hop triples around ``entity`` (both directions) as (head key, relation, tail key)."""
        edges = self.edges_of(np.array([entity]))[1]
        keys, rels = self.entity_keys, self.relations
        return [
            (keys[h], rels[r], keys[t])
            for h, r, t in zip(self.head[edges].tolist(), self.rel[edges].tolist(), self.tail[edges].tolist(), strict=True)
        ]

    def names_of(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """Entity names of ``rows`` ("" for unnamed), in order."""
        names = self.entity_names
        return names.take(rows) if isinstance(names, StringColumn) else [names[int(r)] for r in np.asarray(rows).tolist()]

    # ------------------------------------------------------------------ lookups
    @cached_property
    def key_index(self) -> dict[str, int] | SortedIndex:
        """key → row: a dict for a graph built in memory, a binary search over the mapped (sorted) keys."""
        if isinstance(self.entity_keys, StringColumn):
            return SortedIndex(self.entity_keys, self._orders.get("key_order"))
        return {k: i for i, k in enumerate(self.entity_keys)}

    @cached_property
    def id_index(self) -> dict[str, int] | SortedIndex:
        if isinstance(self.entity_ids, StringColumn):
            return SortedIndex(self.entity_ids, self._orders.get("id_order"))
        return {k: i for i, k in enumerate(self.entity_ids)}

    @cached_property
    def relation_index(self) -> dict[str, int]:
        return {r: i for i, r in enumerate(self.relations)}

    @cached_property
    def relation_labels(self) -> list[str]:
        """Each relation's readable label: its property's label where the import read one (``place of birth``
        for ``wdt:P19``), else the relation's name."""
        labels = self.meta.get("relation_labels") or []
        if len(labels) != len(self.relations):
            return list(self.relations)
        return [label or relation for label, relation in zip(labels, self.relations, strict=True)]

    def aliases_of(self, row: int) -> list[str]:
        """The other names of node ``row`` read at import (``[]`` for none)."""
        rows = self.alias_rows
        lo, hi = np.searchsorted(rows, row, side="left"), np.searchsorted(rows, row, side="right")
        return [self.alias_names[i] for i in range(int(lo), int(hi))]

    @cached_property
    def _orders(self) -> dict[str, np.ndarray]:
        return {}

    @cached_property
    def names_fingerprint(self) -> str:
        """sha256 (16 hex) of every entity and relation name: what name vectors are keyed by (stored at save)."""
        stored = self.meta.get("names_sha256")
        if stored:
            return str(stored)
        import hashlib

        data, offsets = pack_strings(self.entity_names)
        digest = hashlib.sha256(np.ascontiguousarray(offsets).tobytes())
        digest.update(memoryview(np.ascontiguousarray(data)))
        for relation in self.relations:
            digest.update(relation.encode() + b"\n")
        return digest.hexdigest()[:16]

    @cached_property
    def edges_fingerprint(self) -> str:
        """sha256 (16 hex) of the triple arrays: what caches of whole-graph labels are keyed by (stored at save)."""
        stored = self.meta.get("edges_sha256")
        if stored:
            return str(stored)
        import hashlib

        digest = hashlib.sha256()
        for array in (self.head, self.rel, self.tail):
            digest.update(memoryview(np.ascontiguousarray(array, dtype=np.int32)))
        return digest.hexdigest()[:16]

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> Path:
        """Write atomically to ``path`` (an uncompressed ``.npz`` that :meth:`load` maps)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {"head": self.head, "rel": self.rel, "tail": self.tail,
                                         "in_order": self.in_order, "in_ptr": self.in_ptr, "in_head": self.in_head}
        if self.out_order is None:
            arrays["out_ptr"] = self.out_ptr
        arrays["degree"] = self.degree.astype(np.int32 if self.num_triples < 2**30 else np.int64)
        for field_name in _STRING_FIELDS:
            arrays[f"{field_name}__data"], arrays[f"{field_name}__offsets"] = pack_strings(getattr(self, field_name))
        known = self.__dict__.get("_orders") or {}  # orders a delta merged (None: sorted); a loaded graph's own
        for field_name, order_name in (("entity_keys", "key_order"), ("entity_ids", "id_order")):
            order = known[order_name] if order_name in known else _sort_order(getattr(self, field_name))
            if order is not None:
                arrays[order_name] = order
        if self.__dict__.get("key_hashes") is not None:
            arrays["key_hashes"] = np.asarray(self.__dict__["key_hashes"], dtype=np.uint64)
        if len(self.alias_rows):
            arrays["alias_rows"] = np.asarray(self.alias_rows, dtype=np.int32)
            arrays["alias_names__data"], arrays["alias_names__offsets"] = pack_strings(self.alias_names)
        meta = {**self.meta, "names_sha256": self.names_fingerprint, "edges_sha256": self.edges_fingerprint}
        header = {"version": FORMAT_VERSION, "name": self.name, "iri_base": self.iri_base, "meta": meta}
        arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: Path) -> CSRGraph:
        """Map the graph at ``path`` (nothing but the header and the relation names is read now)."""
        z = map_npz(Path(path))
        header = json.loads(z["header"].tobytes().decode("utf-8"))
        if header.get("version") != FORMAT_VERSION:
            raise ValueError(f"{path}: graph format {header.get('version')} (expected {FORMAT_VERSION}); re-run prepare")
        strings = {f: StringColumn(z[f"{f}__data"], z[f"{f}__offsets"]) for f in _STRING_FIELDS}
        graph = cls(name=header["name"], iri_base=header["iri_base"], head=z["head"], rel=z["rel"], tail=z["tail"],
                    meta=header.get("meta", {}), entity_keys=strings["entity_keys"],
                    entity_ids=strings["entity_ids"], entity_names=strings["entity_names"],
                    relations=list(strings["relations"]))
        cached = graph.__dict__  # the stored adjacency fills the cached properties
        cached["in_order"], cached["in_ptr"] = z["in_order"], z["in_ptr"]
        if "out_ptr" in z:
            cached["out_ptr"], cached["out_order"] = z["out_ptr"], None
        cached["_orders"] = {k: z[k] for k in ("key_order", "id_order") if k in z}
        if "degree" in z:
            cached["degree"] = z["degree"]
        if "in_head" in z:
            cached["in_head"] = z["in_head"]
        if "key_hashes" in z:  # the 64-bit hash of every key (kgrag.graph.versions.delta finds a delta's nodes by them)
            cached["key_hashes"] = z["key_hashes"]
        if "alias_rows" in z:
            graph.alias_rows = z["alias_rows"]
            graph.alias_names = StringColumn(z["alias_names__data"], z["alias_names__offsets"])
        return graph


def _sort_order(column: Sequence[str], prefix: int = 48, chunk: int = 1 << 20) -> np.ndarray | None:
    """Rows of ``column`` in string order (UTF-8 bytes order = code point order); ``None`` when already sorted.
    Sorted by numpy on fixed-width ``prefix``-byte heads built a chunk of rows at a time (memory: the heads, not
    the strings), runs of equal heads then by the full string."""
    n = len(column)
    if n < 2:
        return None
    heads = np.empty(n, dtype=f"S{prefix}")
    longer = np.zeros(n, dtype=bool)
    for start in range(0, n, chunk):
        encoded = [s.encode("utf-8") for s in column[start : start + chunk]]
        heads[start : start + len(encoded)] = encoded  # numpy truncates each to the prefix
        longer[start : start + len(encoded)] = [len(b) > prefix for b in encoded]
    order = np.argsort(heads, kind="stable")
    if longer.any():  # equal heads of which one is longer than the prefix: finish those runs by full string
        ordered = heads[order]
        starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
        stops = np.append(starts[1:], n)
        run_of = np.cumsum(np.concatenate([[True], ordered[1:] != ordered[:-1]])) - 1
        for run in np.unique(run_of[longer[order]]).tolist():  # runs are contiguous: slice, no scan per run
            a, b = int(starts[run]), int(stops[run])
            if b - a > 1:
                order[a:b] = sorted(order[a:b].tolist(), key=lambda r: column[r])
    if bool(np.all(order[1:] > order[:-1])):
        return None
    return order.astype(np.int64)
