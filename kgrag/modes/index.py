"""The query modes' in-memory view of one knowledge network: entity, relation and chunk stores as arrays.

    index = ModeIndex.for_store(store, "medical")   # built once per network version, then shared
    index.entity_names[index.entity_vectors @ q].argmax()

What it holds (built from the SQL store in one pass, no per-query SQL):

* **entities** — every instance: id, name, object type, degree (links at either end), the description property's
  text when the network's ``TextConfig.descriptions`` names one, its short properties, the other names it records
  (an ``aliases`` property, :func:`kgrag.search.storage_forms.alias_field`), and the name vector the network was
  loaded with (``kn_vectors`` rows of the type's display key; a zero row when the name has none).
* **relations** — every link as parallel int arrays (source, target, relation type) plus ``incidence``: a CSR list
  of the links at each entity, so an entity set's edges are one gather, not a query per entity.
* **chunks** — ``kn_chunks`` rows: text, token count, vector (``kn_vectors`` kind ``chunk``), and a CSR list of the
  chunks each entity is a ``source_id`` of.

Descriptions are made on demand for the few rows a context shows (:meth:`entity_description`,
:meth:`relation_row`), never for the whole graph.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import select

from kgrag.network.schema import tables as t
from kgrag.network.schema.model import DataProperty, KnowledgeNetwork, ObjectType, TextConfig
from kgrag.rank.tokenize import has_cjk
from kgrag.search.storage_forms import alias_field, alias_values

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.network.store import NetworkStore
    from kgrag.rank.embedder_factory import TextEmbedder

__all__ = ["ModeIndex"]


_cache: dict[tuple[str, str], ModeIndex] = {}
_cache_lock = threading.Lock()


def _csr(keys: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, values sorted by key)``: the values of key k are ``out[offsets[k]:offsets[k+1]]``."""
    order = np.argsort(keys, kind="stable")
    offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=offsets[1:])
    return offsets, values[order]


