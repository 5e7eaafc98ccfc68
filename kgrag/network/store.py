"""``NetworkStore``: knowledge networks in SQL (SQLAlchemy 2), implementing :class:`OntologyService`.

Storage (see :mod:`kgrag.network.tables`): schema rows, instances with JSON properties, links, an FTS5 text index
(jieba tokens) for ``match`` and float32 embeddings for ``knn``. SQLite is the default (``Settings.db_url``);
the SQL is portable and PostgreSQL is the scale path (text index as ``tsvector``, vectors in pgvector).

Loading (:meth:`NetworkStore.load`) validates the network and its data, computes every derived row (tokens,
embeddings — through the embedder's on-disk cache, so re-loads are fast) *before* opening the transaction, then
replaces the network in ONE transaction with batched ``executemany`` inserts: readers see the old version until
the commit, and a failure anywhere leaves the previous version intact.

Which values get indexed: a data property whose ``condition_operations`` include ``match`` goes into the text
index, one with ``knn`` into the vectors (keep ``knn`` for short fields such as names: every value is one
embedding); every object and relation type gets both, over ``"name comment"`` (the text index adds the id).

Texts the embedder cannot represent (mostly unknown tokens — Chinese with the default English MiniLM) get no
vector: see :meth:`NetworkStore.representable`.

Queries: ``knn`` is exact cosine with numpy over the vectors of one (network, object type) — loaded lazily and
cached in memory per (kn_id, kind, type) until the network is re-loaded (each network row carries a version uuid
that every query checks). Type search combines ``knn(*, query)`` and ``match(*, query)`` per type with a noisy-OR
of the cosine (clipped to [0, 1]) and the normalised match score (see :meth:`NetworkStore.search_object_types`).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Engine, create_engine, delete, event, func, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.pool import StaticPool

from kgrag.network import tables as t
from kgrag.network.conditions import Plan, compile_condition, is_list_type
from kgrag.network.model import (
    ActionType,
    Condition,
    Instance,
    InstanceHit,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.service import NetworkNotFound
from kgrag.rank.tokenize import tokenize

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.rank.embedder import Embedder

__all__ = ["LoadStats", "NetworkStore", "PathHit", "fts_query", "index_tokens"]

BATCH = 5000
#: a text with more unknown model tokens than this fraction gets no embedding (see NetworkStore.representable)
MAX_UNKNOWN_FRACTION = 0.34
_TYPE_KINDS = {"object_type", "relation_type"}


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
    seconds: float
    prepare_seconds: float
    write_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PathHit:
    """One relation-path result: ``source --relation_type_id--> target`` (in the relation's own direction)."""

    source: InstanceHit
    relation_type_id: str
    target: InstanceHit


@dataclass
class _VectorIndex:
    ids: np.ndarray  # object array of item ids, one per row
    fields: np.ndarray  # object array of field names
    matrix: np.ndarray  # float32 (rows, dim)


#: FTS5 ranking over the index only, then the best rows joined back (see kgrag.network.tables)
_FTS_MATCH = text(
    "SELECT r.item_id AS item_id, r.field AS field, r.text AS text, m.rank AS rank FROM "
    "(SELECT rowid AS rid, bm25(kn_text, 1.0, 0.0) AS rank FROM kn_text WHERE kn_text MATCH :q "
    "ORDER BY rank LIMIT :n) AS m JOIN kn_text_rows AS r ON r.id = m.rid ORDER BY m.rank"
)


def fts_query(tokens: Sequence[str]) -> str:
    """An FTS5 query ORing the tokens, each a quoted string (so no token is read as FTS syntax)."""
    return " OR ".join('"' + tok.replace('"', '""') + '"' for tok in tokens)


_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{3,}")


def index_tokens(text_value: str) -> list[str]:
    """Tokens for the text index and for match queries: ``kgrag.rank.tokenize`` (jieba for Chinese) plus the
    character bigrams of every Chinese token of 3+ characters, so that words jieba segments differently in a
    query and a document (常用药 / 常用药品) still share tokens. Order kept, duplicates dropped."""
    out: dict[str, None] = {}
    for tok in tokenize(text_value):
        out.setdefault(tok, None)
        if _CJK_RUN.fullmatch(tok):
            for i in range(len(tok) - 1):
                out.setdefault(tok[i : i + 2], None)
    return list(out)


def _regexp(pattern: str | None, value: Any) -> bool:
    if pattern is None or value is None:
        return False
    return _compiled(pattern).search(str(value)) is not None


_pattern_cache: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    compiled = _pattern_cache.get(pattern)
    if compiled is None:
        if len(_pattern_cache) > 512:
            _pattern_cache.clear()
        compiled = _pattern_cache[pattern] = re.compile(pattern)
    return compiled


def _schema_rows(conn: Connection, table: Any, model: Any, kn_id: str) -> list:
    """The pydantic ``model`` of every schema row of ``table`` for ``kn_id``, in declaration order."""
    rows = conn.execute(select(table.c.schema).where(table.c.kn_id == kn_id).order_by(table.c.position))
    return [model.model_validate(r.schema) for r in rows]


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(_value_text(v) for v in value)
    return str(value)


def _chunks(rows: list[dict[str, Any]], size: int = BATCH) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


class NetworkStore:
    """Knowledge networks in a SQL database; see the module docstring.

    ``embedder`` defaults to ``Embedder.from_settings()`` (created on first need: loading or a knn query).
    """

    def __init__(self, db_url: str, embedder: Embedder | None = None) -> None:
        self.db_url = db_url
        self._embedder = embedder
        self.engine = self._make_engine(db_url)
        self.dialect = self.engine.dialect.name
        with self.engine.begin() as conn:
            t.create_schema(conn)
        self._lock = threading.RLock()
        self._schemas: dict[str, tuple[str, KnowledgeNetwork, dict[str, ObjectType]]] = {}
        self._checked: dict[str, float] = {}  # kn_id -> monotonic time its cached version was last confirmed
        self._names: dict[str, tuple[str, list[tuple[str, str, str]]]] = {}
        self._cardinality: dict[str, tuple[str, dict[str, tuple[int, int, int]]]] = {}
        self._representable: dict[str, bool] = {}  # query text -> representable (bounded, see knn_scores)
        self._vectors: dict[tuple[str, str, str], tuple[str, _VectorIndex]] = {}

    # ------------------------------------------------------------------ setup
    @staticmethod
    def _make_engine(db_url: str) -> Engine:
        kwargs: dict[str, Any] = {
            "json_serializer": lambda obj: json.dumps(obj, ensure_ascii=False),
        }
        is_sqlite = db_url.startswith("sqlite")
        if is_sqlite and (db_url in ("sqlite://", "sqlite:///:memory:") or "mode=memory" in db_url):
            kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
        elif is_sqlite:
            from pathlib import Path

            path = db_url.split(":///", 1)[-1].split("?", 1)[0]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 60}
        engine = create_engine(db_url, **kwargs)
        if is_sqlite:

            @event.listens_for(engine, "connect")
            def _on_connect(dbapi_conn, _record) -> None:  # noqa: ANN001
                dbapi_conn.create_function("regexp", 2, _regexp, deterministic=True)
                cur = dbapi_conn.cursor()
                if "memory" not in db_url and db_url not in ("sqlite://",):
                    cur.execute("PRAGMA journal_mode=WAL")
                    cur.execute("PRAGMA synchronous=NORMAL")
                cur.close()

        return engine

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from kgrag.rank.embedder import Embedder

            self._embedder = Embedder.from_settings()
        return self._embedder

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ load
    def load(
        self, network: KnowledgeNetwork, instances: Iterable[Instance], links: Iterable[Link]
    ) -> LoadStats:
        """Replace network ``network.kn_id`` by this one, in one transaction (see the module docstring).

        Raises ``ValueError`` for an inconsistent network: duplicate type ids, a relation type naming an unknown
        object type, an instance of an unknown type, a duplicate instance id within a type, a link of an unknown
        relation type or whose endpoint is not an instance of the relation's source/target type.
        """
        start = time.perf_counter()
        rows = self._prepare(network, instances, links)
        prepared = time.perf_counter()
        self._write(network.kn_id, rows)
        done = time.perf_counter()
        with self._lock:
            self._schemas.pop(network.kn_id, None)
            self._checked.pop(network.kn_id, None)
            for key in [k for k in self._vectors if k[0] == network.kn_id]:
                del self._vectors[key]
        return LoadStats(
            kn_id=network.kn_id,
            object_types=len(network.object_types),
            relation_types=len(network.relation_types),
            action_types=len(network.action_types),
            instances=len(rows["instances"]),
            links=len(rows["links"]),
            text_rows=len(rows["text"]),
            vectors=len(rows["vectors"]),
            seconds=done - start,
            prepare_seconds=prepared - start,
            write_seconds=done - prepared,
        )

    @staticmethod
    def _check_schema(network: KnowledgeNetwork) -> dict[str, ObjectType]:
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

    def _prepare(
        self, network: KnowledgeNetwork, instances: Iterable[Instance], links: Iterable[Link]
    ) -> dict[str, list[dict[str, Any]]]:
        kn = network.kn_id
        object_types = self._check_schema(network)
        relation_types = {rt.id: rt for rt in network.relation_types}
        match_fields = {
            ot.id: [p.name for p in ot.data_properties if "match" in p.condition_operations]
            for ot in network.object_types
        }
        knn_fields = {
            ot.id: [p.name for p in ot.data_properties if "knn" in p.condition_operations]
            for ot in network.object_types
        }
        instance_rows: list[dict[str, Any]] = []
        text_rows: list[dict[str, Any]] = []
        vector_keys: list[tuple[str, str, str, str]] = []  # kind, type_id, item_id, field
        vector_texts: list[str] = []
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
            instance_rows.append(
                {
                    "kn_id": kn,
                    "object_type_id": ot.id,
                    "id": inst.id,
                    "name": _value_text(name) if name is not None else inst.id,
                    "properties": inst.properties,
                }
            )
            for field_name in match_fields[ot.id]:
                tokens = index_tokens(_value_text(inst.properties.get(field_name)))
                if tokens:
                    text_rows.append(
                        {
                            "text": " ".join(tokens),
                            "scope": t.scope_token(kn, "instance", ot.id, field_name),
                            "kn_id": kn,
                            "kind": "instance",
                            "type_id": ot.id,
                            "item_id": inst.id,
                            "field": field_name,
                        }
                    )
            for field_name in knn_fields[ot.id]:
                value = inst.properties.get(field_name)
                value_text = "、".join(map(str, value)) if isinstance(value, list) else _value_text(value)
                if value_text.strip():
                    vector_keys.append(("instance", ot.id, inst.id, field_name))
                    vector_texts.append(value_text.strip())
        link_rows: list[dict[str, Any]] = []
        seen_links: set[tuple[str, str, str]] = set()
        for link in links:
            rt = relation_types.get(link.relation_type_id)
            if rt is None:
                raise ValueError(
                    f"link {link.source_id!r} -> {link.target_id!r}: unknown relation type "
                    f"{link.relation_type_id!r}"
                )
            if link.source_id not in ids_by_type[rt.source_object_type_id]:
                raise ValueError(
                    f"link of {rt.id!r}: source {link.source_id!r} is not an instance of "
                    f"{rt.source_object_type_id!r}"
                )
            if link.target_id not in ids_by_type[rt.target_object_type_id]:
                raise ValueError(
                    f"link of {rt.id!r}: target {link.target_id!r} is not an instance of "
                    f"{rt.target_object_type_id!r}"
                )
            key = (rt.id, link.source_id, link.target_id)
            if key not in seen_links:
                seen_links.add(key)
                link_rows.append(
                    {
                        "kn_id": kn,
                        "relation_type_id": rt.id,
                        "source_id": link.source_id,
                        "target_id": link.target_id,
                    }
                )
        type_rows: dict[str, list[dict[str, Any]]] = {
            "object_types": [],
            "relation_types": [],
            "action_types": [],
        }
        for pos, ot in enumerate(network.object_types):
            type_rows["object_types"].append(
                {
                    "kn_id": kn,
                    "id": ot.id,
                    "name": ot.name,
                    "comment": ot.comment,
                    "position": pos,
                    "schema": ot.model_dump(mode="json"),
                }
            )
        for pos, rt in enumerate(network.relation_types):
            type_rows["relation_types"].append(
                {
                    "kn_id": kn,
                    "id": rt.id,
                    "name": rt.name,
                    "comment": rt.comment,
                    "position": pos,
                    "source_object_type_id": rt.source_object_type_id,
                    "target_object_type_id": rt.target_object_type_id,
                    "schema": rt.model_dump(mode="json"),
                }
            )
        for pos, at in enumerate(network.action_types):
            type_rows["action_types"].append(
                {
                    "kn_id": kn,
                    "id": at.id,
                    "name": at.name,
                    "comment": at.comment,
                    "position": pos,
                    "schema": at.model_dump(mode="json"),
                }
            )
        for kind, types in (("object_type", network.object_types), ("relation_type", network.relation_types)):
            for typ in types:
                tokens = index_tokens(f"{typ.id} {typ.name} {typ.comment}")
                if tokens:
                    text_rows.append(
                        {
                            "text": " ".join(tokens),
                            "scope": t.scope_token(kn, kind, "", "*"),
                            "kn_id": kn,
                            "kind": kind,
                            "type_id": "",
                            "item_id": typ.id,
                            "field": "*",
                        }
                    )
                vector_keys.append((kind, "", typ.id, "*"))
                vector_texts.append(f"{typ.name} {typ.comment}".strip() or typ.id)
        keep = self.representable(vector_texts)
        vector_keys = [k for k, ok in zip(vector_keys, keep, strict=True) if ok]
        vector_texts = [v for v, ok in zip(vector_texts, keep, strict=True) if ok]
        vector_rows: list[dict[str, Any]] = []
        if vector_texts:
            matrix = self.embedder.encode(vector_texts, batch_size=128)
            for (kind, type_id, item_id, field_name), vec in zip(vector_keys, matrix, strict=True):
                vector_rows.append(
                    {
                        "kn_id": kn,
                        "kind": kind,
                        "type_id": type_id,
                        "item_id": item_id,
                        "field": field_name,
                        "vector": np.asarray(vec, np.float32).tobytes(),
                    }
                )
        stats = {
            "instances": len(instance_rows),
            "links": len(link_rows),
            "text_rows": len(text_rows),
            "vectors": len(vector_rows),
            "instances_by_type": {k: len(v) for k, v in ids_by_type.items()},
        }
        return {
            "network": [
                {
                    "kn_id": kn,
                    "name": network.name,
                    "comment": network.comment,
                    "version": uuid.uuid4().hex,
                    "embedder": self.embedder.model_name if vector_rows else "",
                    "loaded_at": time.time(),
                    "stats": stats,
                }
            ],
            **type_rows,
            "instances": instance_rows,
            "links": link_rows,
            "text": text_rows,
            "vectors": vector_rows,
        }

    _TABLES = {
        "network": t.networks,
        "object_types": t.object_types,
        "relation_types": t.relation_types,
        "action_types": t.action_types,
        "instances": t.instances,
        "links": t.links,
        "text": t.text_index,
        "vectors": t.vectors,
    }

    def _write(self, kn_id: str, rows: dict[str, list[dict[str, Any]]]) -> None:
        with self.engine.begin() as conn:
            self._delete(conn, kn_id)
            for name in (
                "network",
                "object_types",
                "relation_types",
                "action_types",
                "instances",
                "links",
                "text",
                "vectors",
            ):
                self._insert(conn, name, rows[name])
            if conn.dialect.name == "sqlite":
                t.fts_sync_insert(conn, kn_id)
                # planner statistics: without them SQLite walks a whole type in id order for
                # ``name = ? ORDER BY id LIMIT n`` and never splits an OR over two indexes (5 ms -> 0.03 ms)
                conn.exec_driver_sql("ANALYZE")

    def _insert(self, conn: Connection, name: str, rows: list[dict[str, Any]]) -> None:
        """Batched ``executemany`` of ``rows`` into table ``name`` (no commit: the caller's transaction)."""
        table = self._TABLES[name]
        for chunk in _chunks(rows):
            conn.execute(table.insert(), chunk)

    @staticmethod
    def _delete(conn: Connection, kn_id: str) -> None:
        if conn.dialect.name == "sqlite":
            t.fts_sync_delete(conn, kn_id)  # while the rows it names still exist
        for table in (*t.DATA_TABLES, t.networks):
            conn.execute(delete(table).where(table.c.kn_id == kn_id))

    def delete(self, kn_id: str) -> bool:
        """Remove a network (one transaction); False when it was not there."""
        with self.engine.begin() as conn:
            found = conn.execute(select(t.networks.c.kn_id).where(t.networks.c.kn_id == kn_id)).first()
            self._delete(conn, kn_id)
        with self._lock:
            self._schemas.pop(kn_id, None)
            self._checked.pop(kn_id, None)
        return found is not None

    # ------------------------------------------------------------------ schema
    def list_networks(self) -> list[tuple[str, str]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.networks.c.kn_id, t.networks.c.name).order_by(t.networks.c.kn_id))
            return [(r.kn_id, r.name) for r in rows]

    def network_stats(self, kn_id: str) -> dict[str, Any]:
        """What the last load stored (counts per table and per object type) plus its version and time."""
        with self.engine.connect() as conn:
            row = conn.execute(select(t.networks).where(t.networks.c.kn_id == kn_id)).first()
        if row is None:
            raise NetworkNotFound(kn_id)
        return {**row.stats, "version": row.version, "loaded_at": row.loaded_at, "embedder": row.embedder}

    def _version(self, conn: Connection, kn_id: str) -> str:
        version = conn.execute(select(t.networks.c.version).where(t.networks.c.kn_id == kn_id)).scalar()
        if version is None:
            raise NetworkNotFound(kn_id)
        return version

    #: how long a schema read trusts its cached network version before asking the database again. Loads and
    #: deletes through this store invalidate at once; a load by another process is seen within this time.
    SCHEMA_RECHECK_SECONDS = 1.0

    def _schema(self, kn_id: str) -> tuple[str, KnowledgeNetwork, dict[str, ObjectType]]:
        cached = self._schemas.get(kn_id)
        now = time.monotonic()
        if cached is not None and now - self._checked.get(kn_id, -1e9) < self.SCHEMA_RECHECK_SECONDS:
            return cached
        with self.engine.connect() as conn:
            version = self._version(conn, kn_id)
            if cached is not None and cached[0] == version:
                self._checked[kn_id] = now
                return cached
            net = conn.execute(select(t.networks).where(t.networks.c.kn_id == kn_id)).one()
            ots = _schema_rows(conn, t.object_types, ObjectType, kn_id)
            rts = _schema_rows(conn, t.relation_types, RelationType, kn_id)
            ats = _schema_rows(conn, t.action_types, ActionType, kn_id)
        network = KnowledgeNetwork(
            kn_id=kn_id,
            name=net.name,
            comment=net.comment,
            object_types=ots,
            relation_types=rts,
            action_types=ats,
        )
        entry = (version, network, {ot.id: ot for ot in ots})
        with self._lock:
            self._schemas[kn_id] = entry
            self._checked[kn_id] = now
        return entry

    def network_version(self, kn_id: str) -> str:
        """The version (uuid of the last load) of ``kn_id``; raises :class:`NetworkNotFound`."""
        return self._schema(kn_id)[0]

    def get_network(self, kn_id: str) -> KnowledgeNetwork:
        """The network's schema. Shared with the store's cache: read it, do not modify it (``model_copy(deep=True)``
        first if you must)."""
        return self._schema(kn_id)[1]

    def _object_type(self, kn_id: str, object_type_id: str) -> tuple[str, ObjectType]:
        version, _, ots = self._schema(kn_id)
        ot = ots.get(object_type_id)
        if ot is None:
            raise ValueError(f"unknown object type {object_type_id!r} in network {kn_id!r}")
        return version, ot

    # ------------------------------------------------------------------ scorers
    def match_scores(
        self, kn_id: str, kind: str, type_id: str, fields: list[str] | None, query: str, limit: int
    ) -> dict[str, float]:
        """Full-text candidates ``{item id: score}`` for ``query`` (:func:`index_tokens` ORed).

        Score of a (item, field) row = ``coverage * (0.5 + 0.5 * bm25 / best_bm25)``, where coverage is the
        fraction of the query's distinct tokens present in the field's tokens and best_bm25 the best bm25 among
        the matching rows (bm25 sign flipped so larger is better): in (0, 1], 1 for the best row containing every
        query token. An item's score is the max over its fields. At most ``limit`` items, best first.
        """
        tokens = index_tokens(query)
        if not tokens:
            return {}
        scopes = [t.scope_token(kn_id, kind, type_id, f) for f in (fields if fields is not None else ["*"])]
        if not scopes:
            return {}
        fetch = max(limit, 1) * 4
        if self.dialect == "sqlite":
            # the index alone ranks (rowid + bm25); only the best ``fetch`` rows are read back
            stmt = _FTS_MATCH.bindparams(
                q=f"scope : ({fts_query(scopes)}) AND text : ({fts_query(tokens)})", n=fetch
            )
        else:  # pragma: no cover - PostgreSQL path
            ti = t.text_index
            tsq = func.to_tsquery("simple", " | ".join(re.sub(r"[^\w]+", "", tok) or "_" for tok in tokens))
            tsv = func.to_tsvector("simple", ti.c.text)
            rank = -func.ts_rank(tsv, tsq)
            stmt = (
                select(ti.c.item_id, ti.c.field, ti.c.text, rank.label("rank"))
                .where(ti.c.scope.in_(scopes), tsv.op("@@")(tsq))
                .order_by(text("rank"))
                .limit(fetch)
            )
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        if not rows:
            return {}
        best = max(-r.rank for r in rows) or 1.0
        query_set = set(tokens)
        scores: dict[str, float] = {}
        for r in rows:
            padded = f" {r.text} "  # token lookups, not a split of a possibly long field text
            coverage = sum(f" {tok} " in padded for tok in query_set) / len(query_set)
            coverage = max(coverage, 0.5 / len(query_set))
            rel = max(-r.rank, 0.0) / best if best > 0 else 1.0
            score = min(1.0, coverage * (0.5 + 0.5 * rel))
            if score > scores.get(r.item_id, 0.0):
                scores[r.item_id] = score
        top = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return dict(top)

    def representable(self, texts: Sequence[str]) -> list[bool]:
        """Whether the embedder can represent each text: at most :data:`MAX_UNKNOWN_FRACTION` of its model tokens
        are the tokenizer's unknown token. The default MiniLM has no vocabulary for most Chinese characters
        (``感冒`` → ``[UNK] [UNK]``), so such texts would all get the same vector and bogus cosines near 1;
        they get no vector (knn skips them, match still finds them) and a knn query made of them returns nothing.
        With a multilingual embedder (``KGRAG_EMBEDDER``) everything passes. True for all when the embedder
        has no inspectable tokenizer."""
        if not texts:
            return []
        try:
            tokenizer = self.embedder.model.tokenizer
            unk = tokenizer.unk_token
        except Exception:  # noqa: BLE001 - an embedder without a HF tokenizer: trust it
            return [True] * len(texts)
        if unk is None:
            return [True] * len(texts)
        out = []
        for text_value in texts:
            pieces = tokenizer.tokenize(text_value)
            unknown = sum(1 for p in pieces if p == unk)
            out.append(bool(pieces) and unknown <= MAX_UNKNOWN_FRACTION * len(pieces))
        return out

    def _query_representable(self, query: str) -> bool:
        """:meth:`representable` for one query text, memoised (a search asks once per object type)."""
        known = self._representable.get(query)
        if known is None:
            if len(self._representable) > 4096:
                self._representable.clear()
            known = self._representable[query] = self.representable([query])[0]
        return known

    def _vector_index(self, kn_id: str, version: str, kind: str, type_id: str) -> _VectorIndex:
        key = (kn_id, kind, type_id)
        cached = self._vectors.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        v = t.vectors
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(v.c.item_id, v.c.field, v.c.vector).where(
                    v.c.kn_id == kn_id, v.c.kind == kind, v.c.type_id == type_id
                )
            ).all()
        if rows:
            matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, 1), np.float32)
        index = _VectorIndex(
            np.array([r.item_id for r in rows], dtype=object),
            np.array([r.field for r in rows], dtype=object),
            matrix,
        )
        with self._lock:
            self._vectors[key] = (version, index)
        return index

    def knn_scores(
        self,
        kn_id: str,
        kind: str,
        type_id: str,
        fields: list[str] | None,
        query: str,
        limit: int,
        version: str | None = None,
    ) -> dict[str, float]:
        """Exact cosine neighbours ``{item id: score}`` of ``query``: top ``limit`` items (max over their
        fields), scores clipped to [0, 1]."""
        if version is None:
            version = self._schema(kn_id)[0]
        index = self._vector_index(kn_id, version, kind, type_id)
        if not len(index.ids) or not query.strip() or not self._query_representable(query):
            return {}
        q = self.embedder.encode_query(query)
        rows = np.arange(len(index.ids)) if fields is None else np.flatnonzero(np.isin(index.fields, fields))
        if not len(rows):
            return {}
        sims = index.matrix[rows] @ q
        # an item has at most one row per field, so the best ``limit * fields`` rows hold the best ``limit`` items
        need = max(limit, 1) * len(fields) if fields is not None else len(sims)
        if need < len(sims):
            top = np.argpartition(-sims, need - 1)[:need]
            order = top[np.lexsort((top, -sims[top]))]  # by similarity desc, ties by row (as a stable sort)
        else:
            order = np.argsort(-sims, kind="stable")
        out: dict[str, float] = {}
        for pos in order:
            item = index.ids[rows[pos]]
            if item not in out:
                out[item] = float(min(1.0, max(0.0, sims[pos])))
                if len(out) >= limit:
                    break
        return out

    # ------------------------------------------------------------------ type search
    def _search_types(self, kn_id: str, kind: str, query: str, limit: int) -> list[tuple[str, float]]:
        version = self._schema(kn_id)[0]
        if limit <= 0 or not query.strip():
            return []
        pool = max(limit, 50)
        cosine = self.knn_scores(kn_id, kind, "", None, query, pool, version=version)
        matched = self.match_scores(kn_id, kind, "", None, query, pool)
        scores = {
            item: 1.0 - (1.0 - cosine.get(item, 0.0)) * (1.0 - matched.get(item, 0.0))
            for item in cosine.keys() | matched.keys()
        }
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def search_object_types(self, kn_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        """``knn(*, query) OR match(*, query)`` over object types, ``(id, score)`` by score desc.

        score = ``1 - (1 - cosine) * (1 - match)`` (a noisy-OR of the clipped cosine and the normalised match
        score of :meth:`match_scores`): either signal alone gives at least its own value (so it is never below
        ``max(cosine, match)``), and a type supported by both ranks above one supported by a single signal —
        which matters because the default MiniLM embedder is weak on Chinese, where match carries the signal.
        """
        return self._search_types(kn_id, "object_type", query, limit)

    def search_relation_types(self, kn_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        """Same as :meth:`search_object_types` over relation types."""
        return self._search_types(kn_id, "relation_type", query, limit)

    # ------------------------------------------------------------------ instances
    def compile(
        self, kn_id: str, object_type_id: str, condition: Condition | None, limit: int
    ) -> Plan | None:
        """The compiled plan of ``condition`` (raises ``ValueError`` for unknown fields/operations)."""
        version, ot = self._object_type(kn_id, object_type_id)
        if condition is None:
            return None
        return compile_condition(
            condition,
            ot,
            dialect=self.dialect,
            default_limit=limit,
            match=lambda type_id, fields, q, k: self.match_scores(kn_id, "instance", type_id, fields, q, k),
            knn=lambda type_id, fields, q, k: self.knn_scores(
                kn_id, "instance", type_id, fields, q, k, version=version
            ),
        )

    @staticmethod
    def _hit(object_type_id: str, row: Any, score: float | None) -> InstanceHit:
        return InstanceHit(object_type_id=object_type_id, id=row.id, properties=row.properties, score=score)

    def query_instances(
        self,
        kn_id: str,
        object_type_id: str,
        condition: Condition | None,
        limit: int,
        sort_by_score: bool = True,
    ) -> list[InstanceHit]:
        """Instances of ``object_type_id`` matching ``condition``, at most ``limit``.

        Scored results (a knn/match leaf) come first, by score desc (ties by id), then rows that matched only
        through unscored branches (by id). Without a scored leaf the order is by id. Raises ``ValueError`` for
        an unknown object type, field or operation and :class:`NetworkNotFound` for an unknown network.
        """
        plan = self.compile(kn_id, object_type_id, condition, limit)
        if limit <= 0:
            return []
        ti = t.instances
        base = select(ti.c.id, ti.c.properties).where(
            ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id
        )
        if plan is None:
            with self.engine.connect() as conn:
                rows = conn.execute(base.order_by(ti.c.id).limit(limit)).all()
            return [self._hit(object_type_id, r, None) for r in rows]
        base = base.where(plan.clause)
        with self.engine.connect() as conn:
            if not plan.scores:
                rows = conn.execute(base.order_by(ti.c.id).limit(limit)).all()
                return [self._hit(object_type_id, r, None) for r in rows]
            scored_ids = sorted(plan.scores)
            # ids first (no JSON decoding), then the properties of the best ``limit`` only
            id_query = select(ti.c.id).where(ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id,
                                             plan.clause, ti.c.id.in_(scored_ids))
            ok = [r.id for r in conn.execute(id_query)]
            ok.sort(key=(lambda i: (-plan.scores[i], i)) if sort_by_score else None)
            top = ok[:limit]
            by_id = {r.id: r for r in conn.execute(base.where(ti.c.id.in_(top)))} if top else {}
            hits = [self._hit(object_type_id, by_id[i], plan.scores[i]) for i in top if i in by_id]
            if len(hits) < limit:
                rest = conn.execute(
                    base.where(ti.c.id.not_in(scored_ids)).order_by(ti.c.id).limit(limit - len(hits))
                ).all()
                hits.extend(self._hit(object_type_id, r, None) for r in rest)
        return hits

    def get_instances(self, kn_id: str, object_type_id: str, ids: Sequence[str]) -> list[InstanceHit]:
        """Instances by id (in the order given; unknown ids are skipped)."""
        self._object_type(kn_id, object_type_id)
        ti = t.instances
        found: dict[str, Any] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), 900):
                chunk = list(ids[start : start + 900])
                for r in conn.execute(
                    select(ti.c.id, ti.c.properties).where(
                        ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id, ti.c.id.in_(chunk)
                    )
                ):
                    found[r.id] = r
        return [self._hit(object_type_id, found[i], None) for i in ids if i in found]

    def sample_instance(self, kn_id: str, object_type_id: str) -> dict | None:
        """The properties of the instance with the smallest id (deterministic), or None when there is none."""
        self._object_type(kn_id, object_type_id)
        ti = t.instances
        with self.engine.connect() as conn:
            row = conn.execute(
                select(ti.c.properties)
                .where(ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id)
                .order_by(ti.c.id)
                .limit(1)
            ).first()
        return dict(row.properties) if row is not None else None

    def count_instances(self, kn_id: str, object_type_id: str | None = None) -> int:
        ti = t.instances
        stmt = select(func.count()).select_from(ti).where(ti.c.kn_id == kn_id)
        if object_type_id is not None:
            stmt = stmt.where(ti.c.object_type_id == object_type_id)
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar() or 0)

    def instance_names(self, kn_id: str) -> list[tuple[str, str, str]]:
        """``(object_type_id, instance id, name)`` of every instance (``name`` = the display-key value), cached
        per network version: the dictionary contextual recall segments questions with."""
        version = self._schema(kn_id)[0]
        cached = self._names.get(kn_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        ti = t.instances
        with self.engine.connect() as conn:
            rows = [(r[0], r[1], r[2]) for r in conn.execute(
                select(ti.c.object_type_id, ti.c.id, ti.c.name).where(ti.c.kn_id == kn_id))]
        with self._lock:
            self._names[kn_id] = (version, rows)
        return rows

    def link_cardinality(self, kn_id: str, relation_type_id: str) -> tuple[int, int, int]:
        """``(most targets of one source, most sources of one target, links)`` of one relation type. Computed for
        every relation of the network at once (two grouped scans of the link indexes) and cached per version."""
        version = self._schema(kn_id)[0]
        cached = self._cardinality.get(kn_id)
        if cached is None or cached[0] != version:
            tl = t.links
            stats: dict[str, list[int]] = {}
            with self.engine.connect() as conn:
                for end, column in ((0, tl.c.source_id), (1, tl.c.target_id)):
                    per = (select(tl.c.relation_type_id.label("rid"), func.count().label("n"))
                           .where(tl.c.kn_id == kn_id).group_by(tl.c.relation_type_id, column).subquery())
                    for rid, most, total in conn.execute(
                            select(per.c.rid, func.max(per.c.n), func.sum(per.c.n)).group_by(per.c.rid)):
                        entry = stats.setdefault(rid, [0, 0, 0])
                        entry[end], entry[2] = int(most), int(total)
            cached = (version, {rid: (v[0], v[1], v[2]) for rid, v in stats.items()})
            with self._lock:
                self._cardinality[kn_id] = cached
        return cached[1].get(relation_type_id, (0, 0, 0))

    def count_links(self, kn_id: str, relation_type_id: str | None = None) -> int:
        tl = t.links
        stmt = select(func.count()).select_from(tl).where(tl.c.kn_id == kn_id)
        if relation_type_id is not None:
            stmt = stmt.where(tl.c.relation_type_id == relation_type_id)
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar() or 0)

    # ------------------------------------------------------------------ relation paths (interface 2)
    def query_path(
        self,
        kn_id: str,
        source_type: str,
        source_condition: Condition | None,
        relation_type_id: str,
        target_type: str,
        target_condition: Condition | None,
        limit_per_type: int = 10,
    ) -> list[PathHit]:
        """Instances connected by one relation: ``source_type --relation--> target_type`` where each end
        satisfies its condition (``None`` = any).

        The relation may be traversed either way: ``source_type``/``target_type`` may name the relation's target
        and source types, and each :class:`PathHit` reports the link in the relation's own direction. The
        ``source_type`` side is resolved first (at most ``limit_per_type`` instances, best scored first); then
        the linked instances of ``target_type`` that satisfy ``target_condition`` (at most ``limit_per_type``
        distinct ones, best first). Returns at most ``limit_per_type`` paths per source instance.
        """
        _, network, ots = self._schema(kn_id)
        rt = next((r for r in network.relation_types if r.id == relation_type_id), None)
        if rt is None:
            raise ValueError(f"unknown relation type {relation_type_id!r} in network {kn_id!r}")
        for type_id in (source_type, target_type):
            if type_id not in ots:
                raise ValueError(f"unknown object type {type_id!r} in network {kn_id!r}")
        if (rt.source_object_type_id, rt.target_object_type_id) == (source_type, target_type):
            forward = True
        elif (rt.source_object_type_id, rt.target_object_type_id) == (target_type, source_type):
            forward = False
        else:
            raise ValueError(
                f"relation type {relation_type_id!r} links {rt.source_object_type_id!r} -> "
                f"{rt.target_object_type_id!r}, not {source_type!r} and {target_type!r}"
            )
        sources = self.query_instances(kn_id, source_type, source_condition, limit_per_type)
        if not sources:
            return []
        tl = t.links
        near, far = (tl.c.source_id, tl.c.target_id) if forward else (tl.c.target_id, tl.c.source_id)
        neighbours: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            for r in conn.execute(
                select(near.label("near"), far.label("far")).where(
                    tl.c.kn_id == kn_id,
                    tl.c.relation_type_id == relation_type_id,
                    near.in_([s.id for s in sources]),
                )
            ):
                neighbours.setdefault(r.near, []).append(r.far)
        far_ids = sorted({f for fs in neighbours.values() for f in fs})
        if not far_ids:
            return []
        id_filter = Condition(operation="in", field="id", value=far_ids)
        cond = (
            id_filter
            if target_condition is None
            else Condition(operation="and", sub_conditions=[id_filter, target_condition])
        )
        targets = {
            h.id: h for h in self.query_instances(kn_id, target_type, cond, max(limit_per_type, 1) * 10)
        }
        rank = {tid: i for i, tid in enumerate(targets)}
        paths: list[PathHit] = []
        for src in sources:
            linked = sorted(
                (f for f in set(neighbours.get(src.id, [])) if f in targets), key=rank.__getitem__
            )
            for tid in linked[:limit_per_type]:
                tgt = targets[tid]
                a, b = (src, tgt) if forward else (tgt, src)
                paths.append(PathHit(source=a, relation_type_id=relation_type_id, target=b))
        return paths


def list_fields(ot: ObjectType) -> list[str]:
    """The names of an object type's list-valued data properties (``contain`` means membership there)."""
    return [p.name for p in ot.data_properties if is_list_type(p.type)]
