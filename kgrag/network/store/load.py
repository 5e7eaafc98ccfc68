"""Loading a network into the store: validation, derived rows (tokens, embeddings), one write transaction.

    StoreLoader(core, StoreIndex(core)).load(network, instances, links)   # -> LoadStats

Contract: :meth:`StoreLoader.load` validates the network and its data (raising ``ValueError`` for an inconsistent
one), computes every derived row — instance rows, text-index tokens, embeddings through the embedder's on-disk
cache — *before* opening the transaction, then replaces the network in ONE transaction with batched
``executemany`` inserts: readers see the old version until the commit, and a failure anywhere leaves the
previous version intact. On PostgreSQL the transaction first takes an advisory lock on the network's id (two
loads of one network queue instead of failing on its key; loads of different networks run side by side), also
writes the text index's term statistics (``kn_text_terms``) and runs ``ANALYZE`` after the commit; on SQLite
writers queue on the database lock (WAL, 60 s busy timeout) while readers go on. Which values get indexed: a data property whose ``condition_operations`` include
``match`` goes into the text index, one with ``knn`` into the vectors; every object and relation type gets both,
over ``"name comment"`` (the text index adds the id). :meth:`StoreLoader.delete` removes a network.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from kgrag.network import tables as t
from kgrag.network.chunking import chunk_instances
from kgrag.network.model import Instance, KnowledgeNetwork, Link, ObjectType, RelationType
from kgrag.network.store.core import StoreCore
from kgrag.network.store.index import StoreIndex, fts_terms, index_tokens
from kgrag.rank.embedder_factory import TextEmbedder
from kgrag.rank.token_count import TokenCounter

__all__ = ["LoadStats", "Rows", "StoreLoader", "check_schema"]

BATCH = 5000

#: the rows of one load, by table name (see :data:`StoreLoader.TABLES`)
Rows = dict[str, list[dict[str, Any]]]


@dataclass
class LoadStats:
    kn_id: str
    object_types: int
    relation_types: int
    action_types: int
    instances: int
    links: int
    text_rows: int
    vectors: int
    chunks: int
    seconds: float
    prepare_seconds: float
    write_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(_value_text(v) for v in value)
    return str(value)


def _chunks(rows: list[dict[str, Any]], size: int = BATCH) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _term_rows(kn_id: str, text_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``kn_text_terms`` rows of one network (PostgreSQL): text rows holding each token, and the ``''`` total."""
    frequency: Counter[str] = Counter()
    total = 0
    for row in text_rows:
        tokens = fts_terms(row["text"])
        total += len(tokens)
        frequency.update(set(tokens))
    out = [{"token": "", "kn_id": kn_id, "rows": len(text_rows), "tokens": total}]
    out += [{"token": tok, "kn_id": kn_id, "rows": n, "tokens": n} for tok, n in frequency.items() if tok]
    return out



