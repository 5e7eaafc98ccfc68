"""The store's core: the database engine, its dialect and the per-version schema cache every part builds on.

    core = StoreCore("sqlite:///:memory:"); core.list_networks()   # -> []

Contract: :class:`StoreCore` opens the engine (SQLite gets a ``regexp`` function, WAL and a 60 s busy timeout;
an in-memory URL one shared connection; PostgreSQL — ``postgresql+psycopg://…``, psycopg 3 — a
``connect_timeout`` of :data:`CONNECT_TIMEOUT` seconds unless the URL sets one, and ``pool_pre_ping`` so a
restarted server costs no failed request once it is back), creates the tables, and reads a network's schema —
:meth:`StoreCore.get_network`, :meth:`StoreCore.network_version`, :meth:`StoreCore.list_networks`,
:meth:`StoreCore.network_stats`. Schemas are cached per network version: a read trusts the cached version for
:data:`SCHEMA_RECHECK_SECONDS`, :meth:`StoreCore.forget` (called by loads and deletes through this store)
invalidates it at once; :meth:`StoreCore.touched_since` tells a per-version cache which instances the one
incremental change since its version touched (so it can re-read those rows only). An unknown ``kn_id`` raises
:class:`NetworkNotFound`; an unknown object type ``ValueError``. The other parts of the store
(:mod:`~kgrag.network.store.index`,
:mod:`~kgrag.network.store.load`, :mod:`~kgrag.network.store.query`) receive one core and keep their own caches.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, select
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.pool import StaticPool

from kgrag.errors import NetworkNotFound
from kgrag.network.schema import tables as t
from kgrag.network.schema.model import ActionType, KnowledgeNetwork, ObjectType, RelationType

__all__ = ["CONNECT_TIMEOUT", "SCHEMA_RECHECK_SECONDS", "StoreCore"]

#: seconds a PostgreSQL connection attempt may take (a database that is down fails fast instead of hanging)
CONNECT_TIMEOUT = 5

#: how long a schema read trusts its cached network version before asking the database again. Loads and
#: deletes through this store invalidate at once; a load by another process is seen within this time.
SCHEMA_RECHECK_SECONDS = 1.0

#: the network stats' entry of a load whose instance vectors are deferred: ``{"done": n, "total": n}`` instances
VECTORS_PENDING = "vectors_pending"

#: how much of a SQLite database file its connections memory-map (reads only: writes still go through the pager)
SQLITE_MMAP_BYTES = 1 << 30

#: a network's cached schema: (version, the network, its object types by id)
Schema = tuple[str, KnowledgeNetwork, dict[str, ObjectType]]


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


def make_engine(db_url: str) -> Engine:
    """A SQLAlchemy engine for ``db_url`` with the dialect specifics of the module docstring."""
    kwargs: dict[str, Any] = {
        "json_serializer": lambda obj: json.dumps(obj, ensure_ascii=False),
    }
    is_sqlite = db_url.startswith("sqlite")
    if is_sqlite and (db_url in ("sqlite://", "sqlite:///:memory:") or "mode=memory" in db_url):
        kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
    elif is_sqlite:
        path = db_url.split(":///", 1)[-1].split("?", 1)[0]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 60}
    elif db_url.startswith("postgresql"):
        kwargs["pool_pre_ping"] = True
        if "connect_timeout" not in make_url(db_url).query:
            kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT}
    engine = create_engine(db_url, **kwargs)
    if is_sqlite:

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record) -> None:  # noqa: ANN001
            dbapi_conn.create_function("regexp", 2, _regexp, deterministic=True)
            cur = dbapi_conn.cursor()
            if "memory" not in db_url and db_url not in ("sqlite://",):
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
                # reads through the OS page cache shared by every connection of every server process,
                # instead of each pooled connection filling its own 2 MiB page cache from copies
                cur.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
            cur.close()

    return engine


@contextmanager
def unmapped(engine: Engine) -> Iterator[Connection]:
    """A connection of ``engine`` that reads a SQLite file through the pager, not the memory map, until it goes
    back to the pool (elsewhere: a plain connection). For a load and an ANN build, which write and stream the
    file once: its mapped pages would only count in the process's memory (up to :data:`SQLITE_MMAP_BYTES`)."""
    with engine.connect() as conn:
        mapped = conn.dialect.name == "sqlite" and bool(conn.exec_driver_sql("PRAGMA mmap_size").scalar())
        if mapped:
            conn.exec_driver_sql("PRAGMA mmap_size=0")
        conn.commit()  # nothing written: the caller begins its own transaction
        try:
            yield conn
        finally:
            if mapped:
                conn.rollback()  # whatever the caller left open (its own block committed or rolled back)
                conn.exec_driver_sql(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
                conn.commit()


def driver_rows(conn: Connection, sql: str, params: Any) -> list[tuple]:
    """The rows of one statement (the driver's own SQL and parameter style) as plain tuples, run on ``conn``'s
    driver connection — the same connection and transaction — for a hot read: SQLAlchemy's execution costs ~0.1 ms
    a statement and its result rows ~1 µs a row (0.18 against 0.03 ms to read five instances by id)."""
    return conn.connection.driver_connection.execute(sql, params).fetchall()  # type: ignore[union-attr]


class StoreCore:
    """Engine, dialect and schema cache of a :class:`kgrag.network.store.NetworkStore` (module docstring)."""

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self.engine = make_engine(db_url)
        self.dialect = self.engine.dialect.name
        try:
            with self.engine.begin() as conn:
                t.create_schema(conn)
        except Exception:
            self.engine.dispose()  # a database that cannot be reached: no pool left behind
            raise
        #: guards every cache write of the store's parts (one lock: a part's cache follows this one's versions)
        self.lock = threading.RLock()
        self._schemas: dict[str, Schema] = {}
        self._checked: dict[str, float] = {}  # kn_id -> monotonic time its cached version was last confirmed

    def close(self) -> None:
        self.engine.dispose()

    def forget(self, kn_id: str) -> None:
        """Drop ``kn_id``'s cached schema (its next read asks the database)."""
        with self.lock:
            self._schemas.pop(kn_id, None)
            self._checked.pop(kn_id, None)

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

    def vectors_pending(self, kn_id: str) -> dict[str, int] | None:
        """``{"done": n, "total": n}`` (instances) while ``kn_id``'s instance vectors are deferred and not all
        made (:mod:`kgrag.network.store.fill`), else None."""
        found = self.network_stats(kn_id).get(VECTORS_PENDING)
        return dict(found) if isinstance(found, dict) else None

    def all_vectors_pending(self) -> dict[str, dict[str, int]]:
        """:meth:`vectors_pending` of every network whose instance vectors are pending, in one read."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.networks.c.kn_id, t.networks.c.stats).order_by(t.networks.c.kn_id)).all()
        return {r.kn_id: dict(r.stats[VECTORS_PENDING]) for r in rows
                if isinstance(r.stats, dict) and isinstance(r.stats.get(VECTORS_PENDING), dict)}

    def touched_since(self, kn_id: str, old_version: str, version: str) -> list[tuple[str, str]] | None:
        """The ``(object type, id)`` of every instance the one incremental change from ``old_version`` to
        ``version`` removed or rewrote (its record in the stats, :mod:`kgrag.network.store.changes`), or None when
        the stored version is not ``version`` or no such record leads there: a per-version cache of
        ``old_version`` can then be moved forward by re-reading only those instances' rows."""
        with self.engine.connect() as conn:
            row = conn.execute(select(t.networks.c.version, t.networks.c.stats)
                               .where(t.networks.c.kn_id == kn_id)).first()
        if row is None or row.version != version:
            return None
        change = (row.stats or {}).get("change") or {}
        if change.get("from") != old_version or change.get("instances") is None:
            return None
        return [(k[0], k[1]) for k in change["instances"]]

    def recorded_embedder(self, kn_id: str) -> str:
        """The ``model_name`` of the embedder ``kn_id``'s vectors were made with (``""``: none recorded)."""
        with self.engine.connect() as conn:
            return conn.execute(select(t.networks.c.embedder).where(t.networks.c.kn_id == kn_id)).scalar() or ""

    @staticmethod
    def _version(conn: Connection, kn_id: str) -> str:
        version = conn.execute(select(t.networks.c.version).where(t.networks.c.kn_id == kn_id)).scalar()
        if version is None:
            raise NetworkNotFound(kn_id)
        return version

    SCHEMA_RECHECK_SECONDS = SCHEMA_RECHECK_SECONDS

    def schema(self, kn_id: str) -> Schema:
        """``(version, network, object types by id)`` of ``kn_id``, cached per version (module docstring)."""
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
        with self.lock:
            self._schemas[kn_id] = entry
            self._checked[kn_id] = now
        return entry

    def network_version(self, kn_id: str) -> str:
        """The version (uuid of the last load) of ``kn_id``; raises :class:`NetworkNotFound`."""
        return self.schema(kn_id)[0]

    def get_network(self, kn_id: str) -> KnowledgeNetwork:
        """The network's schema. Shared with the store's cache: read it, do not modify it (``model_copy(deep=True)``
        first if you must)."""
        return self.schema(kn_id)[1]

    def object_type(self, kn_id: str, object_type_id: str) -> tuple[str, ObjectType]:
        """``(version, object type)``; ``ValueError`` for an unknown object type."""
        version, _, ots = self.schema(kn_id)
        ot = ots.get(object_type_id)
        if ot is None:
            raise ValueError(f"unknown object type {object_type_id!r} in network {kn_id!r}")
        return version, ot
