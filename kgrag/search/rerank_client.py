"""An OpenAI-compatible ``/rerank`` client (vLLM, Jina, Cohere-style), usable as the relation reranker.

Request ``POST {base_url}/rerank`` with ``{"model", "query", "documents"}``; answer ``{"results": [{"index",
"relevance_score"}, ...]}`` (``score`` is accepted for ``relevance_score``). Any transport error, non-2xx
answer or malformed body raises :class:`RerankError`, which kn_search turns into the
``calculateRelevanceScore`` fallback. Configured by ``kgrag.config.Settings``: ``KGRAG_RERANK_BASE_URL``
(empty = not used), ``KGRAG_RERANK_MODEL``, ``KGRAG_RERANK_API_KEY``, ``KGRAG_RERANK_TIMEOUT`` (seconds, default 30).
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from kgrag.config import Settings
from kgrag.rank.bm25 import stable_top_k

__all__ = ["RerankClient", "RerankError", "rerank_client_from_env"]


class RerankError(RuntimeError):
    """The rerank endpoint failed or answered something unusable."""


class RerankClient:
    def __init__(self, base_url: str, model: str = "", api_key: str = "", timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = base_url.rstrip("/") + "/rerank"
        self.model = model
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._transport = transport

    def __repr__(self) -> str:  # never shows the key
        return f"RerankClient(url={self.url!r}, model={self.model!r})"

    def scores(self, query: str, docs: Sequence[str]) -> list[float]:
        docs = list(docs)
        if not docs:
            return []
        payload = {"model": self.model, "query": query, "documents": docs, "top_n": len(docs)}
        try:
            with httpx.Client(timeout=self.timeout, transport=self._transport) as client:
                response = client.post(self.url, json=payload, headers=self._headers)
        except httpx.HTTPError as exc:
            raise RerankError(f"rerank request to {self.url} failed: {type(exc).__name__}") from None
        if response.status_code >= 300:
            raise RerankError(f"rerank endpoint {self.url} answered HTTP {response.status_code}")
        try:
            results = response.json()["results"]
            scores: list[float | None] = [None] * len(docs)
            for item in results:
                index = int(item["index"])
                value = item.get("relevance_score", item.get("score"))
                if not 0 <= index < len(docs) or value is None:
                    raise ValueError(f"bad result {item!r}")
                scores[index] = float(value)
        except (ValueError, KeyError, TypeError) as exc:
            raise RerankError(f"rerank endpoint {self.url} returned a malformed answer: {exc}") from None
        if any(score is None for score in scores):
            raise RerankError(f"rerank endpoint {self.url} scored {sum(s is not None for s in scores)} of {len(docs)} documents")
        return [float(s) for s in scores]  # type: ignore[arg-type]

    def rerank(self, query: str, docs: Sequence[str], top_k: int | None = None) -> list[tuple[int, float]]:
        return stable_top_k(self.scores(query, docs), top_k)


def rerank_client_from_env() -> RerankClient | None:
    """The client configured by the ``KGRAG_RERANK_*`` settings, or None when no endpoint is set."""
    settings = Settings()  # read now: the environment may have changed since get_settings() was cached
    if not settings.rerank_base_url.strip():
        return None
    return RerankClient(
        base_url=settings.rerank_base_url.strip(),
        model=settings.rerank_model,
        api_key=settings.rerank_api_key,
        timeout=settings.rerank_timeout,
    )
