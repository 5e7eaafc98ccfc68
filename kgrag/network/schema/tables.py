"""SQL schema of the knowledge-network store (SQLAlchemy Core, portable SQL).

Tables (every row carries ``kn_id``; a network is replaced as a whole, or changed row by row by
:mod:`kgrag.network.store.changes`, in one transaction)::

    kn_networks       kn_id PK, name, comment, version (uuid of the load), embedder model, loaded_at, stats JSON
    kn_object_types   (kn_id, id) PK, name, comment, position, schema JSON (the pydantic ObjectType)
    kn_relation_types (kn_id, id) PK, name, comment, source/target object type ids, position, schema JSON
    kn_action_types   (kn_id, id) PK, name, comment, position, schema JSON
    kn_instances      (kn_id, object_type_id, id) PK, name, properties JSON, content_hash (sha1 of the properties)
    kn_links          kn_id, relation_type_id, source_id, target_id (indexed both ways)
    kn_vectors        kn_id, kind, type_id, item_id, field, vector (float32 bytes, L2-normalised)
    kn_text_rows      id, text, scope, kn_id, kind, type_id, item_id, field: what ``match`` searches (see below)
    kn_chunks         (kn_id, id) PK, doc_id, object_type_id, section, position, text, tokens, source_ids JSON

``kind`` is ``instance`` (then ``type_id`` is the object type), ``object_type`` or ``relation_type`` (then
``type_id`` is ``""`` and ``item_id`` the type id; ``field`` is ``"*"``), or ``chunk`` (``item_id`` the chunk id,
``field`` its section).

Text index: ``kn_text_rows.text`` holds jieba/ASCII tokens (plus CJK bigrams, ``kgrag.network.store.index_tokens``)
joined by spaces; on SQLite ``kn_text`` is an FTS5 virtual table ``(text, scope)`` over those rows (external
content, rowid = ``kn_text_rows.id``), ranked with ``bm25()``. ``scope`` is one opaque
token per (kn_id, kind, type_id, field) (:func:`scope_token`), so a query ANDs the wanted scopes with its terms
inside the FTS index (``scope : ("s…" OR "s…") AND text : ("t1" OR "t2")``) instead of filtering every match of a
common term across all networks and fields.

On PostgreSQL ``kn_text_rows`` gets a GIN index on ``string_to_array(translate(text, '.', ' '), ' ')`` (the
stored tokens as FTS5 splits them, so a query term matches a stored term exactly, as in FTS5) and a btree on ``scope``; ``kn_text_terms`` (PostgreSQL only)
holds, per network, how many text rows hold each token, plus one row with token ``''`` giving the network's text
rows and their total tokens: the document frequencies and lengths FTS5 keeps in its index, from which
:mod:`kgrag.network.store.index` computes FTS5's own ``bm25()`` so both backends rank alike. Vectors stay exact
float32 ``bytea`` blobs scored with numpy (pgvector is not packaged for Debian bookworm). Key columns (ids, kn_id,
field, kind, scope) use the ``"C"`` collation on PostgreSQL, so ``ORDER BY id`` is code-point order there as on
SQLite whatever the database's locale.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    func,
    select,
)
from sqlalchemy.engine import Connection

metadata = MetaData()


def _key(length: int) -> String:
    """A key column's type: ``String(length)``, with the ``"C"`` collation on PostgreSQL (code-point order)."""
    return String(length).with_variant(String(length, collation="C"), "postgresql")


networks = Table(
    "kn_networks",
    metadata,
    Column("kn_id", _key(200), primary_key=True),
    Column("name", Text, nullable=False),
    Column("comment", Text, nullable=False, default=""),
    Column("version", String(64), nullable=False),
    Column("embedder", String(300), nullable=False, default=""),
    Column("loaded_at", Float, nullable=False),
    Column("stats", JSON, nullable=False),
)

def _type_columns() -> list[Column]:
    """Columns every schema-type table shares: key, name/comment for search, declaration order, full schema."""
    return [
        Column("kn_id", _key(200), primary_key=True),
        Column("id", _key(300), primary_key=True),
        Column("name", Text, nullable=False),
        Column("comment", Text, nullable=False),
        Column("position", Integer, nullable=False),
        Column("schema", JSON, nullable=False),
    ]


object_types = Table("kn_object_types", metadata, *_type_columns())

relation_types = Table(
    "kn_relation_types",
    metadata,
    *_type_columns(),
    Column("source_object_type_id", _key(300), nullable=False),
    Column("target_object_type_id", _key(300), nullable=False),
)

action_types = Table("kn_action_types", metadata, *_type_columns())

