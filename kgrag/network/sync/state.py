"""Where each table-bound network's sync stands: the watermark per (network, source) and the runs since the last
full scan, in one small table of the network store's database (``kn_sync_state``, created on first use).

    state = SyncState(store.engine); state.read("school")   # -> Progress(watermarks={…}, runs_since_full_scan=2)
    state.record("school", {"instances:Course:courses": '"2026-11-27T02:30:00"'}, full_scan=False)

Rows: ``(kn_id, source)`` primary key, ``watermark`` (JSON text from
:func:`kgrag.network.loaders.table_source.watermark_text`, NULL when the source has no incremental column),
``runs`` and ``updated_at``. The row with source ``""`` is the network's own: ``runs`` counts the syncs since the
last full scan. :meth:`SyncState.record` writes every row of one sync in one transaction; it runs right after the
sync's change committed (see :mod:`kgrag.network.sync.table` for why that is safe).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sqlalchemy import Column, Engine, Float, Integer, MetaData, String, Table, Text, delete, insert, select

from kgrag.tables_once import create_once

__all__ = ["NETWORK_ROW", "Progress", "SyncState", "sync_state"]

metadata = MetaData()
sync_state = Table(
    "kn_sync_state",
    metadata,
    Column("kn_id", String(200), primary_key=True),
    Column("source", String(700), primary_key=True),
    Column("watermark", Text, nullable=True),
    Column("runs", Integer, nullable=False, default=0),
    Column("updated_at", Float, nullable=False),
)
#: the source name of a network's own row (runs since the last full scan)
NETWORK_ROW = ""



@dataclass
class Progress:
    """A network's recorded sync state: watermark text per source, syncs since the last full scan, and whether
    any sync was recorded at all."""

    watermarks: dict[str, str | None] = field(default_factory=dict)
    runs_since_full_scan: int = 0
    recorded: bool = False


class SyncState:
    """The ``kn_sync_state`` table of one database (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_once(engine, metadata)

    def read(self, kn_id: str) -> Progress:
        with self.engine.connect() as conn:
            rows = conn.execute(select(sync_state.c.source, sync_state.c.watermark, sync_state.c.runs)
                                .where(sync_state.c.kn_id == kn_id)).all()
        progress = Progress(recorded=bool(rows))
        for source, watermark, runs in rows:
            if source == NETWORK_ROW:
                progress.runs_since_full_scan = runs
            else:
                progress.watermarks[source] = watermark
        return progress

    def record(self, kn_id: str, watermarks: dict[str, str | None], full_scan: bool) -> None:
        """Store the watermarks of one finished sync (other sources' rows are kept) and count it: a full scan
        resets the network's run count to 0, an incremental sync adds one. One transaction."""
        now = time.time()
        with self.engine.begin() as conn:
            runs = conn.execute(select(sync_state.c.runs).where(sync_state.c.kn_id == kn_id,
                                                                sync_state.c.source == NETWORK_ROW)).scalar()
            runs = 0 if full_scan else (runs or 0) + 1
            keys = [NETWORK_ROW, *watermarks]
            conn.execute(delete(sync_state).where(sync_state.c.kn_id == kn_id, sync_state.c.source.in_(keys)))
            rows = [{"kn_id": kn_id, "source": NETWORK_ROW, "watermark": None, "runs": runs, "updated_at": now}]
            rows += [{"kn_id": kn_id, "source": source, "watermark": text, "runs": 0, "updated_at": now}
                     for source, text in watermarks.items()]
            conn.execute(insert(sync_state), rows)

    def forget(self, kn_id: str) -> None:
        """Drop every row of ``kn_id`` (its next sync is a first one: a full load)."""
        with self.engine.begin() as conn:
            conn.execute(delete(sync_state).where(sync_state.c.kn_id == kn_id))
