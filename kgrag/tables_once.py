"""Small tables the stores create on first use, once per engine and process (the sync state, the API keys, the audit
log): ``CREATE … IF NOT EXISTS`` run the first time an engine is met, under a lock.

    create_once(engine, metadata)                            # every table of ``metadata``
    create_once(engine, metadata, after=lambda conn: ...)    # and more DDL in the same transaction (triggers)
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy import Connection, Engine, MetaData

__all__ = ["create_once"]

_created: set[tuple[int, int]] = set()
_lock = threading.Lock()


def create_once(engine: Engine, metadata: MetaData, after: Callable[[Connection], None] | None = None) -> None:
    key = (id(engine), id(metadata))
    if key in _created:
        return
    with _lock:
        if key in _created:
            return
        with engine.begin() as conn:
            metadata.create_all(conn, checkfirst=True)
            if after is not None:
                after(conn)
        _created.add(key)
