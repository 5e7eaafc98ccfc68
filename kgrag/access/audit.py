"""The append-only log of every change to a served graph (``kgrag_audit``, in the network store's database,
created on first use): who, when, what, the version before and after, and the counts.

    log = AuditLog(make_engine(settings.db_url))
    log.append("agent-a", "kn.changes", "kn", "library", "v1", "v2", {"instances_inserted": 3})
    log.entries(kind="kn", target="library", since=time.time() - 86400)   # newest first

Who: a key's name for an HTTP change, ``cli:<user>`` for a command (:func:`kgrag.access.keys.cli_actor`).
Actions: ``kn.changes`` (the HTTP change routes), ``kn.load``, ``kn.sync``, ``kn.remove``, ``kg.update``,
``kg.remove``, ``key.create``, ``key.revoke``. The table refuses ``UPDATE`` and ``DELETE`` (a trigger on SQLite and
on PostgreSQL): rows are only ever added. An entry is written right after its change commits; a process killed in
between leaves the change without its entry (never an entry without its change).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    insert,
    select,
    text,
)

from kgrag.tables_once import create_once

__all__ = ["AuditEntry", "AuditLog", "audit_log"]

metadata = MetaData()
audit_log = Table(
    "kgrag_audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False, index=True),
    Column("actor", String(200), nullable=False),
    Column("action", String(40), nullable=False),
    Column("kind", String(10), nullable=False),  # kn | kg | key
    Column("target", String(200), nullable=False, index=True),
    Column("version_before", String(200), nullable=True),
    Column("version_after", String(200), nullable=True),
    Column("counts", Text, nullable=False, default="{}"),
)

_SQLITE_GUARDS = [
    f"CREATE TRIGGER IF NOT EXISTS kgrag_audit_no_{op.lower()} BEFORE {op} ON kgrag_audit "
    "BEGIN SELECT RAISE(ABORT, 'kgrag_audit is append-only'); END"
    for op in ("UPDATE", "DELETE")
]
_PG_GUARD = """
CREATE OR REPLACE FUNCTION kgrag_audit_append_only() RETURNS trigger AS $$
BEGIN RAISE EXCEPTION 'kgrag_audit is append-only'; END; $$ LANGUAGE plpgsql;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'kgrag_audit_append_only') THEN
    CREATE TRIGGER kgrag_audit_append_only BEFORE UPDATE OR DELETE ON kgrag_audit
      FOR EACH ROW EXECUTE FUNCTION kgrag_audit_append_only();
  END IF;
END $$;
"""



def _guard(conn: Connection) -> None:
    """The triggers that make the table append-only."""
    if conn.dialect.name == "sqlite":
        for statement in _SQLITE_GUARDS:
            conn.exec_driver_sql(statement)
    elif conn.dialect.name == "postgresql":
        conn.execute(text(_PG_GUARD))


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: float
    actor: str
    action: str
    kind: str
    target: str
    version_before: str | None
    version_after: str | None
    counts: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class AuditLog:
    """The ``kgrag_audit`` table of one database (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_once(engine, metadata, after=_guard)

    def append(self, actor: str, action: str, kind: str, target: str, version_before: str | None = None,
               version_after: str | None = None, counts: dict[str, Any] | None = None,
               conn: Connection | None = None) -> None:
        """Append one entry; with ``conn``, inside that connection's transaction (the entry commits with the change
        it records, or neither does)."""
        row = insert(audit_log).values(
            at=time.time(), actor=actor[:200], action=action[:40], kind=kind[:10], target=target[:200],
            version_before=version_before, version_after=version_after,
            counts=json.dumps(counts or {}, ensure_ascii=False, default=str))
        if conn is not None:
            conn.execute(row)
            return
        with self.engine.begin() as own:
            own.execute(row)

    def entries(self, kind: str | None = None, target: str | None = None, since: float | None = None,
                limit: int = 200) -> list[AuditEntry]:
        """The newest ``limit`` entries (newest first), of ``kind`` / ``target`` / at or after ``since``."""
        query = select(audit_log).order_by(audit_log.c.id.desc()).limit(max(1, min(limit, 100_000)))
        if kind is not None:
            query = query.where(audit_log.c.kind == kind)
        if target is not None:
            query = query.where(audit_log.c.target == target)
        if since is not None:
            query = query.where(audit_log.c.at >= since)
        with self.engine.connect() as conn:
            return [AuditEntry(id=r.id, at=r.at, actor=r.actor, action=r.action, kind=r.kind, target=r.target,
                               version_before=r.version_before, version_after=r.version_after,
                               counts=json.loads(r.counts or "{}")) for r in conn.execute(query)]
