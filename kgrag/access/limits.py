"""Per-key request rate: a token bucket per key name (in the serving process), a minute's worth of requests deep.

    limiter = RateLimiter(); limiter.retry_after("agent-a", rate_per_minute=60)   # None: allowed; else seconds

A key that has used its bucket gets the seconds until the next request is allowed (the server answers 429 with
``Retry-After``). Each worker process keeps its own buckets: ``kgrag serve --workers N`` lets a key up to N times its
rate in all.
"""

from __future__ import annotations

import math
import threading
import time

__all__ = ["RateLimiter"]


class RateLimiter:
    def __init__(self, clock=time.monotonic) -> None:  # noqa: ANN001 - a monotonic clock (tests pass their own)
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # name -> (tokens, when counted)

    def retry_after(self, name: str, rate_per_minute: int) -> int | None:
        """Take one request from ``name``'s bucket: ``None`` when allowed (or ``rate_per_minute`` ≤ 0), else the
        whole seconds to wait."""
        if rate_per_minute <= 0:
            return None
        per_second = rate_per_minute / 60.0
        now = self._clock()
        with self._lock:
            tokens, then = self._buckets.get(name, (float(rate_per_minute), now))
            tokens = min(float(rate_per_minute), tokens + (now - then) * per_second)
            if tokens >= 1.0:
                self._buckets[name] = (tokens - 1.0, now)
                return None
            self._buckets[name] = (tokens, now)
            return max(1, math.ceil((1.0 - tokens) / per_second))
