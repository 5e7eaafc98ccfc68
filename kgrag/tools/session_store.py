"""Server-side KG sessions for the HTTP surface: one :class:`KGSession` per session id, with an expiry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kgrag.tools.session import KGSession


@dataclass
class _Entry:
    session: KGSession
    kg: str
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)


class SessionConflict(ValueError):
    """The session id exists for another KG."""


class SessionStore:
    """Sessions by id; an entry unused for ``ttl`` seconds is dropped (checked on every access)."""

    def __init__(self, ttl: float = 1800.0, max_sessions: int = 10_000, clock: Callable[[], float] = time.monotonic):
        self.ttl = ttl
        self.max_sessions = max_sessions
        self.clock = clock
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if now - e.last_used > self.ttl]:
            del self._entries[key]

    def get_or_create(self, session_id: str, kg: str, factory: Callable[[], KGSession]) -> tuple[_Entry, bool]:
        """The live entry for ``session_id`` (created with ``factory`` when absent or expired)."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            entry = self._entries.get(session_id)
            if entry is not None:
                if entry.kg != kg:
                    raise SessionConflict(f"session {session_id!r} belongs to kg {entry.kg!r}, not {kg!r}")
                entry.last_used = now
                return entry, False
            if len(self._entries) >= self.max_sessions:
                oldest = min(self._entries, key=lambda k: self._entries[k].last_used)
                del self._entries[oldest]
        session = factory()  # may query the store: outside the global lock
        with self._lock:
            entry = self._entries.setdefault(session_id, _Entry(session, kg, self.clock()))
        return entry, True

    def get(self, session_id: str) -> _Entry | None:
        with self._lock:
            self._expire(self.clock())
            return self._entries.get(session_id)

    def drop(self, session_id: str) -> bool:
        with self._lock:
            return self._entries.pop(session_id, None) is not None

    def __len__(self) -> int:
        return len(self._entries)
