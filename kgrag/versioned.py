"""One value per key that follows the key's version: what a serving process holds of a prepared KG (its store, its
triple graph, its trained reasoner) and reopens when ``kgrag kg update`` or a re-import commits a new version.

    cache = VersionedCache(lambda kg: version_token(dataset_dir(kg)), open_kg, close=lambda v: v.close())
    cache.get("mykg")   # one stat per call; opened once per version of "mykg"

Contract of :meth:`VersionedCache.get`:

- The key's version *token* (``token(key)``: a cheap callable, one ``stat``) is read on every call; when it equals
  the token the held value was loaded at, the held value is returned: one dict read, no lock.
- Otherwise the value is loaded (``load(key)``) under the key's own lock: concurrent callers of the same key wait
  for that one load and get its value; other keys are neither blocked nor locked (a slow load of one KG never holds
  up another). A load that raises caches nothing (the next call tries again) and leaves the held value as it was.
- A value is loaded at the token read just before its load; when the token changed by the end of the load (its
  parts were read apart and a version landed between them), the value is closed and loaded again, up to
  ``retries`` times; it is then held at the token read before its last load (so a version that landed during
  that one is loaded on the next call).
- A replaced value is kept open (a request holding it keeps working) until the value after it replaces it, then
  closed with ``close``: two versions held per key at most. Without ``close`` nothing is retained: a replaced
  value lives on as long as its callers hold it.
- ``keep_when_gone``: a token of None (the key's files are gone: a re-import swapping its folder, or a removed
  KG) keeps the held value instead of loading; off, a None token is compared like any other.

This module imports nothing from kgrag: every layer may use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["VersionedCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class VersionedCache(Generic[K, V]):
    """``{key: value}`` loaded once per version of each key; thread-safe (see the module docstring)."""

    def __init__(self, token: Callable[[K], Hashable | None], load: Callable[[K], V],
                 close: Callable[[V], object] | None = None, *, keep_when_gone: bool = False,
                 retries: int = 3) -> None:
        self._token = token
        self._load = load
        self._close = close
        self.keep_when_gone = keep_when_gone
        self.retries = retries
        self._held: dict[K, tuple[Hashable | None, V]] = {}  # key -> (token it was loaded at, value)
        self._retired: dict[K, V] = {}  # key -> the value its held one replaced (closed one version later)
        self._key_locks: dict[K, threading.Lock] = {}
        self._lock = threading.Lock()  # guards the swaps of _held / _retired and close()

    def get(self, key: K) -> V:
        """The value of ``key`` at its current version (loaded when the version changed or on first use)."""
        token = self._token(key)
        held = self._held.get(key)
        if held is not None and (held[0] == token or (token is None and self.keep_when_gone)):
            return held[1]
        return self._refresh(key)

    def _refresh(self, key: K) -> V:
        lock = self._key_locks.get(key)
        if lock is None:
            with self._lock:
                lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:  # one loader per key; the callers of the same key wait for it, other keys do not
            token = self._token(key)  # again: the caller before us may have loaded this very version
            held = self._held.get(key)
            if held is not None and (held[0] == token or (token is None and self.keep_when_gone)):
                return held[1]
            value = self._load(key)
            for _ in range(self.retries):
                now = self._token(key)
                if now == token or (now is None and self.keep_when_gone):
                    break
                self._discard(value)  # read while a version landed: never handed out
                token, value = now, self._load(key)
            with self._lock:
                self._held[key] = (token, value)
                retired = self._retired.pop(key, None)
                if held is not None and self._close is not None:
                    self._retired[key] = held[1]  # still answering the calls that got it
            self._discard(retired)
            return value

    def _discard(self, value: V | None) -> None:
        if value is not None and self._close is not None:
            self._close(value)

    def close(self) -> None:
        """Close every held and retired value and forget them (a later :meth:`get` loads again)."""
        with self._lock:
            values = [v for _, v in self._held.values()] + list(self._retired.values())
            self._held.clear()
            self._retired.clear()
        for value in values:
            self._discard(value)
