"""The OpenAI-compatible /rerank client used as an optional relation reranker."""

from __future__ import annotations

import json

import httpx
import pytest

from kgrag.search.rerank_client import RerankClient, RerankError, rerank_client_from_env


def _client(handler):
    return RerankClient("http://rerank.test/v1/", model="bge-reranker", api_key="sk-secret",
                        transport=httpx.MockTransport(handler))


def test_rerank_client_orders_by_relevance_score():
    seen = {}

    def handler(request):
        seen["url"] = str(request.url)
        seen["auth"] = request.headers.get("authorization")
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, json={"results": [{"index": 1, "relevance_score": 0.9},
                                                     {"index": 0, "relevance_score": 0.1},
                                                     {"index": 2, "relevance_score": 0.9}]})

    pairs = _client(handler).rerank("q", ["a", "b", "c"])
    assert pairs == [(1, 0.9), (2, 0.9), (0, 0.1)]
    assert seen["url"] == "http://rerank.test/v1/rerank"
    assert seen["auth"] == "Bearer sk-secret"
    assert seen["body"] == {"model": "bge-reranker", "query": "q", "documents": ["a", "b", "c"], "top_n": 3}


@pytest.mark.parametrize("response", [
    httpx.Response(500, text="boom"),
    httpx.Response(200, json={"nope": []}),
    httpx.Response(200, json={"results": [{"index": 7, "relevance_score": 1.0}]}),
    httpx.Response(200, json={"results": [{"index": 0, "relevance_score": 1.0}]}),  # one of two scored
])
def test_rerank_client_errors_raise(response):
    with pytest.raises(RerankError) as err:
        _client(lambda request: response).rerank("q", ["a", "b"])
    assert "sk-secret" not in str(err.value)


def test_rerank_client_transport_error_raises():
    def handler(request):
        raise httpx.ConnectError("refused")

    with pytest.raises(RerankError):
        _client(handler).rerank("q", ["a"])


def test_rerank_client_from_env(monkeypatch):
    monkeypatch.delenv("KGRAG_RERANK_BASE_URL", raising=False)
    assert rerank_client_from_env() is None
    monkeypatch.setenv("KGRAG_RERANK_BASE_URL", "http://x/v1")
    monkeypatch.setenv("KGRAG_RERANK_MODEL", "m")
    client = rerank_client_from_env()
    assert client.url == "http://x/v1/rerank" and client.model == "m"
    assert "sk" not in repr(client)
