"""Per-session accounting of LLM calls and tokens.

One :class:`UsageLedger` per session (an agent run, a flow run, an evaluation). Bind it to a client with
``ChatClient(..., ledger=ledger)``; every ``chat()`` then records exactly one call::

    calls            chat() invocations (successful or not)
    failures         chat() invocations that raised
    retries          extra HTTP attempts made inside chat() (requests = calls + retries)
    invalid_outputs  replies rejected by chat_json (bad JSON or failed validation)
    *_tokens         token counts reported by the server for successful calls
    wall_time_s      time spent inside chat(), retries and backoff included

The ledger is thread-safe: clients may be shared by worker threads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Token counts of one completion (OpenAI ``usage`` object)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def from_openai(cls, usage: dict[str, Any] | None) -> Usage:
        """Read an OpenAI ``usage`` dict; missing fields count as 0, a missing total is the sum."""
        usage = usage or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        total = int(usage.get("total_tokens") or prompt + completion)
        return cls(prompt, completion, total)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass
class _Counters:
    calls: int = 0
    failures: int = 0
    retries: int = 0
    invalid_outputs: int = 0
    usage: Usage = field(default_factory=Usage)
    wall_time_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "failures": self.failures,
            "retries": self.retries,
            "requests": self.calls + self.retries,
            "invalid_outputs": self.invalid_outputs,
            **self.usage.as_dict(),
            "wall_time_s": round(self.wall_time_s, 6),
        }


class UsageLedger:
    """Thread-safe totals of LLM calls for one session, with a per-model breakdown."""

    def __init__(self, name: str = "session") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._total = _Counters()
        self._by_model: dict[str, _Counters] = {}

    def record_call(
        self,
        model: str,
        *,
        usage: Usage | None = None,
        retries: int = 0,
        wall_time_s: float = 0.0,
        failed: bool = False,
    ) -> None:
        """Record one finished ``chat()`` call (``failed=True`` when it raised)."""
        with self._lock:
            for counters in (self._total, self._model(model)):
                counters.calls += 1
                counters.failures += int(failed)
                counters.retries += retries
                counters.wall_time_s += wall_time_s
                if usage is not None:
                    counters.usage = counters.usage + usage

    def record_invalid_output(self, model: str) -> None:
        """Record a reply that ``chat_json`` rejected and asked again for."""
        with self._lock:
            self._total.invalid_outputs += 1
            self._model(model).invalid_outputs += 1

    def _model(self, model: str) -> _Counters:
        return self._by_model.setdefault(model, _Counters())

    @property
    def calls(self) -> int:
        return self._total.calls

    @property
    def failures(self) -> int:
        return self._total.failures

    @property
    def retries(self) -> int:
        return self._total.retries

    @property
    def usage(self) -> Usage:
        return self._total.usage

    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready copy of the totals and of each model's counters."""
        with self._lock:
            return {
                "name": self.name,
                **self._total.as_dict(),
                "by_model": {model: c.as_dict() for model, c in sorted(self._by_model.items())},
            }

    def reset(self) -> None:
        with self._lock:
            self._total = _Counters()
            self._by_model = {}

    def __repr__(self) -> str:
        t = self._total
        return f"UsageLedger({self.name!r}, calls={t.calls}, failures={t.failures}, tokens={t.usage.total_tokens})"
