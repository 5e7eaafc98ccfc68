"""The search entry points, ``kn_search`` and ``context_search``: the one module that runs the stages in order.

    response = kn_search(KnSearchRequest(query="阿司匹林", kn_id="medical"), store)
    response = context_search(KnSearchRequest(query="上气道梗阻有哪些症状", kn_id="medical"), store)
    response.contextual_knowledge.keyword_mappings[0].storage_forms  # 上气道梗阻 exact / 上、下气道梗阻 contains …

Stages, which never import each other: concept + semantic instance recall (:mod:`kgrag.search.recall`, on an
:class:`OntologyService`), then — with ``include_context``, or always in ``context_search`` — contextual recall
(:mod:`kgrag.search.contextual`, on a :class:`ContextStore`). Both run on the one store, a :class:`SearchStore`
(:class:`kgrag.network.store.NetworkStore` is one).
"""

from __future__ import annotations

from typing import Protocol

from kgrag.network.service import ContextStore, OntologyService
from kgrag.search.contextual import ContextSessions, attach_context
from kgrag.search.kn_models import KnSearchRequest, KnSearchResponse, RetrievalConfig
from kgrag.search.recall import DEFAULT_RERANKER, RerankerArg, recall_concepts_and_instances

__all__ = ["SearchStore", "context_search", "kn_search"]


class SearchStore(OntologyService, ContextStore, Protocol):
    """A store both stages run on."""


def kn_search(
    request: KnSearchRequest,
    service: SearchStore,
    reranker: RerankerArg = DEFAULT_RERANKER,
    base_config: RetrievalConfig | None = None,
) -> KnSearchResponse:
    """Run one kn_search. ``reranker`` defaults to :func:`kgrag.search.recall.default_reranker` (built only
    when ``enable_rerank`` is true); ``None`` means no reranker, i.e. current order as with
    ``enable_rerank=false``. ``base_config`` replaces the built-in defaults before the request's overrides.
    With ``include_context`` the response also carries ``contextual_knowledge``."""
    response = recall_concepts_and_instances(request, service, reranker, base_config)
    if request.include_context:
        attach_context(response, request, service)
    return response


def context_search(
    request: KnSearchRequest,
    store: SearchStore,
    sessions: ContextSessions | None = None,
    use_llm: bool = True,
    reranker: RerankerArg = DEFAULT_RERANKER,
    base_config: RetrievalConfig | None = None,
) -> KnSearchResponse:
    """kn_search (as requested) plus ``contextual_knowledge`` (the ``context_search`` route)."""
    response = recall_concepts_and_instances(request, store, reranker, base_config)
    return attach_context(response, request, store, sessions, use_llm)
