"""A response cache for kn_search, keyed on the network's version.

kn_search is a pure function of (request, network contents, retrieval defaults, reranker): a network is replaced
as a whole by a load, which gives it a new version, so a response computed for version ``v`` stays right until the
network is reloaded. Agents repeat searches a lot (several turns, retries, several agents on one question), and a
repeated search then costs a dictionary lookup instead of a few dozen SQL statements.

The key is the request without ``session_id`` (which only passes through: each answer carries its own caller's);
the entry also remembers the version it was computed on, so a reload is never served stale. Bounded LRU,
thread-safe; ``size=0`` disables it; degraded answers (instance recall failed) are not kept. Only for services that expose ``network_version(kn_id)`` (the store does).
Each call returns its own response object (carrying its caller's ``session_id``) whose nested values — nodes,
their properties — are the cached entry's own, shared and not copied (a deep copy cost ~0.5 ms of a 14 kB answer):
the callers serialise them and change nothing.

:class:`PerVersion` holds what one stage of recall reads once per network version (categorical values, primary
fields, a relation's usual shape): ``{(network, version, *key): value}``, emptied when full.

    names = PerVersion(16)
    names.get(store, "medical", ("names",), lambda: store.instance_names("medical"))   # read once per version
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from kgrag.network.service import ContextStore
from kgrag.search.kn_models import MSG_INSTANCE_FAILED, KnSearchRequest, KnSearchResponse

__all__ = ["KnSearchCache", "PerVersion"]

V = TypeVar("V")


class PerVersion(Generic[V]):
    """Values read once per network version, keyed ``(network, version, *key)``; more than ``kept`` entries
    empty it (an older version's entries go with the rest). Plain dict reads and writes: safe across threads,
    where two first readers of one key may both read it."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._entries: dict[tuple[Hashable, ...], V] = {}

    def get(self, store: ContextStore, kn_id: str, key: tuple[Hashable, ...], read: Callable[[], V]) -> V:
        """The value of ``key`` on the current version of ``kn_id``: ``read()`` on its first use there."""
        full = (kn_id, store.network_version(kn_id), *key)
        value = self._entries.get(full)
        if value is None:
            value = read()
            if len(self._entries) > self.kept:
                self._entries.clear()
            self._entries[full] = value
        return value


class KnSearchCache:
    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, tuple[str, KnSearchResponse]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(request: KnSearchRequest) -> str:
        return request.model_dump_json(exclude={"session_id"})

    def get_or_compute(
        self, request: KnSearchRequest, version: str, compute: Callable[[], KnSearchResponse]
    ) -> KnSearchResponse:
        """The cached response for ``request`` on network ``version``, or ``compute()`` (then cached). The
        returned response is a shallow copy carrying ``request.session_id`` (read-only: module docstring)."""
        if self.size <= 0:
            return compute()
        key = self.key(request)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == version:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[1].model_copy(update={"session_id": request.session_id})
            self.misses += 1
        response = compute()
        if response.message and response.message.startswith(MSG_INSTANCE_FAILED):
            return response  # a degraded answer (rule 4) is not worth keeping: the next call may succeed
        with self._lock:
            self._entries[key] = (version, response)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return response.model_copy()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
