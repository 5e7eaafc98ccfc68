"""A response cache for kn_search, keyed on the network's version.

kn_search is a pure function of (request, network contents, retrieval defaults, reranker): a network is replaced
as a whole by a load, which gives it a new version, so a response computed for version ``v`` stays right until the
network is reloaded. Agents repeat searches a lot (several turns, retries, several agents on one question), and a
repeated search then costs a dictionary lookup instead of a few dozen SQL statements.

The key is the request without ``session_id`` (which only passes through: each answer carries its own caller's);
the entry also remembers the version it was computed on, so a reload is never served stale. Bounded LRU,
thread-safe; ``size=0`` disables it; degraded answers (instance recall failed) are not kept. Only for services that expose ``network_version(kn_id)`` (the store does).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from kgrag.search.kn_models import MSG_INSTANCE_FAILED, KnSearchRequest, KnSearchResponse

__all__ = ["KnSearchCache"]


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
        returned response is a copy carrying ``request.session_id``."""
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
            self._entries[key] = (version, response.model_copy(deep=True))
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return response

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