instances = Table(
    "kn_instances",
    metadata,
    Column("kn_id", _key(200), primary_key=True),
    Column("object_type_id", _key(300), primary_key=True),
    Column("id", _key(1000), primary_key=True),
    Column("name", Text, nullable=False),
    Column("properties", JSON, nullable=False),
    # sha1 of the canonical JSON of ``properties`` (kgrag.network.store.rows.content_hash): what an incremental
    # change compares; NULL in rows written before the column existed (then computed from ``properties``)
    Column("content_hash", String(40), nullable=True),
    Index("ix_kn_instances_name", "kn_id", "object_type_id", "name"),  # == on the display key
)

links = Table(
    "kn_links",
    metadata,
    Column("kn_id", _key(200), nullable=False),
    Column("relation_type_id", _key(300), nullable=False),
    Column("source_id", _key(1000), nullable=False),
    Column("target_id", _key(1000), nullable=False),
    Index("ix_kn_links_source", "kn_id", "relation_type_id", "source_id"),
    Index("ix_kn_links_target", "kn_id", "relation_type_id", "target_id"),
)

vectors = Table(
    "kn_vectors",
    metadata,
    Column("kn_id", _key(200), nullable=False),
    Column("kind", _key(20), nullable=False),
    Column("type_id", _key(300), nullable=False),
    Column("item_id", _key(1000), nullable=False),
    Column("field", _key(300), nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Index("ix_kn_vectors_type", "kn_id", "kind", "type_id"),
    Index("ix_kn_vectors_item", "kn_id", "kind", "type_id", "item_id"),  # an incremental change's deletes
)

#: text chunks of instances' long texts (``kgrag.network.text.chunking``), read by the query modes
chunks = Table(
    "kn_chunks",
    metadata,
    Column("kn_id", _key(200), primary_key=True),
    Column("id", _key(64), primary_key=True),
    Column("doc_id", _key(1000), nullable=False),
    Column("object_type_id", _key(300), nullable=False),
    Column("section", _key(300), nullable=False),
    Column("position", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("source_ids", JSON, nullable=False),
    Index("ix_kn_chunks_doc", "kn_id", "object_type_id", "doc_id"),  # the chunks of one instance
)

#: the rows of the text index (a plain table on every dialect; on SQLite ``kn_text`` indexes it, see below)
text_index = Table(
    "kn_text_rows",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("text", Text, nullable=False),
    Column("scope", _key(40), nullable=False),
    Column("kn_id", _key(200), nullable=False),
    Column("kind", _key(20), nullable=False),
    Column("type_id", _key(300), nullable=False),
    Column("item_id", _key(1000), nullable=False),
    Column("field", _key(300), nullable=False),
    Index("ix_kn_text_rows_kn", "kn_id"),
    Index("ix_kn_text_rows_item", "kn_id", "kind", "type_id", "item_id"),  # an incremental change's deletes
)

#: FTS5 over ``kn_text_rows`` as external content: a MATCH reads only the index (rowid + bm25), never the
#: row text, and the few best rowids are then joined back to their rows — with content stored inside the FTS
#: table every matching row's record (long descriptions included) was read just to learn its item id.
FTS5_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS kn_text USING fts5("
    "text, scope, content='kn_text_rows', content_rowid='id', tokenize = 'unicode61 remove_diacritics 0')"
)


def last_text_row_id(conn: Connection) -> int:
    """The largest ``kn_text_rows`` id (0: none): new rows written after it follow every stored one."""
    return conn.execute(select(func.coalesce(func.max(text_index.c.id), 0))).scalar_one()


def fts_sync_insert(conn: Connection, kn_id: str) -> None:
    """Index the ``kn_text_rows`` of ``kn_id`` in the FTS5 table (SQLite; call after inserting the rows)."""
    conn.exec_driver_sql(
        "INSERT INTO kn_text(rowid, text, scope) SELECT id, text, scope FROM kn_text_rows WHERE kn_id = ?",
        (kn_id,),
    )


def fts_sync_delete(conn: Connection, kn_id: str) -> None:
    """Remove the ``kn_text_rows`` of ``kn_id`` from the FTS5 index (SQLite; call before deleting the rows)."""
    conn.exec_driver_sql(
        "INSERT INTO kn_text(kn_text, rowid, text, scope) "
        "SELECT 'delete', id, text, scope FROM kn_text_rows WHERE kn_id = ?",
        (kn_id,),
    )


def _migrate_inline_fts(conn: Connection) -> None:
    """Stores written before the external-content index kept the rows inside ``kn_text`` itself: move them
    into ``kn_text_rows`` and rebuild the index over them (nothing is lost; runs once)."""
    row = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'kn_text'").first()
    if row is None or "content=" in (row[0] or ""):
        return
    conn.exec_driver_sql(
        "INSERT INTO kn_text_rows(text, scope, kn_id, kind, type_id, item_id, field) "
        "SELECT text, scope, kn_id, kind, type_id, item_id, field FROM kn_text"
    )
    conn.exec_driver_sql("DROP TABLE kn_text")
    conn.exec_driver_sql(FTS5_DDL)
    conn.exec_driver_sql("INSERT INTO kn_text(kn_text) VALUES ('rebuild')")
    conn.exec_driver_sql("ANALYZE")  # those stores predate the planner statistics taken at every load


#: indexes an incremental change deletes by (stores created before them get them on first open)
_INCREMENTAL_INDEXES = {
    "ix_kn_vectors_item": "CREATE INDEX IF NOT EXISTS ix_kn_vectors_item ON kn_vectors (kn_id, kind, type_id, item_id)",
    "ix_kn_chunks_doc": "CREATE INDEX IF NOT EXISTS ix_kn_chunks_doc ON kn_chunks (kn_id, object_type_id, doc_id)",
    "ix_kn_text_rows_item": "CREATE INDEX IF NOT EXISTS ix_kn_text_rows_item ON kn_text_rows "
                            "(kn_id, kind, type_id, item_id)",
}


def _migrate_incremental(conn: Connection, present: set[str]) -> None:
    """Stores written before incremental changes: add ``kn_instances.content_hash`` (NULL: computed from the
    properties when compared) and the indexes of :data:`_INCREMENTAL_INDEXES` that ``present`` lacks (runs once,
    loses nothing)."""
    if conn.dialect.name == "postgresql":
        columns = {row[0] for row in conn.exec_driver_sql(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'kn_instances'")}
    else:
        columns = {row[1] for row in conn.exec_driver_sql("PRAGMA table_info(kn_instances)")}
    if "content_hash" not in columns:
        conn.exec_driver_sql("ALTER TABLE kn_instances ADD COLUMN content_hash VARCHAR(40)")
    for name, ddl in _INCREMENTAL_INDEXES.items():
        if name not in present:
            conn.exec_driver_sql(ddl)


def scope_token(kn_id: str, kind: str, type_id: str, field: str) -> str:
    """The single FTS token naming one (network, kind, type, field) slice of the text index."""
    return "s" + hashlib.sha1(f"{kn_id}\0{kind}\0{type_id}\0{field}".encode()).hexdigest()[:24]


#: PostgreSQL only (see the module docstring): document frequency per (network, token); token ``''`` holds the
#: network's text-row count in ``rows`` and its total tokens in ``tokens``
pg_metadata = MetaData()
text_terms = Table(
    "kn_text_terms",
    pg_metadata,
    Column("token", Text().with_variant(Text(collation="C"), "postgresql"), primary_key=True),
    Column("kn_id", _key(200), primary_key=True),
    Column("rows", Integer, nullable=False),
    Column("tokens", BigInteger, nullable=False),
)

DATA_TABLES = (object_types, relation_types, action_types, instances, links, vectors, text_index, chunks)


def _indexes(conn: Connection) -> set[str]:
    """Names of the indexes that exist (read from the catalog: no lock on any table)."""
    if conn.dialect.name == "postgresql":
        sql = "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'index'"
    return {row[0] for row in conn.exec_driver_sql(sql)}


def create_schema(conn: Connection) -> None:
    """Create every table (idempotent); the text index is FTS5 on SQLite, a plain table + GIN index + term
    statistics on PostgreSQL (where concurrent creators are serialised by an advisory lock). Indexes and columns
    added since a store was created are added when the catalog lacks them — only then: on PostgreSQL even a
    ``CREATE INDEX IF NOT EXISTS`` / ``ALTER TABLE … IF NOT EXISTS`` locks its table, and a store opening while a
    load or change writes would wait for it (or deadlock with it)."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(8154000001)")  # two stores opening a fresh database
    metadata.create_all(conn)
    if conn.dialect.name == "postgresql":
        pg_metadata.create_all(conn)
    present = _indexes(conn)
    # stores created before this index existed get it too (create_all only adds indexes with new tables)
    if "ix_kn_instances_name" not in present:
        conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_kn_instances_name ON kn_instances "
                             "(kn_id, object_type_id, name)")
    _migrate_incremental(conn, present)
    if conn.dialect.name == "sqlite":
        _migrate_inline_fts(conn)
        conn.exec_driver_sql(FTS5_DDL)
    elif conn.dialect.name == "postgresql":
        if "ix_kn_text_terms" not in present:
            conn.exec_driver_sql(
                "CREATE INDEX IF NOT EXISTS ix_kn_text_terms ON kn_text_rows "
                "USING GIN (string_to_array(translate(text, '.', ' '), ' '))"
            )
        if "ix_kn_text_scope" not in present:
            conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_kn_text_scope ON kn_text_rows (scope)")
