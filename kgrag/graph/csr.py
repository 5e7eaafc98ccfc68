"""In-memory CSR triple graph (G_global): vocabularies, int triple arrays and out/in adjacency.

Built once from a :class:`~kgrag.data.records.KGDataset`, saved and loaded as one ``.npz`` file holding only
numeric arrays (strings are packed as UTF-8 bytes + offsets, so loading needs no pickle). Used by PPR,
shortest-path labelling and retriever training.

Triples are sorted by (head, relation, tail) and deduplicated; edge id ``e`` is the row in ``head/rel/tail``.
``out_incidence`` is a scipy CSR matrix (entities × edges) whose row ``n`` lists the edges leaving ``n``;
``in_incidence`` the edges entering ``n``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from kgrag.data.records import KGDataset
from kgrag.graph.iri import local_id

FORMAT_VERSION = 1


def _pack(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _unpack(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = data.tobytes()
    return [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]


def _incidence(nodes: np.ndarray, n_nodes: int) -> sp.csr_matrix:
    n_edges = len(nodes)
    data = np.ones(n_edges, dtype=np.int8)
    return sp.csr_matrix((data, (nodes, np.arange(n_edges))), shape=(n_nodes, n_edges))


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
    def out_incidence(self) -> sp.csr_matrix:
        return _incidence(self.head, self.num_entities)

    @cached_property
    def in_incidence(self) -> sp.csr_matrix:
        return _incidence(self.tail, self.num_entities)

    @cached_property
    def undirected_adjacency(self) -> sp.csr_matrix:
        """``adjacency(undirected=True)``, built once per graph."""
        return self.adjacency(undirected=True)

    def adjacency(self, undirected: bool = False) -> sp.csr_matrix:
        """Entity × entity matrix of edge counts (head → tail; symmetric when ``undirected``)."""
        rows, cols = self.head, self.tail
        if undirected:
            rows, cols = np.concatenate([self.head, self.tail]), np.concatenate([self.tail, self.head])
        data = np.ones(len(rows), dtype=np.float32)
        return sp.csr_matrix((data, (rows, cols)), shape=(self.num_entities, self.num_entities))

    def out_edges(self, entity: int) -> np.ndarray:
        m = self.out_incidence
        return m.indices[m.indptr[entity] : m.indptr[entity + 1]]

    def in_edges(self, entity: int) -> np.ndarray:
        m = self.in_incidence
        return m.indices[m.indptr[entity] : m.indptr[entity + 1]]

    def neighbourhood(self, entity: int) -> list[tuple[str, str, str]]:
        """One-hop triples around ``entity`` (both directions) as (head key, relation, tail key)."""
        edges = np.concatenate([self.out_edges(entity), self.in_edges(entity)])
        keys, rels = self.entity_keys, self.relations
        return [
            (keys[h], rels[r], keys[t])
            for h, r, t in zip(self.head[edges].tolist(), self.rel[edges].tolist(), self.tail[edges].tolist(), strict=True)
        ]

    # ------------------------------------------------------------------ lookups
    @cached_property
    def key_index(self) -> dict[str, int]:
        return {k: i for i, k in enumerate(self.entity_keys)}

    @cached_property
    def id_index(self) -> dict[str, int]:
        return {k: i for i, k in enumerate(self.entity_ids)}

    @cached_property
    def relation_index(self) -> dict[str, int]:
        return {r: i for i, r in enumerate(self.relations)}

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> Path:
        """Write atomically to ``path`` (``.npz``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {"head": self.head, "rel": self.rel, "tail": self.tail}
        for field_name in ("entity_keys", "entity_ids", "entity_names", "relations"):
            arrays[f"{field_name}__data"], arrays[f"{field_name}__offsets"] = _pack(getattr(self, field_name))
        header = {"version": FORMAT_VERSION, "name": self.name, "iri_base": self.iri_base, "meta": self.meta}
        arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: Path) -> CSRGraph:
        with np.load(Path(path), allow_pickle=False) as z:
            header = json.loads(z["header"].tobytes().decode("utf-8"))
            if header.get("version") != FORMAT_VERSION:
                raise ValueError(f"{path}: graph format {header.get('version')} (expected {FORMAT_VERSION}); re-run prepare")
            strings = {
                f: _unpack(z[f"{f}__data"], z[f"{f}__offsets"])
                for f in ("entity_keys", "entity_ids", "entity_names", "relations")
            }
            return cls(
                name=header["name"],
                iri_base=header["iri_base"],
                head=z["head"],
                rel=z["rel"],
                tail=z["tail"],
                meta=header.get("meta", {}),
                **strings,
            )
