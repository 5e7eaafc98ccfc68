"""Small tables the stores create on first use, once per engine and process (the sync state, the API keys, the audit
log): ``CREATE … IF NOT EXISTS`` run the first time an engine is met, under a lock.

    create_once(engine, metadata)                            # every table of ``metadata``
    create_once(engine, metadata, after=lambda conn: ...)    # and more DDL in the same transaction (triggers)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

from sqlalchemy import Connection, Engine, MetaData

__all__ = ["create_once"]

#: the metadata whose tables each live engine has, both held weakly (an object's ``id`` is reused once it is gone:
#: a set of ids met a new engine of another database as one that had its tables — "no such table" at random)
_created: weakref.WeakKeyDictionary[Engine, weakref.WeakSet[MetaData]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def create_once(engine: Engine, metadata: MetaData, after: Callable[[Connection], None] | None = None) -> None:
    done = _created.get(engine)
    if done is not None and metadata in done:
        return
    with _lock:
        done = _created.setdefault(engine, weakref.WeakSet())
        if metadata in done:
            return
        with engine.begin() as conn:
            metadata.create_all(conn, checkfirst=True)
            if after is not None:
                after(conn)
        done.add(metadata)
