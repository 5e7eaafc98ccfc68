"""kn_search: concept + semantic instance recall over a knowledge network (spec kn-search.md)."""

from kgrag.search.config import (
    KnSearchActionType,
    KnSearchNode,
    KnSearchObjectType,
    KnSearchRelationType,
    KnSearchRequest,
    KnSearchResponse,
    RetrievalConfig,
    RetrievalConfigIn,
    merge_retrieval_config,
)
from kgrag.search.kn_search import default_reranker, kn_search

__all__ = [
    "KnSearchActionType",
    "KnSearchNode",
    "KnSearchObjectType",
    "KnSearchRelationType",
    "KnSearchRequest",
    "KnSearchResponse",
    "RetrievalConfig",
    "RetrievalConfigIn",
    "default_reranker",
    "kn_search",
    "merge_retrieval_config",
]
