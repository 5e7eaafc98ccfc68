"""Loading a network into the store: validation, derived rows (tokens, embeddings), one write transaction.

    StoreLoader(core, StoreIndex(core)).load(network, instances, links)   # -> LoadStats

Contract: :meth:`StoreLoader.load` validates the network and its data (raising ``ValueError`` for an inconsistent
one) *before* opening the transaction, then replaces the network in ONE transaction: the derived rows — instance
rows, text-index tokens, embeddings through the embedder's on-disk cache — are made and written
:data:`LOAD_CHUNK` instances at a time with batched ``executemany`` inserts (a load holds its input and one
chunk, not every derived row; input a reader has checked and can read again —
:class:`~kgrag.network.store.rows.CheckedInstances`, a schema file's data files — is not held at all: its ids
are taken as checked, its rows read again as they are written, its links checked and de-duplicated as they come,
a bad one rolling the transaction back), the full-text index is filled once at the end (on SQLite each (type, field)'s
text rows in one block of ids: :class:`~kgrag.network.store.text_layout.ScopeBlocks`), and big object types get
their ANN bases after the commit (:mod:`kgrag.network.store.ann`). A load may defer its instances' vectors
(``defer_vectors``): they are then made after the commit by :mod:`kgrag.network.store.fill`. On SQLite the load's connection reads the file
through the pager, not the memory map (:func:`~kgrag.network.store.core.unmapped`). Readers see the old version until the commit, and a
failure anywhere leaves the previous version intact. On PostgreSQL the transaction first takes an advisory lock on the network's id (two
loads of one network queue instead of failing on its key; loads of different networks run side by side), also
writes the text index's term statistics (``kn_text_terms``) and runs ``ANALYZE`` after the commit; on SQLite
writers queue on the database lock (WAL, 60 s busy timeout) while readers go on. The rows themselves (and which
values get indexed) are :mod:`kgrag.network.store.rows`'s; this module adds the vectors, through the index's
:meth:`~kgrag.network.store.index.StoreIndex.representable`. :meth:`StoreLoader.delete` removes a network.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
from sqlalchemy import JSON, Table, delete, func, select
from sqlalchemy.engine import Connection

from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link, fields_with
from kgrag.network.store.core import VECTORS_PENDING, StoreCore, unmapped
from kgrag.network.store.index import StoreIndex
from kgrag.network.store.rows import (
    CheckedInstances,
    Embeddable,
    check_schema,
    checked_ids,
    checked_instance_rows,
    chunk_rows,
    distinct_links,
    index_types,
    instance_ids,
    link_keys,
    network_row,
    type_rows,
)
from kgrag.network.store.text_layout import ScopeBlocks
from kgrag.network.store.text_rank import fts_terms
from kgrag.rank.embedder_factory import TextEmbedder
from kgrag.rank.sentence_embedder import bulk_texts

__all__ = ["LoadStats", "StoreLoader"]

BATCH = 5000
#: instances derived (text rows, vectors) and written per step of a load: what a load holds beyond its input
LOAD_CHUNK = 20_000
#: rows from which an insert on PostgreSQL is a ``COPY`` (fewer: ``executemany``)
COPY_MIN_ROWS = 1_000

#: ``progress(stage, done, total)`` of a load's stages
Progress = Callable[[str, int, int], None]


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


def _chunks(rows: Iterable[Any], size: int = BATCH) -> Iterator[list]:
    """Lists of ``size`` rows (the last shorter) of a list or of rows read as they come."""
    if isinstance(rows, list):
        for start in range(0, len(rows), size):
            yield rows[start : start + size]
        return
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield chunk


def _copy(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """PostgreSQL's ``COPY`` of ``rows`` (dicts with the same keys) into ``table``, on the transaction's own
    psycopg connection; JSON columns serialised as the engine serialises them."""
    from psycopg.types.json import Json

    columns = [c.name for c in table.columns if c.name in rows[0]]
    json_columns = {c.name for c in table.columns if isinstance(c.type, JSON)}
    dumps = conn.dialect._json_serializer or json.dumps  # type: ignore[attr-defined]
    driver = conn.connection.driver_connection
    statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN"  # our own table and column names
    with driver.cursor() as cursor, cursor.copy(statement) as copy:  # type: ignore[union-attr]
        for row in rows:
            copy.write_row([Json(row[c], dumps) if c in json_columns and row[c] is not None else row[c]
                            for c in columns])


class _Terms:
    """``kn_text_terms`` rows of one network (PostgreSQL), counted as its text rows are written: text rows holding
    each token, and the ``''`` total."""

    def __init__(self) -> None:
        self.frequency: Counter[str] = Counter()
        self.rows = 0
        self.tokens = 0

    def add(self, text_rows: list[dict[str, Any]]) -> None:
        for row in text_rows:
            tokens = fts_terms(row["text"])
            self.rows += 1
            self.tokens += len(tokens)
            self.frequency.update(set(tokens))

    def table(self, kn_id: str) -> list[dict[str, Any]]:
        out = [{"token": "", "kn_id": kn_id, "rows": self.rows, "tokens": self.tokens}]
        return out + [{"token": tok, "kn_id": kn_id, "rows": n, "tokens": n} for tok, n in self.frequency.items()
                      if tok]


def _scope_blocks(conn: Connection, network: KnowledgeNetwork, ids_by_type: dict[str, set[str]]) -> ScopeBlocks:
    """The text rows' ids of a full load on SQLite (:class:`~kgrag.network.store.text_layout.ScopeBlocks`): a
    block per (object type, ``match`` field), as large as the type has instances, after every stored row."""
    first = t.last_text_row_id(conn) + 1
    match_fields = fields_with(network, "match")
    return ScopeBlocks(first, {t.scope_token(network.kn_id, "instance", ot.id, name): len(ids_by_type.get(ot.id, ()))
                               for ot in network.object_types for name in match_fields[ot.id]})


def _term_rows(kn_id: str, text_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``kn_text_terms`` rows of these text rows (what a full load writes for them)."""
    terms = _Terms()
    terms.add(text_rows)
    return terms.table(kn_id)


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
        progress: Progress | None = None,
        defer_vectors: bool = False,
    ) -> LoadStats:
        """Replace network ``network.kn_id`` by this one, in one transaction (see the module docstring).

        ``source`` (where the network came from, e.g. ``{"kind": "file", "path": …}``) is kept in its stats.

        ``embedder`` (default: the store's) makes every vector of this network; its ``model_name`` is recorded
        and later queries of the network embed with the same model (:meth:`StoreIndex.embedder_for`).
        ``progress(stage, done, total)`` hears each stage (``instances`` — ``rows`` when their vectors are
        deferred —, ``links``, ``index``) as it goes.

        ``defer_vectors``: the instances' ``knn`` texts are not embedded here — the network is searchable by its
        text index and conditions once this returns, and its stats carry ``vectors_pending`` (``done`` /
        ``total`` instances, :data:`~kgrag.network.store.core.VECTORS_PENDING`) until
        :class:`~kgrag.network.store.fill.VectorFill` has made them; knn answers nothing meanwhile.

        Raises ``ValueError`` for an inconsistent network: duplicate type ids, a relation type naming an unknown
        object type, an instance of an unknown type, a duplicate instance id within a type, a link of an unknown
        relation type or whose endpoint is not an instance of the relation's source/target type.
        """
        start = time.perf_counter()
        embedder = embedder or self.index.embedder
        object_types = check_schema(network)
        link_table: Iterable[Link]
        if isinstance(instances, CheckedInstances):  # read again from their files as they are written
            ids_by_type = checked_ids(instances.ids_by_type, object_types)
            total_links = len(links) if isinstance(links, Sized) else 0
            link_table = distinct_links(network, links, ids_by_type)  # checked as they come: a bad one rolls back
        else:
            instances = instances if isinstance(instances, list) else list(instances)
            ids_by_type = instance_ids(instances, object_types)  # every check first: nothing written on a bad row
            link_table = link_keys(network, links, ids_by_type)
            total_links = len(link_table)
        prepared = time.perf_counter()
        counts, version = self._write(network, instances, (link_table, total_links), ids_by_type, embedder, source,
                                      progress or (lambda stage, done, total: None), defer_vectors)
        done = time.perf_counter()
        return LoadStats(
            kn_id=network.kn_id,
            object_types=len(network.object_types),
            relation_types=len(network.relation_types),
            action_types=len(network.action_types),
            instances=counts["instances"],
            links=counts["links"],
            text_rows=counts["text"],
            vectors=counts["vectors"],
            chunks=counts["chunks"],
            seconds=done - start,
            prepare_seconds=prepared - start,
            write_seconds=done - prepared,
            version=version,
        )

    def _write(self, network: KnowledgeNetwork, instances: Iterable[Instance], links: tuple[Iterable[Link], int],
               ids_by_type: dict[str, set[str]], embedder: TextEmbedder, source: dict[str, Any] | None,
               progress: Progress, defer_vectors: bool = False) -> tuple[dict[str, int], str]:
        """The load's one transaction: the old network deleted, then the rows derived and written
        :data:`LOAD_CHUNK` instances at a time (their text rows and vectors with them, unless deferred), the
        links, the types' and chunks' rows, the network row with its counts; the FTS index filled once at the
        end (SQLite)."""
        kn_id = network.kn_id
        postgres = self.core.dialect == "postgresql"
        counts = dict.fromkeys(("instances", "links", "text", "vectors", "chunks"), 0)
        terms = _Terms()  # PostgreSQL's term statistics
        blocks: ScopeBlocks | None = None  # SQLite's text row ids (set once the old network is deleted)

        def insert(conn: Connection, name: str, rows: list[dict[str, Any]]) -> None:
            if name == "text" and blocks is not None:
                blocks.assign(rows)
            self._insert(conn, name, rows)
            counts[name] += len(rows)
            if postgres and name == "text":
                terms.add(rows)

        with unmapped(self.core.engine) as conn, conn.begin():
            if postgres:  # one load of a network at a time: the second waits for the first's commit
                conn.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(kn_id, 0))))
            self._delete(conn, kn_id)
            types = type_rows(network)
            object_types = {ot.id: ot for ot in network.object_types}
            for name in ("object_types", "relation_types", "action_types"):
                self._insert(conn, name, types[name])
            total = sum(len(ids) for ids in ids_by_type.values())
            stage = "rows" if defer_vectors else "instances"  # a deferred load's instances come without vectors
            blocks = _scope_blocks(conn, network, ids_by_type) if not postgres else None
            progress(stage, 0, total)
            for chunk in _chunks(instances, LOAD_CHUNK):
                text_rows: list[dict[str, Any]] = []
                pending = Embeddable()
                instance_table = checked_instance_rows(network, chunk, object_types, text_rows, pending)
                insert(conn, "instances", instance_table)
                insert(conn, "text", text_rows)
                if not defer_vectors:
                    insert(conn, "vectors", self.vector_rows(kn_id, pending, embedder))
                progress(stage, counts["instances"], total)
            link_table, total_links = links
            progress("links", 0, total_links)
            for chunk in _chunks(link_table):
                insert(conn, "links", [{"kn_id": kn_id, "relation_type_id": k.relation_type_id,
                                        "source_id": k.source_id, "target_id": k.target_id} for k in chunk])
                progress("links", counts["links"], max(total_links, counts["links"] + 1))
            progress("links", counts["links"], counts["links"])  # done: read links may repeat (written once)
            text_rows, pending = [], Embeddable()
            index_types(network, text_rows, pending)
            chunk_table = chunk_rows(network, instances, pending)
            insert(conn, "text", text_rows)
            insert(conn, "vectors", self.vector_rows(kn_id, pending, embedder))
            insert(conn, "chunks", chunk_table)
            row = network_row(network, embedder.model_name, counts, ids_by_type)
            if source is not None:
                row["stats"]["source"] = source
            knn_types = [tid for tid, names in fields_with(network, "knn").items() if names]
            deferred = sum(len(ids_by_type.get(tid, ())) for tid in knn_types) if defer_vectors else 0
            if deferred:
                row["stats"][VECTORS_PENDING] = {"done": 0, "total": deferred}
                row["embedder"] = embedder.model_name  # what the fill makes them with
            self._insert(conn, "network", [row])
            progress("index", 0, 1)
            if postgres:
                for part in _chunks(terms.table(kn_id)):
                    conn.execute(t.text_terms.insert(), part)
            if conn.dialect.name == "sqlite":
                t.fts_sync_insert(conn, kn_id)  # once, over every text row
                # planner statistics: without them SQLite walks a whole type in id order for
                # ``name = ? ORDER BY id LIMIT n`` and never splits an OR over two indexes (5 ms -> 0.03 ms)
                conn.exec_driver_sql("ANALYZE")
        if postgres:  # planner statistics for the new rows, outside the load's transaction
            with self.core.engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE kn_instances, kn_links, kn_text_rows, kn_text_terms, kn_vectors")
        progress("index", 1, 1)
        self.core.forget(kn_id)
        self.index.forget(kn_id)
        # big object types: their ANN bases now, not at the first query (none while vectors are deferred: the fill's)
        self.index.build_ann(kn_id, progress)
        return counts, row["version"]

    def vector_rows(self, kn_id: str, pending: Embeddable, embedder: TextEmbedder) -> list[dict[str, Any]]:
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
            with bulk_texts():  # a big load's chunk may take the bf16 encoder (kgrag.rank.bf16_encoder)
                matrix = embedder.encode(texts, batch_size=128)
        return [
            {"kn_id": kn_id, "kind": kind, "type_id": type_id, "item_id": item_id, "field": field_name,
             "vector": np.asarray(vec, np.float32).tobytes()}
            for (kind, type_id, item_id, field_name), vec in zip(keys, matrix, strict=True)
        ]

    #: table of each kind of row of :data:`~kgrag.network.store.rows.Rows`
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

    def _insert(self, conn: Connection, name: str, rows: list[dict[str, Any]]) -> None:
        """``rows`` into table ``name`` in the caller's transaction: ``COPY … FROM STDIN`` on PostgreSQL (from
        :data:`COPY_MIN_ROWS` rows), else batched ``executemany``."""
        table = self.TABLES[name]
        if conn.dialect.name == "postgresql" and len(rows) >= COPY_MIN_ROWS:
            _copy(conn, table, rows)
            return
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
