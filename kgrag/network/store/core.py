"""The store's core: the database engine and the schema reads every other part of the store builds on.

Contract: :class:`StoreCore` opens the engine (SQLite gets a ``regexp`` function, WAL and a 60 s busy timeout;
an in-memory URL one shared connection; PostgreSQL — ``postgresql+psycopg://…``, psycopg 3 — a
``connect_timeout`` of :data:`CONNECT_TIMEOUT` seconds unless the URL sets one, and ``pool_pre_ping`` so a
restarted server costs no failed request once it is back), creates the tables, and reads a network's schema —
:meth:`StoreCore.get_network`, :meth:`StoreCore.network_version`, :meth:`StoreCore.list_networks`,
:meth:`StoreCore.network_stats`. Schemas are cached per network version: a read trusts the cached version for
``SCHEMA_RECHECK_SECONDS``, loads and deletes through this store invalidate it at once. An unknown ``kn_id``
raises :class:`NetworkNotFound`; an unknown object type ``ValueError``. The embedder is created on first need.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, select
from sqlalchemy.engine import Connection
from sqlalchemy.pool import StaticPool

from kgrag.errors import NetworkNotFound
from kgrag.network import tables as t
from kgrag.network.model import ActionType, KnowledgeNetwork, ObjectType, RelationType

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.rank.embedder_factory import TextEmbedder
    from kgrag.rank.sentence_embedder import Embedder

__all__ = ["CONNECT_TIMEOUT", "StoreCore"]

#: seconds a PostgreSQL connection attempt may take (a database that is down fails fast instead of hanging)
CONNECT_TIMEOUT = 5


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


#: how much of a SQLite database file its connections memory-map (reads only: writes still go through the pager)
SQLITE_MMAP_BYTES = 1 << 30


class StoreCore:
    """Engine, schema cache and embedder of a :class:`kgrag.network.store.NetworkStore`.

    ``embedder`` defaults to ``Embedder.from_settings()`` (created on first need: loading or a knn query).
    """

    def __init__(self, db_url: str, embedder: Embedder | None = None) -> None:
        self.db_url = db_url
        self._embedder = embedder
        self.engine = self._make_engine(db_url)
        self.dialect = self.engine.dialect.name
        try:
            with self.engine.begin() as conn:
                t.create_schema(conn)
        except Exception:
            self.engine.dispose()  # a database that cannot be reached: no pool left behind
            raise
        self._lock = threading.RLock()
        self._schemas: dict[str, tuple[str, KnowledgeNetwork, dict[str, ObjectType]]] = {}
        self._checked: dict[str, float] = {}  # kn_id -> monotonic time its cached version was last confirmed
        self._embedders: dict[str, tuple[str, TextEmbedder]] = {}  # kn_id -> (version, the model it was loaded with)

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
        elif db_url.startswith("postgresql"):
            from sqlalchemy.engine import make_url

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

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from kgrag.rank.sentence_embedder import Embedder

            self._embedder = Embedder.from_settings()
        return self._embedder

    def embedder_for(self, kn_id: str) -> TextEmbedder:
        """The embedder that made ``kn_id``'s vectors (its recorded ``embedder`` name), so queries land in the
        same space: the store's own embedder when the names agree or none was recorded, else
        :func:`kgrag.rank.embedder_factory.make_embedder` of the recorded name (e.g. ``fasttext:…`` domain vectors)."""
        version = self._schema(kn_id)[0]
        cached = self._embedders.get(kn_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        with self.engine.connect() as conn:
            name = conn.execute(select(t.networks.c.embedder).where(t.networks.c.kn_id == kn_id)).scalar() or ""
        from kgrag.config import get_settings

        own_name = self._embedder.model_name if self._embedder is not None else get_settings().embedder
        embedder: TextEmbedder
        if not name or name == own_name:
            embedder = self.embedder
        else:
            from kgrag.rank.embedder_factory import make_embedder

            embedder = make_embedder(name, get_settings().cache_dir)
        with self._lock:
            self._embedders[kn_id] = (version, embedder)
        return embedder

    def close(self) -> None:
        self.engine.dispose()

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