# ---------------------------------------------------------------------------------------------- prepare steps
@dataclass
class _Embeddable:
    """Texts waiting for a vector, in load order, with their ``(kind, type_id, item_id, field)`` keys."""

    keys: list[tuple[str, str, str, str]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def add(self, kind: str, type_id: str, item_id: str, field_name: str, text_value: str) -> None:
        self.keys.append((kind, type_id, item_id, field_name))
        self.texts.append(text_value)


def check_schema(network: KnowledgeNetwork) -> dict[str, ObjectType]:
    """The network's object types by id; ``ValueError`` for a duplicate type id or a relation type naming an
    unknown object type."""
    object_types: dict[str, ObjectType] = {}
    for ot in network.object_types:
        if ot.id in object_types:
            raise ValueError(f"network {network.kn_id!r}: duplicate object type id {ot.id!r}")
        object_types[ot.id] = ot
    seen: set[str] = set()
    for rt in network.relation_types:
        if rt.id in seen:
            raise ValueError(f"network {network.kn_id!r}: duplicate relation type id {rt.id!r}")
        seen.add(rt.id)
        for end in (rt.source_object_type_id, rt.target_object_type_id):
            if end not in object_types:
                raise ValueError(
                    f"network {network.kn_id!r}: relation type {rt.id!r} names unknown object type {end!r}"
                )
    actions: set[str] = set()
    for at in network.action_types:
        if at.id in actions:
            raise ValueError(f"network {network.kn_id!r}: duplicate action type id {at.id!r}")
        actions.add(at.id)
    return object_types


def _text_row(kn_id: str, kind: str, type_id: str, item_id: str, field_name: str, tokens: list[str]
              ) -> dict[str, Any]:
    """One ``kn_text_rows`` row: the space-joined index tokens of one (item, field) and its scope token."""
    return {
        "text": " ".join(tokens),
        "scope": t.scope_token(kn_id, kind, type_id, field_name),
        "kn_id": kn_id,
        "kind": kind,
        "type_id": type_id,
        "item_id": item_id,
        "field": field_name,
    }


def _fields_with(network: KnowledgeNetwork, operation: str) -> dict[str, list[str]]:
    """``{object type id: names of its data properties whose condition operations include operation}``."""
    return {
        ot.id: [p.name for p in ot.data_properties if operation in p.condition_operations]
        for ot in network.object_types
    }


def _index_instance(kn_id: str, type_id: str, inst: Instance, match_fields: list[str], knn_fields: list[str],
                    text_rows: list[dict[str, Any]], pending: _Embeddable) -> None:
    """The text rows (``match`` fields) and texts to embed (``knn`` fields) of one instance."""
    for field_name in match_fields:
        tokens = index_tokens(_value_text(inst.properties.get(field_name)))
        if tokens:
            text_rows.append(_text_row(kn_id, "instance", type_id, inst.id, field_name, tokens))
    for field_name in knn_fields:
        value = inst.properties.get(field_name)
        value_text = "、".join(map(str, value)) if isinstance(value, list) else _value_text(value)
        if value_text.strip():
            pending.add("instance", type_id, inst.id, field_name, value_text.strip())


def instance_rows(network: KnowledgeNetwork, instances: list[Instance], object_types: dict[str, ObjectType],
                  text_rows: list[dict[str, Any]], pending: _Embeddable
                  ) -> tuple[list[dict[str, Any]], dict[str, set[str]]]:
    """``(kn_instances rows, instance ids by object type)``; appends the instances' text rows and texts to
    embed. ``ValueError`` for an instance of an unknown type or a duplicate instance id within a type."""
    kn = network.kn_id
    match_fields, knn_fields = _fields_with(network, "match"), _fields_with(network, "knn")
    rows: list[dict[str, Any]] = []
    ids_by_type: dict[str, set[str]] = {ot_id: set() for ot_id in object_types}
    for inst in instances:
        ot = object_types.get(inst.object_type_id)
        if ot is None:
            raise ValueError(f"instance {inst.id!r} has unknown object type {inst.object_type_id!r}")
        known = ids_by_type[ot.id]
        if inst.id in known:
            raise ValueError(f"duplicate instance id {inst.id!r} of object type {ot.id!r}")
        known.add(inst.id)
        name = inst.properties.get(ot.display_key)
        rows.append(
            {
                "kn_id": kn,
                "object_type_id": ot.id,
                "id": inst.id,
                "name": _value_text(name) if name is not None else inst.id,
                "properties": inst.properties,
            }
        )
        _index_instance(kn, ot.id, inst, match_fields[ot.id], knn_fields[ot.id], text_rows, pending)
    return rows, ids_by_type


def _check_link(link: Link, relation_types: dict[str, RelationType], ids_by_type: dict[str, set[str]]
                ) -> RelationType:
    """The link's relation type; ``ValueError`` for an unknown one or an endpoint of the wrong type."""
    rt = relation_types.get(link.relation_type_id)
    if rt is None:
        raise ValueError(
            f"link {link.source_id!r} -> {link.target_id!r}: unknown relation type {link.relation_type_id!r}"
        )
    if link.source_id not in ids_by_type[rt.source_object_type_id]:
        raise ValueError(
            f"link of {rt.id!r}: source {link.source_id!r} is not an instance of {rt.source_object_type_id!r}"
        )
    if link.target_id not in ids_by_type[rt.target_object_type_id]:
        raise ValueError(
            f"link of {rt.id!r}: target {link.target_id!r} is not an instance of {rt.target_object_type_id!r}"
        )
    return rt


def link_rows(network: KnowledgeNetwork, links: Iterable[Link], ids_by_type: dict[str, set[str]]
              ) -> list[dict[str, Any]]:
    """``kn_links`` rows, each distinct (relation, source, target) once, in the order given (see
    :func:`_check_link` for the errors)."""
    relation_types = {rt.id: rt for rt in network.relation_types}
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for link in links:
        rt = _check_link(link, relation_types, ids_by_type)
        key = (rt.id, link.source_id, link.target_id)
        if key not in seen:
            seen.add(key)
            rows.append({"kn_id": network.kn_id, "relation_type_id": rt.id, "source_id": link.source_id,
                         "target_id": link.target_id})
    return rows


def type_rows(network: KnowledgeNetwork) -> Rows:
    """The schema rows: ``object_types``, ``relation_types`` and ``action_types``, in declaration order."""
    kn = network.kn_id
    return {
        "object_types": [
            {"kn_id": kn, "id": ot.id, "name": ot.name, "comment": ot.comment, "position": pos,
             "schema": ot.model_dump(mode="json")}
            for pos, ot in enumerate(network.object_types)
        ],
        "relation_types": [
            {"kn_id": kn, "id": rt.id, "name": rt.name, "comment": rt.comment, "position": pos,
             "source_object_type_id": rt.source_object_type_id,
             "target_object_type_id": rt.target_object_type_id, "schema": rt.model_dump(mode="json")}
            for pos, rt in enumerate(network.relation_types)
        ],
        "action_types": [
            {"kn_id": kn, "id": at.id, "name": at.name, "comment": at.comment, "position": pos,
             "schema": at.model_dump(mode="json")}
            for pos, at in enumerate(network.action_types)
        ],
    }


def _index_types(network: KnowledgeNetwork, text_rows: list[dict[str, Any]], pending: _Embeddable) -> None:
    """A text row (id, name, comment) and a text to embed (name, comment) for every object and relation type."""
    for kind, types in (("object_type", network.object_types), ("relation_type", network.relation_types)):
        for typ in types:
            tokens = index_tokens(f"{typ.id} {typ.name} {typ.comment}")
            if tokens:
                text_rows.append(_text_row(network.kn_id, kind, "", typ.id, "*", tokens))
            pending.add(kind, "", typ.id, "*", f"{typ.name} {typ.comment}".strip() or typ.id)


def chunk_rows(network: KnowledgeNetwork, instances: list[Instance], pending: _Embeddable
               ) -> list[dict[str, Any]]:
    """``kn_chunks`` rows of the network's text sections (none without ``network.text``); each chunk's text is
    appended to the texts to embed."""
    rows: list[dict[str, Any]] = []
    if network.text is not None and network.text.sections:
        for chunk in chunk_instances(instances, network.text, TokenCounter.default()):
            rows.append({"kn_id": network.kn_id, **chunk.__dict__})
            pending.add("chunk", "", chunk.id, chunk.section, chunk.text)
    return rows


def network_row(network: KnowledgeNetwork, embedder_name: str, rows: Rows, ids_by_type: dict[str, set[str]]
                ) -> dict[str, Any]:
    """The ``kn_networks`` row of a load: a fresh version and the load's counts (``stats``)."""
    stats = {
        "instances": len(rows["instances"]),
        "links": len(rows["links"]),
        "text_rows": len(rows["text"]),
        "vectors": len(rows["vectors"]),
        "chunks": len(rows["chunks"]),
        "text": network.text.model_dump(mode="json") if network.text is not None else None,
        "instances_by_type": {k: len(v) for k, v in ids_by_type.items()},
    }
    return {
        "kn_id": network.kn_id,
        "name": network.name,
        "comment": network.comment,
        "version": uuid.uuid4().hex,
        "embedder": embedder_name if rows["vectors"] else "",
        "loaded_at": time.time(),
        "stats": stats,
    }


# ---------------------------------------------------------------------------------------------- the loader
class StoreLoader:
    """:meth:`load` and :meth:`delete` over ``core``'s database; ``index`` decides which texts get a vector and
    drops its caches of a reloaded network (see the module docstring)."""

    def __init__(self, core: StoreCore, index: StoreIndex) -> None:
        self.core = core
        self.index = index

    def load(
        self,
        network: KnowledgeNetwork,
        instances: Iterable[Instance],
        links: Iterable[Link],
        embedder: TextEmbedder | None = None,
    ) -> LoadStats:
        """Replace network ``network.kn_id`` by this one, in one transaction (see the module docstring).

        ``embedder`` (default: the store's) makes every vector of this network; its ``model_name`` is recorded
        and later queries of the network embed with the same model (:meth:`StoreIndex.embedder_for`).

        Raises ``ValueError`` for an inconsistent network: duplicate type ids, a relation type naming an unknown
        object type, an instance of an unknown type, a duplicate instance id within a type, a link of an unknown
        relation type or whose endpoint is not an instance of the relation's source/target type.
        """
        start = time.perf_counter()
        rows = self.prepare(network, instances, links, embedder or self.index.embedder)
        prepared = time.perf_counter()
        self.write(network.kn_id, rows)
        done = time.perf_counter()
        return LoadStats(
            kn_id=network.kn_id,
            object_types=len(network.object_types),
            relation_types=len(network.relation_types),
            action_types=len(network.action_types),
            instances=len(rows["instances"]),
            links=len(rows["links"]),
            text_rows=len(rows["text"]),
            vectors=len(rows["vectors"]),
            chunks=len(rows["chunks"]),
            seconds=done - start,
            prepare_seconds=prepared - start,
            write_seconds=done - prepared,
        )

    def prepare(
        self, network: KnowledgeNetwork, instances: Iterable[Instance], links: Iterable[Link],
        embedder: TextEmbedder,
    ) -> Rows:
        """Every row of a load (by table name, see :data:`TABLES`), validated and derived, nothing written."""
        instances = list(instances)
        object_types = check_schema(network)
        text_rows: list[dict[str, Any]] = []
        pending = _Embeddable()
        instance_table, ids_by_type = instance_rows(network, instances, object_types, text_rows, pending)
        link_table = link_rows(network, links, ids_by_type)
        _index_types(network, text_rows, pending)
        chunk_table = chunk_rows(network, instances, pending)
        rows: Rows = {**type_rows(network), "instances": instance_table, "links": link_table, "text": text_rows,
                      "vectors": self._vector_rows(network.kn_id, pending, embedder), "chunks": chunk_table}
        return {"network": [network_row(network, embedder.model_name, rows, ids_by_type)], **rows}

    def _vector_rows(self, kn_id: str, pending: _Embeddable, embedder: TextEmbedder) -> list[dict[str, Any]]:
        """``kn_vectors`` rows of the pending texts the embedder can represent (:meth:`StoreIndex.representable`)."""
        matrix: np.ndarray | None
        if getattr(embedder, "representable", None) is not None:
            # an embedder that knows its own vocabulary (domain vectors): encode once, a zero row = unrepresentable
            matrix = (embedder.encode(pending.texts, batch_size=128) if pending.texts
                      else np.zeros((0, 1), np.float32))
            keep = (np.abs(matrix).sum(axis=1) > 0).tolist()
            matrix = matrix[np.asarray(keep, dtype=bool)] if pending.texts else matrix
        else:  # check first: encoding texts of unknown tokens costs model time for useless vectors
            keep = self.index.representable(pending.texts, embedder)
            matrix = None
        keys = [k for k, ok in zip(pending.keys, keep, strict=True) if ok]
        texts = [v for v, ok in zip(pending.texts, keep, strict=True) if ok]
        if not texts:
            return []
        if matrix is None:
            matrix = embedder.encode(texts, batch_size=128)
        return [
            {"kn_id": kn_id, "kind": kind, "type_id": type_id, "item_id": item_id, "field": field_name,
             "vector": np.asarray(vec, np.float32).tobytes()}
            for (kind, type_id, item_id, field_name), vec in zip(keys, matrix, strict=True)
        ]

    #: table of each kind of row of :data:`Rows`, in write order
    TABLES = {
        "network": t.networks,
        "object_types": t.object_types,
        "relation_types": t.relation_types,
        "action_types": t.action_types,
        "instances": t.instances,
        "links": t.links,
        "text": t.text_index,
        "vectors": t.vectors,
        "chunks": t.chunks,
    }

    def write(self, kn_id: str, rows: Rows) -> None:
        """Replace ``kn_id`` by the :meth:`prepare`d ``rows`` in one transaction, then drop the store's caches
        of it."""
        postgres = self.core.dialect == "postgresql"
        with self.core.engine.begin() as conn:
            if postgres:  # one load of a network at a time: the second waits for the first's commit
                conn.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(kn_id, 0))))
            self._delete(conn, kn_id)
            for name in self.TABLES:
                self._insert(conn, name, rows[name])
            if postgres:
                for chunk in _chunks(_term_rows(kn_id, rows["text"])):
                    conn.execute(t.text_terms.insert(), chunk)
            if conn.dialect.name == "sqlite":
                t.fts_sync_insert(conn, kn_id)
                # planner statistics: without them SQLite walks a whole type in id order for
                # ``name = ? ORDER BY id LIMIT n`` and never splits an OR over two indexes (5 ms -> 0.03 ms)
                conn.exec_driver_sql("ANALYZE")
        if postgres:  # planner statistics for the new rows, outside the load's transaction
            with self.core.engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE kn_instances, kn_links, kn_text_rows, kn_text_terms, kn_vectors")
        self.core.forget(kn_id)
        self.index.forget(kn_id)

    def _insert(self, conn: Connection, name: str, rows: list[dict[str, Any]]) -> None:
        """Batched ``executemany`` of ``rows`` into table ``name`` (no commit: the caller's transaction)."""
        table = self.TABLES[name]
        for chunk in _chunks(rows):
            conn.execute(table.insert(), chunk)

    @staticmethod
    def _delete(conn: Connection, kn_id: str) -> None:
        if conn.dialect.name == "sqlite":
            t.fts_sync_delete(conn, kn_id)  # while the rows it names still exist
        tables = (*t.DATA_TABLES, t.text_terms) if conn.dialect.name == "postgresql" else t.DATA_TABLES
        for table in (*tables, t.networks):
            conn.execute(delete(table).where(table.c.kn_id == kn_id))

    def delete(self, kn_id: str) -> bool:
        """Remove a network (one transaction); False when it was not there."""
        with self.core.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(kn_id, 0))))
            found = conn.execute(select(t.networks.c.kn_id).where(t.networks.c.kn_id == kn_id)).first()
            self._delete(conn, kn_id)
        self.core.forget(kn_id)
        return found is not None
