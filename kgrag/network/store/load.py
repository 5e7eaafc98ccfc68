"""Loading a network into the store: validation, derived rows (tokens, embeddings), one write transaction.

    StoreLoader(core, StoreIndex(core)).load(network, instances, links)   # -> LoadStats

Contract: :meth:`StoreLoader.load` validates the network and its data (raising ``ValueError`` for an inconsistent
one), computes every derived row — instance rows, text-index tokens, embeddings through the embedder's on-disk
cache — *before* opening the transaction, then replaces the network in ONE transaction with batched
``executemany`` inserts: readers see the old version until the commit, and a failure anywhere leaves the
previous version intact. On PostgreSQL the transaction first takes an advisory lock on the network's id (two
loads of one network queue instead of failing on its key; loads of different networks run side by side), also
writes the text index's term statistics (``kn_text_terms``) and runs ``ANALYZE`` after the commit; on SQLite
writers queue on the database lock (WAL, 60 s busy timeout) while readers go on. The rows themselves (and which
values get indexed) are :mod:`kgrag.network.store.rows`'s; this module adds the vectors, through the index's
:meth:`~kgrag.network.store.index.StoreIndex.representable`. :meth:`StoreLoader.delete` removes a network.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link
from kgrag.network.store.core import StoreCore
from kgrag.network.store.index import StoreIndex, fts_terms
from kgrag.network.store.rows import (
    Embeddable,
    Rows,
    check_schema,
    chunk_rows,
    index_types,
    instance_rows,
    link_rows,
    network_row,
    type_rows,
)
from kgrag.rank.embedder_factory import TextEmbedder

__all__ = ["LoadStats", "StoreLoader"]

BATCH = 5000


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
    version: str = ""  # the version the load wrote

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


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
        source: dict[str, Any] | None = None,
    ) -> LoadStats:
        """Replace network ``network.kn_id`` by this one, in one transaction (see the module docstring).

        ``source`` (where the network came from, e.g. ``{"kind": "file", "path": …}``) is kept in its stats.

        ``embedder`` (default: the store's) makes every vector of this network; its ``model_name`` is recorded
        and later queries of the network embed with the same model (:meth:`StoreIndex.embedder_for`).

        Raises ``ValueError`` for an inconsistent network: duplicate type ids, a relation type naming an unknown
        object type, an instance of an unknown type, a duplicate instance id within a type, a link of an unknown
        relation type or whose endpoint is not an instance of the relation's source/target type.
        """
        start = time.perf_counter()
        rows = self.prepare(network, instances, links, embedder or self.index.embedder)
        if source is not None:
            rows["network"][0]["stats"]["source"] = source
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
            version=rows["network"][0]["version"],
        )

    def prepare(
        self, network: KnowledgeNetwork, instances: Iterable[Instance], links: Iterable[Link],
        embedder: TextEmbedder,
    ) -> Rows:
        """Every row of a load (by table name, see :data:`TABLES`), validated and derived, nothing written."""
        instances = list(instances)
        object_types = check_schema(network)
        text_rows: list[dict[str, Any]] = []
        pending = Embeddable()
        instance_table, ids_by_type = instance_rows(network, instances, object_types, text_rows, pending)
        link_table = link_rows(network, links, ids_by_type)
        index_types(network, text_rows, pending)
        chunk_table = chunk_rows(network, instances, pending)
        rows: Rows = {**type_rows(network), "instances": instance_table, "links": link_table, "text": text_rows,
                      "vectors": self._vector_rows(network.kn_id, pending, embedder), "chunks": chunk_table}
        return {"network": [network_row(network, embedder.model_name, rows, ids_by_type)], **rows}

    def _vector_rows(self, kn_id: str, pending: Embeddable, embedder: TextEmbedder) -> list[dict[str, Any]]:
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
        self.index.build_ann(kn_id)  # big object types: their ANN bases now, not at the first query

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
        self.index.forget(kn_id)
        self.index.ann_files.remove_network(kn_id)
        return found is not None