def _lookup(sorted_ids: np.ndarray, order: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Row of each of ``ids`` in the entity table (-1 when unknown), by binary search over the sorted ids."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    pos = np.searchsorted(sorted_ids, ids)
    pos = np.minimum(pos, len(sorted_ids) - 1)
    found = sorted_ids[pos] == ids
    return np.where(found, order[pos], -1)


@dataclass
class ModeIndex:
    kn_id: str
    version: str
    network: KnowledgeNetwork
    embedder: TextEmbedder
    # entities
    entity_ids: np.ndarray  # object (n,)
    entity_names: np.ndarray  # object (n,)
    entity_types: np.ndarray  # int32 (n,): index into type_ids
    type_ids: list[str]
    type_names: list[str]
    entity_descriptions: np.ndarray  # object (n,): description property text or ""
    entity_facts: np.ndarray  # object (n,): [(property display name, short value)] of its short properties
    degree: np.ndarray  # int64 (n,)
    entity_vectors: np.ndarray  # float32 (n, dim)
    has_vector: np.ndarray  # bool (n,)
    # relations
    edge_src: np.ndarray  # int64 (m,)
    edge_tgt: np.ndarray
    edge_rel: np.ndarray  # int32 (m,): index into relation_ids
    edge_weight: np.ndarray  # float32 (m,)
    relation_ids: list[str]
    relation_names: list[str]
    relation_comments: list[str]
    incidence_offsets: np.ndarray  # (n + 1,)
    incidence_edges: np.ndarray  # edge ids grouped by entity
    # chunks
    chunk_ids: np.ndarray  # object (c,)
    chunk_texts: np.ndarray  # object (c,)
    chunk_docs: np.ndarray  # int64 (c,): the entity the chunk belongs to (-1 unknown)
    chunk_sections: np.ndarray  # object (c,)
    chunk_tokens: np.ndarray  # int64 (c,)
    chunk_vectors: np.ndarray  # float32 (c, dim)
    chunk_has_vector: np.ndarray  # bool (c,)
    source_offsets: np.ndarray  # (n + 1,)
    source_chunks: np.ndarray  # chunk ids grouped by source entity
    text_config: TextConfig | None
    alias_rows: dict[str, list[int]]  # a recorded other name (aliases property) -> the entities recording it
    #: per-item memo of what a context shows (descriptions, JSON-line token counts); items are immutable per
    #: version, so a hot query never formats or tokenizes the same entity, edge or chunk twice
    memo: dict[tuple[str, int], object] = field(default_factory=dict)

    # ------------------------------------------------------------------ building
    @classmethod
    def for_store(cls, store: NetworkStore, kn_id: str,
                  advance: Callable[[ModeIndex, NetworkStore, str], ModeIndex | None] | None = None) -> ModeIndex:
        """The index of ``kn_id`` at its current version (built on first use, rebuilt after a reload). ``advance``
        may make it from the cached index of an older version instead (None: it cannot; then a full build) —
        :func:`kgrag.modes.index_delta.current_index` passes its ``updated_index``."""
        version = store.network_version(kn_id)
        key = (store.db_url, kn_id)
        cached = _cache.get(key)
        if cached is not None and cached.version == version:
            return cached
        with _cache_lock:
            cached = _cache.get(key)
            if cached is not None and cached.version == version:
                return cached
            index = advance(cached, store, kn_id) if advance is not None and cached is not None else None
            if index is None:
                index = cls.build(store, kn_id)
            if len(_cache) > 8:
                _cache.clear()
            _cache[key] = index
            return index

    @classmethod
    def build(cls, store: NetworkStore, kn_id: str) -> ModeIndex:
        version = store.network_version(kn_id)
        network = store.get_network(kn_id)
        stats = store.network_stats(kn_id)
        text_config = TextConfig.model_validate(stats["text"]) if stats.get("text") else None
        embedder = store.embedder_for(kn_id)
        type_ids = [ot.id for ot in network.object_types]
        type_pos = {tid: i for i, tid in enumerate(type_ids)}
        name_field = {ot.id: ot.display_key for ot in network.object_types}
        describe = text_config.descriptions if text_config is not None else {}
        ti, tl, tv, tc = t.instances, t.links, t.vectors, t.chunks
        with store.engine.connect() as conn:
            rows = conn.execute(
                select(ti.c.id, ti.c.name, ti.c.object_type_id).where(ti.c.kn_id == kn_id)
            ).all()
            descriptions: dict[str, str] = {}
            for type_id, prop in describe.items():
                stmt = select(ti.c.id, ti.c.properties[prop].as_string()).where(
                    ti.c.kn_id == kn_id, ti.c.object_type_id == type_id
                )
                descriptions.update((r[0], r[1] or "") for r in conn.execute(stmt))
            aliases: dict[str, list[str]] = {}  # alias -> instance ids recording it
            for ot in network.object_types:
                field_name = alias_field(ot)
                if field_name is None:
                    continue
                stmt = select(ti.c.id, ti.c.properties[field_name].as_string()).where(
                    ti.c.kn_id == kn_id, ti.c.object_type_id == ot.id
                )
                for r in conn.execute(stmt):
                    for alias in alias_values(_stored(r[1])):
                        aliases.setdefault(alias, []).append(r[0])
            facts: dict[str, list[tuple[str, str]]] = {}
            for ot in network.object_types:
                for prop in _fact_properties(ot, text_config):
                    stmt = select(ti.c.id, ti.c.properties[prop.name].as_string()).where(
                        ti.c.kn_id == kn_id, ti.c.object_type_id == ot.id
                    )
                    label = prop.display_name or prop.name
                    for r in conn.execute(stmt):
                        value = _fact_value(r[1])
                        if value:
                            facts.setdefault(r[0], []).append((label, value))
            links = conn.execute(
                select(tl.c.relation_type_id, tl.c.source_id, tl.c.target_id).where(tl.c.kn_id == kn_id)
            ).all()
            name_vectors = conn.execute(
                select(tv.c.type_id, tv.c.item_id, tv.c.field, tv.c.vector).where(
                    tv.c.kn_id == kn_id, tv.c.kind == "instance"
                )
            ).all()
            chunk_rows = conn.execute(
                select(tc.c.id, tc.c.doc_id, tc.c.section, tc.c.text, tc.c.tokens)
                .where(tc.c.kn_id == kn_id)
                .order_by(tc.c.doc_id, tc.c.section, tc.c.position)
            ).all()
            chunk_vectors = conn.execute(
                select(tv.c.item_id, tv.c.vector).where(tv.c.kn_id == kn_id, tv.c.kind == "chunk")
            ).all()
        n = len(rows)
        entity_ids = np.array([r[0] for r in rows], dtype=object)
        id_strings = np.array([r[0] for r in rows], dtype=str)
        order = np.argsort(id_strings, kind="stable")  # numpy's order, whatever the database collation
        sorted_ids = id_strings[order]
        entity_types = np.array([type_pos[r[2]] for r in rows], dtype=np.int32)
        dim = _dim(name_vectors, chunk_vectors, embedder)
        entity_vectors, has_vector = _matrix(
            sorted_ids, order, n, dim,
            [(r.item_id, r.vector) for r in name_vectors if r.field == name_field.get(r.type_id)],
        )
        relation_ids = [rt.id for rt in network.relation_types]
        rel_pos = {rid: i for i, rid in enumerate(relation_ids)}
        src = _lookup(sorted_ids, order, np.array([r[1] for r in links], dtype=str))
        tgt = _lookup(sorted_ids, order, np.array([r[2] for r in links], dtype=str))
        rel = np.array([rel_pos[r[0]] for r in links], dtype=np.int32)
        keep = (src >= 0) & (tgt >= 0)
        src, tgt, rel = src[keep], tgt[keep], rel[keep]
        degree = np.bincount(src, minlength=n) + np.bincount(tgt, minlength=n)
        alias_rows = {alias: [int(r) for r in _lookup(sorted_ids, order, np.array(ids, dtype=str)) if r >= 0]
                      for alias, ids in aliases.items()}
        edges = np.arange(len(src), dtype=np.int64)
        inc_offsets, inc_edges = _csr(np.concatenate([src, tgt]), np.concatenate([edges, edges]), n)
        chunk_docs = _lookup(sorted_ids, order, np.array([r.doc_id for r in chunk_rows], dtype=str))
        chunk_ids = np.array([r.id for r in chunk_rows], dtype=object)
        chunk_sorted = np.array([r.id for r in chunk_rows], dtype=str)
        chunk_order = np.argsort(chunk_sorted, kind="stable")
        cvec, chas = _matrix(chunk_sorted[chunk_order], chunk_order, len(chunk_rows), dim,
                             [(r.item_id, r.vector) for r in chunk_vectors])
        with_doc = np.flatnonzero(chunk_docs >= 0)
        src_offsets, src_chunks = _csr(chunk_docs[with_doc], with_doc.astype(np.int64), n)
        return cls(
            kn_id=kn_id,
            version=version,
            network=network,
            embedder=embedder,
            entity_ids=entity_ids,
            entity_names=np.array([r[1] for r in rows], dtype=object),
            entity_types=entity_types,
            type_ids=type_ids,
            type_names=[ot.name for ot in network.object_types],
            entity_descriptions=np.array([descriptions.get(r[0], "") for r in rows], dtype=object),
            entity_facts=np.array([facts.get(r[0], []) for r in rows] + [[]], dtype=object)[:-1],
            degree=degree.astype(np.int64),
            entity_vectors=entity_vectors,
            has_vector=has_vector,
            edge_src=src,
            edge_tgt=tgt,
            edge_rel=rel,
            edge_weight=np.ones(len(src), dtype=np.float32),
            relation_ids=relation_ids,
            relation_names=[rt.name for rt in network.relation_types],
            relation_comments=[rt.comment for rt in network.relation_types],
            incidence_offsets=inc_offsets,
            incidence_edges=inc_edges,
            chunk_ids=chunk_ids,
            chunk_texts=np.array([r.text for r in chunk_rows], dtype=object),
            chunk_docs=chunk_docs,
            chunk_sections=np.array([r.section for r in chunk_rows], dtype=object),
            chunk_tokens=np.array([r.tokens for r in chunk_rows], dtype=np.int64),
            chunk_vectors=cvec,
            chunk_has_vector=chas,
            source_offsets=src_offsets,
            source_chunks=src_chunks,
            text_config=text_config,
            alias_rows=alias_rows,
        )

    # ------------------------------------------------------------------ lookups
    def edges_of(self, entities: np.ndarray) -> np.ndarray:
        """Distinct edge ids at any of ``entities`` (each undirected edge once)."""
        if not len(entities):
            return np.zeros(0, dtype=np.int64)
        parts = [self.incidence_edges[self.incidence_offsets[e] : self.incidence_offsets[e + 1]] for e in entities]
        return np.unique(np.concatenate(parts))

    def chunks_of(self, entities: np.ndarray) -> np.ndarray:
        """Chunk rows whose source is one of ``entities``, grouped in entity order."""
        if not len(entities):
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(
            [self.source_chunks[self.source_offsets[e] : self.source_offsets[e + 1]] for e in entities]
        )

    def entity_description(self, row: int, max_chars: int = 240) -> str:
        """The description property's text (clipped), else one made from the entity's links:
        ``症状「发热」: 症状 ×1024 (感冒、肺炎、…)`` — which relations it is in and its best-known neighbours."""
        key = ("description", row)
        known = self.memo.get(key)
        if known is None:
            known = self.memo[key] = self._describe(row, max_chars)
        return str(known)

    def _describe(self, row: int, max_chars: int) -> str:
        """``<description text, clipped>`` + ``; <property>: <value>`` for its short properties + ``; <relation>
        ×n (three best-known neighbours…)`` for up to :data:`DESCRIBED_RELATIONS` of its relations."""
        type_name = self.type_names[self.entity_types[row]]
        text = str(self.entity_descriptions[row] or "").strip()
        parts = [text if len(text) <= max_chars else text[:max_chars] + "…"] if text else []
        parts += [f"{label}: {value}" for label, value in self.entity_facts[row]]
        edges = self.incidence_edges[self.incidence_offsets[row] : self.incidence_offsets[row + 1]]
        rels = self.edge_rel[edges]
        for rel in np.unique(rels)[:DESCRIBED_RELATIONS]:
            mine = edges[rels == rel]
            others = np.where(self.edge_src[mine] == row, self.edge_tgt[mine], self.edge_src[mine])
            top = others[np.argsort(-self.degree[others], kind="stable")[:3]]
            names = "、".join(str(self.entity_names[o]) for o in top)
            parts.append(f"{self.relation_names[rel]} ×{len(mine)} ({names}{'…' if len(mine) > 3 else ''})")
        return f"{type_name}「{self.entity_names[row]}」: " + ("; ".join(parts) or "-")

    def relation_row(self, edge: int) -> dict[str, object]:
        """One edge as the context shows it: both ends, the relation, a sentence, keywords and weight."""
        s, o, r = int(self.edge_src[edge]), int(self.edge_tgt[edge]), int(self.edge_rel[edge])
        src, tgt = str(self.entity_names[s]), str(self.entity_names[o])
        src_type, tgt_type = self.type_names[self.entity_types[s]], self.type_names[self.entity_types[o]]
        name = self.relation_names[r]
        sentence = (f"{src}（{src_type}）的{name}：{tgt}（{tgt_type}）" if has_cjk(name)
                    else f"{src} ({src_type}) {name} {tgt} ({tgt_type})")
        return {
            "entity1": src,
            "entity2": tgt,
            "relation": self.relation_ids[r],
            "description": sentence,
            "keywords": self.relation_names[r],
            "weight": float(self.edge_weight[edge]),
        }


#: relations (by type) an entity description summarises
DESCRIBED_RELATIONS = 8
#: a property value longer than this is a text, not a fact for the description
FACT_CHARS = 80


def _fact_properties(ot: ObjectType, text_config: TextConfig | None) -> list[DataProperty]:
    """Short properties worth stating in a description: not the name, not text-typed, not chunked sections."""
    skip = {ot.display_key}
    if text_config is not None:
        skip |= set(text_config.sections.get(ot.id, [])) | {text_config.descriptions.get(ot.id, "")}
    return [p for p in ot.data_properties if p.name not in skip and p.type.split("(")[0].strip().lower() != "text"]


def _stored(raw: object) -> str | list:
    """A property read with ``as_string()``: a list comes back as its JSON text, decoded here. SQLite's
    ``json_extract`` hands numbers back as numbers (SQLAlchemy 2.0 passes them through): they become text."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        return json.dumps(raw) if isinstance(raw, bool) else str(raw)
    if raw.startswith("["):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw or ""


def _fact_value(raw: object) -> str:
    """A stored value as one short line ('' when empty or too long): lists joined with 、."""
    value = _stored(raw)
    if isinstance(value, list):
        value = "、".join(str(v) for v in value if v not in (None, ""))
    value = value.strip()
    return value if 0 < len(value) <= FACT_CHARS else ""


def _dim(name_vectors: list, chunk_vectors: list, embedder: TextEmbedder) -> int:
    for rows in (name_vectors, chunk_vectors):
        if rows:
            return len(rows[0].vector) // 4
    return int(embedder.dim)


def _matrix(
    sorted_ids: np.ndarray, order: np.ndarray, n: int, dim: int, items: list[tuple[str, bytes]]
) -> tuple[np.ndarray, np.ndarray]:
    """An ``(n, dim)`` float32 matrix with each item's vector at its entity/chunk row; rows without one are 0."""
    matrix = np.zeros((n, dim), dtype=np.float32)
    present = np.zeros(n, dtype=bool)
    if items and n:
        rows = _lookup(sorted_ids, order, np.array([i for i, _ in items], dtype=str))
        ok = rows >= 0
        blob = np.frombuffer(b"".join(v for _, v in items), dtype=np.float32).reshape(len(items), dim)
        matrix[rows[ok]] = blob[ok]
        present[rows[ok]] = True
    return matrix, present
