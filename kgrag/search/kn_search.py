"""``kn_search``: the single entry point of spec kn-search.md (pure logic, no HTTP).

    response = kn_search(KnSearchRequest(query="阿司匹林", kn_id="medical"), service)

Main flow (§3.1): merge config → concept recall → ``only_schema`` stops here → no object types: message
「未召回到相关概念，无法进行实例检索」 → semantic instance recall (+ property filter); no nodes: message
「未检索到符合条件的实例数据」; instance recall raising: concepts returned, nodes empty, the message says why.
An unknown ``kn_id`` raises :class:`kgrag.network.service.NetworkNotFound` (the route answers 404).
"""

from __future__ import annotations

import logging
from functools import lru_cache

from kgrag.network.service import OntologyService
from kgrag.rank.rerank import EmbeddingReranker, Reranker
from kgrag.search.concept import recall_concepts
from kgrag.search.config import (
    MSG_INSTANCE_FAILED,
    MSG_NO_CONCEPTS,
    MSG_NO_INSTANCES,
    KnSearchRequest,
    KnSearchResponse,
    RetrievalConfig,
    merge_retrieval_config,
)
from kgrag.search.instances import recall_instances

log = logging.getLogger(__name__)

__all__ = ["default_reranker", "kn_search"]

_DEFAULT = object()


@lru_cache(maxsize=1)
def default_reranker() -> Reranker:
    """The process-wide default relation reranker: :class:`EmbeddingReranker` on the configured embedder,
    or the OpenAI-compatible ``/rerank`` client when ``KGRAG_RERANK_BASE_URL`` is set."""
    from kgrag.search.rerank_client import rerank_client_from_env

    client = rerank_client_from_env()
    return client if client is not None else EmbeddingReranker()


def kn_search(
    request: KnSearchRequest,
    service: OntologyService,
    reranker: Reranker | None | object = _DEFAULT,
    base_config: RetrievalConfig | None = None,
) -> KnSearchResponse:
    """Run one kn_search. ``reranker`` defaults to :func:`default_reranker` (built only when
    ``enable_rerank`` is true); ``None`` means no reranker, i.e. current order as with
    ``enable_rerank=false``. ``base_config`` replaces the built-in defaults before the request's overrides.
    With ``include_context`` the response also carries ``contextual_knowledge``
    (:mod:`kgrag.search.contextual`)."""
    response = _kn_search(request, service, reranker, base_config)
    if request.include_context:
        from kgrag.search.contextual import attach_context

        attach_context(response, request, service)  # type: ignore[arg-type]
    return response


def _kn_search(
    request: KnSearchRequest,
    service: OntologyService,
    reranker: Reranker | None | object,
    base_config: RetrievalConfig | None,
) -> KnSearchResponse:
    config = merge_retrieval_config(request.retrieval_config, base_config)
    concept_cfg = config.concept_retrieval
    if request.enable_rerank and reranker is _DEFAULT:
        reranker = default_reranker()
    elif reranker is _DEFAULT:
        reranker = None
    concepts = recall_concepts(service, request.kn_id, request.query, concept_cfg, request.enable_rerank,
                               reranker)  # type: ignore[arg-type]
    response = KnSearchResponse(
        object_types=concepts.out_object_types,
        relation_types=concepts.out_relation_types,
        action_types=concepts.out_action_types,
        session_id=request.session_id,
    )
    if request.only_schema:
        return response
    if not concepts.object_types:
        response.message = MSG_NO_CONCEPTS
        return response
    try:
        nodes = recall_instances(service, request.kn_id, request.query, concepts.object_types,
                                 config.semantic_instance_retrieval, config.property_filter)
    except Exception as exc:  # noqa: BLE001 - rule 4: concepts are still returned
        log.warning("semantic instance recall failed for %s: %s: %s", request.kn_id, type(exc).__name__, exc)
        response.message = f"{MSG_INSTANCE_FAILED}{type(exc).__name__}: {exc}"
        return response
    response.nodes = nodes
    if not nodes:
        response.message = MSG_NO_INSTANCES
    return response
