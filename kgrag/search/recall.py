"""Concept + semantic instance recall: kn_search's own stages (spec kn-search.md, the kn_search API
specification of concept and instance recall), on an :class:`OntologyService`.

The entry points (``kn_search`` with ``include_context``, ``context_search``) are in :mod:`kgrag.search.pipeline`;
this module knows nothing of contextual recall.

Main flow (§3.1): merge config → concept recall → ``only_schema`` stops here → no object types: message
「未召回到相关概念，无法进行实例检索」 → semantic instance recall (+ property filter); no nodes: message
「未检索到符合条件的实例数据」 (a network whose deferred vectors are still being made adds that its knn was not
used: ``MSG_VECTORS_PENDING``); instance recall raising: concepts returned, nodes empty, the message says why —
except a database that cannot be reached (SQLAlchemy ``OperationalError``/``InterfaceError``), which propagates
(the HTTP route answers 503).
An unknown ``kn_id`` raises :class:`kgrag.network.service.NetworkNotFound` (the route answers 404).
"""

from __future__ import annotations

import logging
from enum import Enum
from functools import lru_cache
from typing import Final, Literal

from sqlalchemy.exc import InterfaceError, OperationalError

from kgrag.network.service import OntologyService
from kgrag.rank.rerank import EmbeddingReranker, Reranker
from kgrag.search.concept import recall_concepts
from kgrag.search.instances import recall_instances
from kgrag.search.kn_models import (
    MSG_INSTANCE_FAILED,
    MSG_NO_CONCEPTS,
    MSG_NO_INSTANCES,
    MSG_VECTORS_PENDING,
    KnSearchRequest,
    KnSearchResponse,
    RetrievalConfig,
    merge_retrieval_config,
)
from kgrag.search.rerank_client import rerank_client_from_env

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_RERANKER", "RerankerArg", "default_reranker", "recall_concepts_and_instances"]


class _Default(Enum):
    RERANKER = "default"


#: "use :func:`default_reranker` when ``enable_rerank`` is true" (the default of every ``reranker`` argument)
DEFAULT_RERANKER: Final = _Default.RERANKER
RerankerArg = Reranker | None | Literal[_Default.RERANKER]


@lru_cache(maxsize=1)
def default_reranker() -> Reranker:
    """The process-wide default relation reranker: :class:`EmbeddingReranker` on the configured embedder,
    or the OpenAI-compatible ``/rerank`` client when ``KGRAG_RERANK_BASE_URL`` is set."""
    client = rerank_client_from_env()
    return client if client is not None else EmbeddingReranker()


def recall_concepts_and_instances(
    request: KnSearchRequest,
    service: OntologyService,
    reranker: RerankerArg = DEFAULT_RERANKER,
    base_config: RetrievalConfig | None = None,
) -> KnSearchResponse:
    """kn_search without ``include_context``. ``reranker`` defaults to :func:`default_reranker` (built only when
    ``enable_rerank`` is true); ``None`` means no reranker, i.e. current order as with ``enable_rerank=false``.
    ``base_config`` replaces the built-in defaults before the request's overrides."""
    config = merge_retrieval_config(request.retrieval_config, base_config)
    if reranker is DEFAULT_RERANKER:
        reranker = default_reranker() if request.enable_rerank else None
    concepts = recall_concepts(service, request.kn_id, request.query, config.concept_retrieval,
                               request.enable_rerank, reranker)
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
    except (OperationalError, InterfaceError):  # the database is unreachable: the route's 503, not a recall result
        raise
    except Exception as exc:  # noqa: BLE001 - rule 4: concepts are still returned
        log.warning("semantic instance recall failed for %s: %s: %s", request.kn_id, type(exc).__name__, exc)
        response.message = f"{MSG_INSTANCE_FAILED}{type(exc).__name__}: {exc}"
        return response
    response.nodes = nodes
    if not nodes:
        response.message = MSG_NO_INSTANCES
    pending = service.vectors_pending(request.kn_id)
    if pending is not None:  # the answer says what it did not use
        said = MSG_VECTORS_PENDING.format(done=pending.get("done", 0), total=pending.get("total", 0))
        response.message = f"{response.message}；{said}" if response.message else said
    return response
